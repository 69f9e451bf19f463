#!/usr/bin/env node
/**
 * Known-answer and differential tests for native/argon2 (plain node script, not vitest):
 *
 *   node native/argon2/test-vectors.mjs            (SEED=<n> to replay a run, CASES=<n> for more)
 *
 * 1. BLAKE2b (src/blake2b.c) against RFC 7693 Appendix A ("abc", 64-byte digest), fixed
 *    vectors for other output lengths and block boundaries (computed with Python's
 *    hashlib.blake2b, an independent implementation), and Node's OpenSSL BLAKE2b-512 on
 *    random inputs.
 * 2. Argon2id against @node-rs/argon2 (hashRawSync, Argon2id, version 0x13). The RFC 9106
 *    section 5.3 vector uses a secret and associated data, which this API does not take, so
 *    the reference implementation is the one the addon replaces. Random passwords (0..100
 *    bytes, with zero bytes and multi-byte UTF-8), salts, costs and lanes, plus the
 *    production parameters m=19456 t=2 p=1 outLen=32. The default path is the best compression
 *    function of this CPU (AVX-512, AVX2 or scalar); every case also runs on each other SIMD
 *    path this CPU has (forced with hashRaw's mode argument, e.g. AVX2 on an AVX-512 machine),
 *    and a subset on the scalar path.
 *    Cases of different sizes run in sequence, so smaller hashes run over the stale blocks
 *    of bigger ones in the reused area, and release() is called in between.
 * 3. Argument validation (exceptions, never a crash) and loading in worker threads.
 *
 * Exits with status 1 on the first mismatch.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '..', '..', 'package.json'));
const ADDON = join(here, 'build', 'Release', 'argon2_reuse.node');
const native = require(ADDON);
const { hashRawSync } = require('@node-rs/argon2');

const ARGON2ID = 2; // @node-rs/argon2 Algorithm.Argon2id (a const enum, so spelled out)
const V0X13 = 1; // Version.V0x13

let failures = 0;
function check(ok, what) {
  if (!ok) {
    failures++;
    console.error(`FAIL: ${what}`);
    process.exitCode = 1;
  }
}

// Small seeded PRNG (xorshift64*) so that a failing run can be replayed with SEED=.
const seed = BigInt(process.env.SEED ?? Date.now());
let state = seed === 0n ? 0x9e3779b97f4a7c15n : seed & 0xffffffffffffffffn;
function nextU32() {
  state ^= state >> 12n;
  state ^= (state << 25n) & 0xffffffffffffffffn;
  state ^= state >> 27n;
  return Number(((state * 0x2545f4914f6cdd1dn) & 0xffffffffffffffffn) >> 32n);
}
const randInt = (lo, hi) => lo + (nextU32() % (hi - lo + 1)); // inclusive
const randBytes = (n) => Buffer.from(Array.from({ length: n }, () => nextU32() & 0xff));

// The SIMD paths this CPU and OS can run besides the default one: hashRaw refuses the others
// with ERR_ARGON2_SIMD_UNAVAILABLE.
const simdAvailable = ['avx512', 'avx2'].filter((mode) => {
  try {
    native.hashRaw(Buffer.alloc(0), Buffer.alloc(8), 1, 8, 1, 4, mode);
    return true;
  } catch (e) {
    if (e?.code !== 'ERR_ARGON2_SIMD_UNAVAILABLE') throw e;
    return false;
  }
});
const otherSimd = simdAvailable.filter((mode) => mode !== native.simd);
console.log(`native/argon2: simd=${native.simd} (available: ${[...simdAvailable, 'scalar'].join(', ')}), seed=${seed}`);

// ---------------------------------------------------------------------------------------
// 1. BLAKE2b
{
  const abc = native._blake2b(Buffer.from('abc'), 64).toString('hex');
  check(
    abc ===
      'ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1' +
        '7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923',
    `BLAKE2b-512("abc") (RFC 7693 Appendix A): ${abc}`,
  );

  // [input length, output length, digest]; input byte i = (7i + 3) mod 256.
  const fixed = [
    [0, 1, '2e'],
    [3, 20, '8f148bd4c242f537b55ee7b7ba68153d17c49871'],
    [127, 48, 'ca7599ca0015a47b6c4c67727402972f0a4f79224251b56c96f2b9b48231b309e54bd16c2ab54aea7e8e5d1a547e099d'],
    [128, 33, 'f568ee9cf9cf39dc6ea4ce5354b0eb12199d58d74642cf520f667d268fed6ee245'],
    [129, 64, '47889df9eb4d717afc5019df5c6a83df00a0b8677395e078cd5778ace0f338a618e68b7d9afb065d9e6a01ccd31d109447e7fae771c3ee3e105709194122ba2b'],
    [255, 16, 'b1bce9f0dc0bec101cd5e09b7961937c'],
    [256, 7, '6c304020b96e9c'],
    [1000, 63, '7bc6d409607ec3b05b8a40cbdef27efdc551a15e76371e7972ad6d13b15fa55872fac007f5e478de57123df4001a368d3bd7a2ae3d92a0341be36bfcef10a9'],
  ];
  for (const [n, outLen, want] of fixed) {
    const data = Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + 3) & 0xff));
    const got = native._blake2b(data, outLen).toString('hex');
    check(got === want, `BLAKE2b len=${n} outLen=${outLen}: ${got} != ${want}`);
  }
  check(
    native._blake2b(Buffer.alloc(0), 32).toString('hex') === '0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8',
    'BLAKE2b-256("")',
  );
  check(
    native._blake2b(Buffer.from('abc'), 32).toString('hex') === 'bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319',
    'BLAKE2b-256("abc")',
  );

  let n = 0;
  for (const len of [0, 1, 127, 128, 129, 255, 256, 257, 383, 384, 385, 1024, 1025]) {
    const data = randBytes(len);
    check(
      native._blake2b(data, 64).equals(createHash('blake2b512').update(data).digest()),
      `BLAKE2b-512 vs OpenSSL, ${len} bytes`,
    );
    n++;
  }
  for (let i = 0; i < 200; i++) {
    const data = randBytes(randInt(0, 2000));
    check(
      native._blake2b(data, 64).equals(createHash('blake2b512').update(data).digest()),
      `BLAKE2b-512 vs OpenSSL, ${data.length} random bytes`,
    );
    n++;
  }
  console.log(`BLAKE2b: RFC 7693 Appendix A + ${fixed.length + 2} fixed vectors + ${n} vs OpenSSL: ${failures ? 'FAILED' : 'ok'}`);
}

// ---------------------------------------------------------------------------------------
// 2. Argon2id vs @node-rs/argon2
function reference(password, salt, t, m, p, outLen) {
  return hashRawSync(password, { algorithm: ARGON2ID, version: V0X13, timeCost: t, memoryCost: m, parallelism: p, outputLen: outLen, salt });
}

function randomPassword() {
  switch (nextU32() % 5) {
    case 0: // arbitrary bytes, zero bytes included
      return randBytes(randInt(0, 100));
    case 1: {
      // bytes with many zeros
      const b = randBytes(randInt(1, 100));
      for (let i = 0; i < b.length; i += 2) b[i] = 0;
      return b;
    }
    case 2: {
      // multi-byte UTF-8: Latin-1, Greek, CJK, emoji, and a NUL character
      const parts = ['pässwörd', 'κωδικός', '密码', '🔑🦄', '\u0000', 'A', ' ', 'ß'];
      let s = '';
      while (Buffer.byteLength(s) < randInt(0, 90)) s += parts[nextU32() % parts.length];
      return Buffer.from(s, 'utf8');
    }
    case 3:
      return Buffer.alloc(0);
    default:
      return Buffer.from(`password-${nextU32()}`, 'utf8');
  }
}

const CASES = Number(process.env.CASES ?? 320);
let compared = 0;
let scalarCompared = 0;
const forcedCompared = Object.fromEntries(otherSimd.map((mode) => [mode, 0]));
const started = Date.now();

function runCase(label, password, salt, t, m, p, outLen, withScalar) {
  const want = reference(password, salt, t, m, p, outLen);
  const got = native.hashRaw(password, salt, t, m, p, outLen);
  compared++;
  const desc = `${label}: pwd=${password.toString('hex')} salt=${salt.toString('hex')} t=${t} m=${m} p=${p} outLen=${outLen}`;
  check(got.equals(want), `${desc}\n  ours ${got.toString('hex')}\n  ref  ${want.toString('hex')}`);
  for (const mode of otherSimd) {
    const forced = native.hashRaw(password, salt, t, m, p, outLen, mode);
    forcedCompared[mode]++;
    check(forced.equals(want), `${desc} (${mode})\n  ours ${forced.toString('hex')}\n  ref  ${want.toString('hex')}`);
  }
  if (withScalar) {
    // `true` is the original forceScalar flag; 'scalar' names the same path.
    const scalar = native.hashRaw(password, salt, t, m, p, outLen, scalarCompared % 2 ? 'scalar' : true);
    scalarCompared++;
    check(scalar.equals(want), `${desc} (scalar)\n  ours ${scalar.toString('hex')}\n  ref  ${want.toString('hex')}`);
  }
}

for (let i = 0; i < CASES; i++) {
  const p = randInt(1, 4);
  // Half of the memory costs small (lanes of a few blocks, where the reference-set edge
  // cases are), half anywhere up to 4096 KiB; not necessarily a multiple of 4p.
  const m = nextU32() % 2 ? randInt(8 * p, 64 * p) : randInt(8 * p, 4096);
  const t = randInt(1, 4);
  const outLen = randInt(16, 64);
  const salt = randBytes(randInt(8, 32));
  runCase(`case ${i}`, randomPassword(), salt, t, m, p, outLen, i % 4 === 0);
  if (i === Math.floor(CASES / 2)) native.release(); // the next call allocates a fresh area
}

// Outside the project's usual ranges: tags 4..1024 bytes (H' with r > 1), salts up to 64
// bytes, passwords up to 1024 bytes, 5..8 lanes.
for (let i = 0; i < 24; i++) {
  const outLen = [4, 5, 15, 65, 96, 97, 128, 129, 200, 512, 1000, 1024][i % 12];
  const p = i < 12 ? 1 : randInt(5, 8);
  const m = randInt(8 * p, 8 * p + 200);
  runCase(`extra ${i}`, randBytes(i % 3 === 0 ? 1024 : randInt(0, 300)), randBytes(randInt(8, 64)), randInt(1, 3), m, p, outLen, i % 3 === 0);
}

// Production parameters, with smaller hashes in between so that the reused area holds
// stale blocks of other sizes.
for (const [i, pwd] of ['correct horse battery staple', 'pässwörd ✓', '', '\u0000\u0000', '密码🔑'].entries()) {
  const password = Buffer.from(pwd, 'utf8');
  const salt = randBytes(16);
  runCase(`contract ${i}`, password, salt, 2, 19456, 1, 32, i < 2);
  runCase(`small after contract ${i}`, Buffer.from('x'), salt, 1, 64, 1, 32, false);
  runCase(`contract ${i} again`, password, salt, 2, 19456, 1, 32, false);
}
console.log(
  `Argon2id: ${compared} cases vs @node-rs/argon2 (${native.simd}), ` +
    otherSimd.map((mode) => `${forcedCompared[mode]} also on the ${mode} path, `).join('') +
    `${scalarCompared} also on the scalar path, ` +
    `${failures ? `${failures} FAILED` : 'all byte-identical'} (${((Date.now() - started) / 1000).toFixed(1)} s)`,
);

// ---------------------------------------------------------------------------------------
// 3. Argument validation: every bad call throws, with the right error class.
{
  const salt = randBytes(16);
  const pwd = Buffer.from('pw');
  const bad = [
    [TypeError, () => native.hashRaw('pw', salt, 2, 64, 1, 32)],
    [TypeError, () => native.hashRaw(pwd, 'salt', 2, 64, 1, 32)],
    [TypeError, () => native.hashRaw(pwd, new Uint16Array(8), 2, 64, 1, 32)],
    [TypeError, () => native.hashRaw(pwd, salt, '2', 64, 1, 32)],
    [TypeError, () => native.hashRaw(pwd, salt, 2, 64, 1)],
    [TypeError, () => native.hashRaw()],
    [TypeError, () => native.hashRaw(pwd, salt, 2, 64, 1, 32, 'yes')],
    [TypeError, () => native.hashRaw(pwd, salt, 2, 64, 1, 32, 'AVX2')],
    [TypeError, () => native.hashRaw(pwd, salt, 2, 64, 1, 32, 'avx512\u0000')],
    [TypeError, () => native.hashRaw(pwd, salt, 2, 64, 1, 32, 1)],
    [TypeError, () => native.hashRaw(pwd, salt, 2, 64, 1, 32, null)],
    [RangeError, () => native.hashRaw(pwd, salt, 0, 64, 1, 32)],
    [RangeError, () => native.hashRaw(pwd, salt, 1.5, 64, 1, 32)],
    [RangeError, () => native.hashRaw(pwd, salt, Number.NaN, 64, 1, 32)],
    [RangeError, () => native.hashRaw(pwd, salt, Number.POSITIVE_INFINITY, 64, 1, 32)],
    [RangeError, () => native.hashRaw(pwd, salt, 2 ** 32, 64, 1, 32)],
    [RangeError, () => native.hashRaw(pwd, salt, 2, 7, 1, 32)],
    [RangeError, () => native.hashRaw(pwd, salt, 2, -64, 1, 32)],
    [RangeError, () => native.hashRaw(pwd, salt, 2, 64, 0, 32)],
    [RangeError, () => native.hashRaw(pwd, salt, 2, 64, 9, 32)],
    [RangeError, () => native.hashRaw(pwd, salt, 2, 64, 2 ** 24, 32)],
    [RangeError, () => native.hashRaw(pwd, salt, 2, 64, 1, 0)],
    [RangeError, () => native.hashRaw(pwd, salt, 2, 64, 1, 3)],
    [RangeError, () => native.hashRaw(pwd, salt, 2, 64, 1, 1025)],
    [RangeError, () => native.hashRaw(pwd, Buffer.alloc(7), 2, 64, 1, 32)],
    [RangeError, () => native._blake2b(pwd, 65)],
  ];
  let ok = 0;
  // A SIMD path this CPU lacks: an Error with its own code, not a crash (SIGILL).
  const missing = ['avx512', 'avx2'].filter((m) => !simdAvailable.includes(m));
  for (const mode of missing) {
    try {
      native.hashRaw(pwd, salt, 2, 64, 1, 32, mode);
      check(false, `no exception for the missing ${mode} path`);
    } catch (e) {
      const good = e?.code === 'ERR_ARGON2_SIMD_UNAVAILABLE' && !(e instanceof TypeError);
      check(good, `missing ${mode} path: got ${e?.constructor?.name} ${e?.code}: ${e?.message}`);
      if (good) ok++;
    }
  }
  for (const [cls, call] of bad) {
    try {
      call();
      check(false, `no exception: ${call}`);
    } catch (e) {
      check(e instanceof cls, `${call}: expected ${cls.name}, got ${e?.constructor?.name}: ${e?.message}`);
      if (e instanceof cls) ok++;
    }
  }
  // A Uint8Array view into a bigger buffer hashes exactly its own bytes.
  const big = Buffer.from('xxpasswordxx');
  const view = new Uint8Array(big.buffer, big.byteOffset + 2, 8);
  check(native.hashRaw(view, salt, 1, 64, 1, 32).equals(reference(Buffer.from('password'), salt, 1, 64, 1, 32)), 'Uint8Array view');
  console.log(`validation: ${ok}/${bad.length + missing.length} bad calls threw the expected error class`);
}

// ---------------------------------------------------------------------------------------
// 4. Context-aware: loads and computes in several worker threads at once.
{
  const salt = randBytes(16);
  const want = reference(Buffer.from('worker'), salt, 2, 1024, 1, 32).toString('hex');
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const native = require(workerData.addon);
    const out = [];
    for (let i = 0; i < 3; i++) out.push(native.hashRaw(Buffer.from('worker'), Buffer.from(workerData.salt), 2, 1024, 1, 32).toString('hex'));
    native.release();
    parentPort.postMessage({ out, simd: native.simd });`;
  const results = await Promise.all(
    [0, 1, 2].map(
      () =>
        new Promise((resolve, reject) => {
          const w = new Worker(code, { eval: true, workerData: { addon: ADDON, salt } });
          w.once('message', resolve);
          w.once('error', reject);
        }),
    ),
  );
  const all = results.flatMap((r) => r.out);
  check(all.length === 9 && all.every((h) => h === want), 'worker threads');
  console.log(`worker threads: 3 workers x 3 hashes, ${all.every((h) => h === want) ? 'all identical to the reference' : 'MISMATCH'}`);
}

console.log(failures ? `FAILED (${failures})` : 'ALL OK');
