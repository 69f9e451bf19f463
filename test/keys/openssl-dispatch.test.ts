/**
 * The RSA routine advice (src/keys/openssl-dispatch.ts): given only on the CPU it was measured on
 * (AMD family 25 without AVX-512 IFMA), reported on the start-up line, and safe to follow: a
 * process started with the advised OPENSSL_ia32cap signs the very bytes the default routine signs.
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { AVX2_RSA_CAP, dispatchNote, masksOnly, opensslNote, opensslWarning, rsaDispatchAdvice } from '../../src/keys/openssl-dispatch.js';
import { startLine } from '../../src/start-line.js';

const FLAGS = 'fpu vme de pse tsc msr pae mce cx8 apic sep sse sse2 ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt aes xsave avx f16c rdrand bmi1 avx2 smep bmi2 erms invpcid rdseed adx smap clflushopt clwb sha_ni xsaveopt';
const cpu = (vendor: string, family: number, flags: string) =>
  ['processor\t: 0', `vendor_id\t: ${vendor}`, `cpu family\t: ${family}`, 'model\t\t: 1', 'model name\t: test', `flags\t\t: ${flags}`, ''].join('\n');
/** Two processors, as /proc/cpuinfo lists them: only the first is read. */
const twice = (text: string) => `${text}\n${text.replace('processor\t: 0', 'processor\t: 1')}`;

describe('rsaDispatchAdvice', () => {
  it('advises the AVX2 routine on AMD Zen 3 (family 25, AVX2 + BMI2 + ADX, no IFMA)', () => {
    expect(rsaDispatchAdvice(twice(cpu('AuthenticAMD', 25, `${FLAGS} vaes vpclmulqdq`)))).toBe(AVX2_RSA_CAP);
    expect(AVX2_RSA_CAP).toBe(':~0x80000');
  });

  it('gives no advice elsewhere: Zen 4 (IFMA), older AMD families, Intel, no ADX, no AVX2, unreadable', () => {
    expect(rsaDispatchAdvice(cpu('AuthenticAMD', 25, `${FLAGS} avx512f avx512ifma avx512vl`))).toBeUndefined();
    expect(rsaDispatchAdvice(cpu('AuthenticAMD', 23, FLAGS))).toBeUndefined();
    expect(rsaDispatchAdvice(cpu('GenuineIntel', 6, FLAGS))).toBeUndefined();
    expect(rsaDispatchAdvice(cpu('AuthenticAMD', 25, FLAGS.replace(' adx', '')))).toBeUndefined();
    expect(rsaDispatchAdvice(cpu('AuthenticAMD', 25, FLAGS.replace(' avx2', '')))).toBeUndefined();
    expect(rsaDispatchAdvice('')).toBeUndefined();
  });
});

describe('dispatchNote and the start-up line', () => {
  it('says what the process runs with, advises where it helps, and is silent otherwise', () => {
    expect(dispatchNote({ advice: AVX2_RSA_CAP, current: undefined })).toBe('default; on this CPU OPENSSL_ia32cap=:~0x80000 signs RSA ~14% faster (README, Tuning)');
    expect(dispatchNote({ advice: AVX2_RSA_CAP, current: AVX2_RSA_CAP })).toBe('OPENSSL_ia32cap=:~0x80000');
    expect(dispatchNote({ advice: undefined, current: ':~0x4' })).toBe('OPENSSL_ia32cap=:~0x4');
    expect(dispatchNote({ advice: undefined, current: undefined })).toBeUndefined();
    // This machine: whatever its CPU, a process started with the variable reports it.
    expect(opensslNote({ OPENSSL_ia32cap: AVX2_RSA_CAP })).toBe('OPENSSL_ia32cap=:~0x80000');
  });

  it('the start-up line carries the note only when there is one', () => {
    const cfg = loadConfig({ NODE_ENV: 'test' });
    const facts = { port: 3000, transport: 'native', storage: 'sqlite', redis: false, startupMs: 5, issuerOf: () => 'http://localhost:3000/oidc/v1' };
    expect(startLine(cfg, { ...facts, openssl: 'OPENSSL_ia32cap=:~0x80000' })).toMatchObject({ openssl_rsa: 'OPENSSL_ia32cap=:~0x80000' });
    expect(startLine(cfg, { ...facts, openssl: undefined })).not.toHaveProperty('openssl_rsa');
  });
});

describe('values that replace the CPU feature bits instead of masking them', () => {
  // OpenSSL 3.0 reads `[~]word0[:[~]word2]`: a word without `~` replaces the CPU's bits, and with no
  // `:~...` part the extended word (AVX2, ADX, AVX-512) is zeroed. Measured (docs/decisions.md):
  // '', '~0x0', ':' and '0x0:~0x0' made RSA-2048 signatures 2.2-2.6x slower; ':~0x0' did not.
  it('accepts only masks of both words', () => {
    for (const v of [AVX2_RSA_CAP, ':~0x0', '~0x0:~0x0', '~:~0x80000', '~0x200000000:~0x80000']) expect(masksOnly(v)).toBe(true);
    for (const v of ['', '~0x0', ':', '0x0:~0x0', '~0x0:0xffffffffffffffff', ':0x80000', '0x80000', ':~0x1:~0x2']) expect(masksOnly(v)).toBe(false);
  });

  it('warns about the replacing forms, and marks them on the start-up line', () => {
    expect(opensslWarning({})).toBeUndefined();
    expect(opensslWarning({ OPENSSL_ia32cap: AVX2_RSA_CAP })).toBeUndefined();
    expect(opensslWarning({ OPENSSL_ia32cap: '' })).toMatch(/^OPENSSL_ia32cap="" replaces the CPU's feature bits instead of masking them: .*unset it, or use the ':~<mask>' form/);
    expect(opensslWarning({ OPENSSL_ia32cap: '0x0:~0x0' })).toMatch(/^OPENSSL_ia32cap="0x0:~0x0" replaces/);
    expect(dispatchNote({ advice: undefined, current: '' })).toBe("OPENSSL_ia32cap= (replaces the CPU's feature bits: see the warning)");
    expect(dispatchNote({ advice: AVX2_RSA_CAP, current: '~0x0' })).toBe("OPENSSL_ia32cap=~0x0 (replaces the CPU's feature bits: see the warning)");
  });
});

describe('following the advice', () => {
  it('a process started with the advised OPENSSL_ia32cap produces the same RS256 signatures', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const input = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0';
    const script = `const c=require('node:crypto');process.stdout.write(c.sign('sha256',Buffer.from(process.env.INPUT),c.createPrivateKey(process.env.PEM)).toString('base64url'))`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], { env: { ...process.env, OPENSSL_ia32cap: AVX2_RSA_CAP, PEM: pem, INPUT: input } });
    // RSASSA-PKCS1-v1_5 is deterministic: another exponentiation routine must give the same bytes.
    const here = sign('sha256', Buffer.from(input), privateKey).toString('base64url');
    expect(stdout).toBe(here);
    expect(verify('sha256', Buffer.from(input), publicKey, Buffer.from(stdout, 'base64url'))).toBe(true);
  });
});
