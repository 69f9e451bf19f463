/**
 * The project's own Argon2id (native/argon2 through workers/argon2-native.ts) against the
 * implementation it replaced, @node-rs/argon2: the same tags for the same inputs, PHC strings that
 * each side verifies for the other, and the fallback for every stored hash the native path leaves
 * alone. `npm ci` builds the addon; the first test fails when it is missing, so nothing here passes
 * on the fallback alone.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type Algorithm, hashRawSync, hashSync, type Version, verifySync } from '@node-rs/argon2';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { hash, verify } from '../../workers/argon2.js';
import { loadNativeArgon2, nativeArgon2, type NativeArgon2, type NativeArgon2Mode, type NativeArgon2Simd } from '../../workers/argon2-native.js';
import { parseArgon2id } from '../../workers/argon2-phc.js';

// @node-rs/argon2's enums are `declare const enum`s, which vitest's transpiler cannot inline.
const ARGON2I = 1 as Algorithm;
const ARGON2ID = 2 as Algorithm;
const V0X10 = 0 as Version;
const V0X13 = 1 as Version;

const CONTRACT = { memory_cost: 19456, time_cost: 2, parallelism: 1 };
const SMALL = { memory_cost: 256, time_cost: 2, parallelism: 1 };

function loaded(): NativeArgon2 {
  const native = loadNativeArgon2();
  if (!native) throw new Error('native/argon2 is not built: run `npm run build:native`');
  return native;
}

// The CPU's instruction sets as Linux reports them. Linux lists avx512f / avx512vl only when it
// also saves the ZMM registers on a context switch, i.e. when the OS supports them too, which
// is what the addon checks itself (CPUID and XGETBV).
const CPU_FLAGS = new Set(/^flags\s*:(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim().split(/\s+/));
const AVX2 = CPU_FLAGS.has('avx2');
const AVX512 = AVX2 && CPU_FLAGS.has('avx512f') && CPU_FLAGS.has('avx512vl');
const BEST: NativeArgon2Simd = AVX512 ? 'avx512' : AVX2 ? 'avx2' : 'scalar';

function reference(password: Buffer | string, salt: Buffer, t: number, m: number, p: number, outputLen: number): Buffer {
  return hashRawSync(password, { algorithm: ARGON2ID, version: V0X13, timeCost: t, memoryCost: m, parallelism: p, outputLen, salt });
}

afterEach(() => vi.restoreAllMocks());

describe('native Argon2id', () => {
  it('is built and loads, and is the implementation in use with the best SIMD path of this CPU', () => {
    expect(loaded().simd).toBe(BEST);
    expect(nativeArgon2()).toBe(AVX2 ? loaded() : undefined);
  });

  it(`computes the same tags as @node-rs/argon2 over random inputs, lanes and costs (default path: ${BEST})`, () => {
    const native = loaded();
    for (let i = 0; i < 60; i++) {
      const password = randomBytes(i % 7 === 0 ? 0 : 1 + (i * 13) % 90);
      const salt = randomBytes(8 + (i % 25));
      const t = 1 + (i % 4);
      const p = 1 + (i % 3);
      const m = 8 * p + ((i * 37) % 600);
      const outLen = 16 + (i % 49);
      expect(native.hashRaw(password, salt, t, m, p, outLen).toString('hex'), `case ${i}: t=${t} m=${m} p=${p}`).toBe(
        reference(password, salt, t, m, p, outLen).toString('hex'),
      );
    }
  });

  // Each compression function on its own, forced through hashRaw's last argument: random
  // passwords, salts, tag lengths, passes and lanes (1-6), memory sizes that are odd and not a
  // multiple of 4p (m' = 4p * floor(m / 4p) then differs from m), from the 8p minimum up.
  const paths: Array<[string, NativeArgon2Mode, boolean]> = [
    ['AVX-512', 'avx512', AVX512],
    ['AVX2', 'avx2', AVX2],
    ['portable', 'scalar', true],
  ];
  for (const [name, mode, available] of paths) {
    // Run on every CPU: where this one lacks the path, forcing it must be a clear error, not a crash.
    it(`computes the same tags with its ${name} compression function (mode ${JSON.stringify(mode)}), or refuses it clearly where the CPU lacks it`, () => {
      const native = loaded();
      if (!available) {
        expect(() => native.hashRaw(Buffer.from('pw'), randomBytes(16), 1, 64, 1, 32, mode)).toThrow(
          expect.objectContaining({ code: 'ERR_ARGON2_SIMD_UNAVAILABLE', message: expect.stringContaining(`'${mode}'`) }),
        );
        return;
      }
      const cases: Array<[t: number, m: number, p: number]> = [
        [1, 8, 1],
        [2, 25, 3], // m' = 24
        [3, 1001, 2], // m' = 1000
        [1, 333, 5], // m' = 320
        [2, 4099, 4], // m' = 4096
        [1, 127, 6], // m' = 120
      ];
      for (let i = 0; i < 18; i++) {
        const p = 1 + (i % 4);
        cases.push([1 + (i % 3), 8 * p + 1 + 2 * ((i * 97) % 700), p]);
      }
      for (const [i, [t, m, p]] of cases.entries()) {
        const password = randomBytes(i % 5 === 0 ? 0 : 1 + (i * 11) % 70);
        const salt = randomBytes(8 + (i % 17));
        const outLen = 4 + ((i * 29) % 80);
        expect(native.hashRaw(password, salt, t, m, p, outLen, mode).toString('hex'), `case ${i}: t=${t} m=${m} p=${p} outLen=${outLen}`).toBe(
          reference(password, salt, t, m, p, outLen).toString('hex'),
        );
      }
    });
  }

  it('keeps `true` as the portable path and `false` as the default, and refuses unknown modes', () => {
    const native = loaded();
    const salt = randomBytes(16);
    const expected = reference('mode', salt, 2, 72, 2, 32).toString('hex');
    for (const mode of [true, false, undefined] as const) {
      expect(native.hashRaw(Buffer.from('mode'), salt, 2, 72, 2, 32, mode).toString('hex'), String(mode)).toBe(expected);
    }
    for (const mode of ['AVX2', 'sse', 'auto', '', 'scalar\u0000', 1, null, {}]) {
      expect(() => native.hashRaw(Buffer.from('mode'), salt, 2, 72, 2, 32, mode as NativeArgon2Mode), JSON.stringify(mode)).toThrow(TypeError);
    }
  });

  it('matches @node-rs/argon2 at the contract parameters, call after call on the reused area', () => {
    const native = loaded();
    for (const password of ['correct horse battery staple', 'pässwörd ✓', '']) {
      const salt = randomBytes(16);
      const expected = reference(password, salt, 2, 19456, 1, 32).toString('hex');
      expect(native.hashRaw(Buffer.from(password), salt, 2, 19456, 1, 32).toString('hex')).toBe(expected);
      // a smaller hash in between leaves stale blocks behind: the next one must not read them
      native.hashRaw(Buffer.from('x'), salt, 1, 64, 1, 32);
      expect(native.hashRaw(Buffer.from(password), salt, 2, 19456, 1, 32).toString('hex')).toBe(expected);
    }
    native.release();
    native.release();
    const salt = randomBytes(16);
    expect(native.hashRaw(Buffer.from('after release'), salt, 2, 512, 1, 32).toString('hex')).toBe(
      reference('after release', salt, 2, 512, 1, 32).toString('hex'),
    );
  });

  it('refuses bad arguments with an exception, never a crash', () => {
    const native = loaded();
    const salt = randomBytes(16);
    const pwd = Buffer.from('pw');
    const bad: Array<() => unknown> = [
      () => (native.hashRaw as unknown as (...a: unknown[]) => Buffer)('pw', salt, 2, 64, 1, 32),
      () => (native.hashRaw as unknown as (...a: unknown[]) => Buffer)(pwd, 'salt', 2, 64, 1, 32),
      () => native.hashRaw(pwd, salt, 0, 64, 1, 32),
      () => native.hashRaw(pwd, salt, 2, 7, 1, 32),
      () => native.hashRaw(pwd, salt, 2, 64, 0, 32),
      () => native.hashRaw(pwd, salt, 2, 64, 9, 32),
      () => native.hashRaw(pwd, salt, 2, 64, 1, 0),
      () => native.hashRaw(pwd, Buffer.alloc(4), 2, 64, 1, 32),
      () => native.hashRaw(pwd, salt, Number.NaN, 64, 1, 32),
      () => native.hashRaw(pwd, salt, 2, -64, 1, 32),
    ];
    for (const call of bad) expect(call).toThrow();
  });
});

describe('the Argon2 task functions (workers/argon2.ts)', () => {
  it('write hashes that @node-rs/argon2 verifies, in its own PHC shape', () => {
    const phc = hash({ password: 'correct horse battery staple', params: CONTRACT });
    expect(phc).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
    expect(verifySync(phc, 'correct horse battery staple')).toBe(true);
    expect(verifySync(phc, 'correct horse battery stapler')).toBe(false);
  });

  it('verify hashes that @node-rs/argon2 wrote, through the native path', () => {
    const spy = vi.spyOn(loaded(), 'hashRaw');
    const phc = hashSync('s3cret', { algorithm: ARGON2ID, memoryCost: CONTRACT.memory_cost, timeCost: 2, parallelism: 1 });
    expect(verify({ hash: phc, password: 's3cret' })).toBe(true);
    expect(verify({ hash: phc, password: 's3creT' })).toBe(false);
    expect(verify({ hash: phc, password: '' })).toBe(false);
    expect(spy).toHaveBeenCalledTimes(AVX2 ? 3 : 0);
  });

  it('verify a 16-byte tag and a long salt', () => {
    const salt = randomBytes(48);
    const phc = hashSync('short tag', { algorithm: ARGON2ID, memoryCost: 64, timeCost: 3, parallelism: 2, outputLen: 16, salt });
    expect(parseArgon2id(phc)).toMatchObject({ memoryKiB: 64, passes: 3, lanes: 2 });
    expect(verify({ hash: phc, password: 'short tag' })).toBe(true);
    expect(verify({ hash: phc, password: 'short taG' })).toBe(false);
  });

  it('leave other variants, versions and unusual parameters to @node-rs/argon2', () => {
    const spy = vi.spyOn(loaded(), 'hashRaw');
    const argon2i = hashSync('pw', { algorithm: ARGON2I, memoryCost: 64, timeCost: 2, parallelism: 1 });
    const v10 = hashSync('pw', { algorithm: ARGON2ID, version: V0X10, memoryCost: 64, timeCost: 2, parallelism: 1 });
    const manyPasses = hashSync('pw', { algorithm: ARGON2ID, memoryCost: 64, timeCost: 17, parallelism: 1 });
    for (const phc of [argon2i, v10, manyPasses]) {
      expect(parseArgon2id(phc), phc).toBeUndefined();
      expect(verify({ hash: phc, password: 'pw' }), phc).toBe(true);
      expect(verify({ hash: phc, password: 'pW' }), phc).toBe(false);
    }
    expect(spy).not.toHaveBeenCalled();
    const many = hash({ password: 'pw', params: { memory_cost: 64, time_cost: 17, parallelism: 1 } });
    expect(many).toMatch(/^\$argon2id\$v=19\$m=64,t=17,p=1\$/);
    expect(spy).not.toHaveBeenCalled();
  });

  it('treat malformed and tampered stored hashes as a wrong password', () => {
    const phc = hash({ password: 'pw', params: SMALL });
    const [, , , params, salt, tag] = phc.split('$') as [string, string, string, string, string, string];
    const tampered = [
      'not-a-phc-string',
      '',
      `$argon2id$v=19$${params}$${salt}$`,
      `$argon2id$v=19$${params}$$${tag}`,
      `$argon2id$v=19$${params}$${salt}$${tag}=`,
      `$argon2id$v=19$${params}$${salt}$${tag.slice(0, -1)}B`,
      `$argon2id$v=19$${params}$${salt}$${tag.slice(0, 20)}`,
      `$argon2id$v=19$m=0,t=2,p=1$${salt}$${tag}`,
      `$argon2id$v=19$m=99999999999,t=2,p=1$${salt}$${tag}`,
      `$argon2id$v=19$${params}$${salt}$${tag}$`,
      `$argon2id$v=19$${params}$${salt}<script>$${tag}`,
    ];
    for (const bad of tampered) expect(verify({ hash: bad, password: 'pw' }), bad).toBe(false);
    expect(verify({ hash: phc, password: 'pw' })).toBe(true);
  });
});
