/**
 * TOTP primitives against RFC 6238 Appendix B and RFC 4648, and the replay / single-use rules of
 * src/oidc/mfa.ts on a real SQLite storage.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Sealer } from '../../src/keys/sealer.js';
import { checkTotp, enableTotp, useRecoveryCode, verifyUserTotp } from '../../src/users/mfa.js';
import {
  base32Decode, base32Encode, generateRecoveryCodes, generateTotpSecret, hashRecoveryCode, hotp, matchTotp, otpauthUri, totpAt, totpStep,
} from '../../src/users/totp.js';
import type { UserRecord } from '../../src/storage/types.js';
import { openTempStorage, type TempStorage } from '../helpers/storage.js';

// RFC 6238 Appendix B, SHA1 seed: the ASCII bytes of "12345678901234567890".
const RFC_KEY = Buffer.from('12345678901234567890', 'ascii');
const RFC_SECRET = base32Encode(RFC_KEY);
const VECTORS: [number, string][] = [
  [59, '94287082'],
  [1111111109, '07081804'],
  [1111111111, '14050471'],
  [1234567890, '89005924'],
  [2000000000, '69279037'],
  [20000000000, '65353130'],
];

describe('RFC 6238 test vectors (HMAC-SHA1)', () => {
  it.each(VECTORS)('T=%i gives %s with 8 digits', (t, code) => {
    expect(hotp(RFC_KEY, Math.floor(t / 30), 8)).toBe(code);
    expect(totpAt(RFC_SECRET, t * 1000, 8)).toBe(code);
  });

  it.each(VECTORS)('T=%i gives the last 6 digits of %s with 6 digits', (t, code) => {
    // Dynamic truncation mod 10^6 is the 8-digit value's last six digits.
    expect(totpAt(RFC_SECRET, t * 1000)).toBe(code.slice(2));
  });

  it('T=59 is 287082 for the 6-digit codes the service uses', () => {
    expect(totpAt(RFC_SECRET, 59_000)).toBe('287082');
  });
});

describe('matchTotp window', () => {
  const now = 1_700_000_015_000; // middle of a step
  const step = totpStep(now);
  const codeAt = (s: number) => hotp(RFC_KEY, s);

  it('accepts the current step and one step either side, and says which', () => {
    expect(matchTotp(RFC_SECRET, codeAt(step), now)).toBe(step);
    expect(matchTotp(RFC_SECRET, codeAt(step - 1), now)).toBe(step - 1);
    expect(matchTotp(RFC_SECRET, codeAt(step + 1), now)).toBe(step + 1);
  });

  it('refuses two steps away, wrong codes and malformed input', () => {
    expect(matchTotp(RFC_SECRET, codeAt(step - 2), now)).toBeUndefined();
    expect(matchTotp(RFC_SECRET, codeAt(step + 2), now)).toBeUndefined();
    const wrong = String((Number(codeAt(step)) + 1) % 1_000_000).padStart(6, '0');
    expect(matchTotp(RFC_SECRET, wrong, now)).toBeUndefined();
    for (const bad of ['', '12345', '1234567', 'abcdef', `${codeAt(step)}0`, '-12345']) expect(matchTotp(RFC_SECRET, bad, now)).toBeUndefined();
  });

  it('tolerates spaces the way people type codes', () => {
    const c = codeAt(step);
    expect(matchTotp(RFC_SECRET, `${c.slice(0, 3)} ${c.slice(3)}`, now)).toBe(step);
  });
});

describe('base32 (RFC 4648)', () => {
  it('encodes the RFC 4648 section 10 vectors (without padding)', () => {
    const vectors: [string, string][] = [['', ''], ['f', 'MY'], ['fo', 'MZXQ'], ['foo', 'MZXW6'], ['foob', 'MZXW6YQ'], ['fooba', 'MZXW6YTB'], ['foobar', 'MZXW6YTBOI']];
    for (const [plain, encoded] of vectors) {
      expect(base32Encode(Buffer.from(plain))).toBe(encoded);
      expect(base32Decode(encoded).toString()).toBe(plain);
    }
    expect(base32Decode('mzxw6ytboi======').toString()).toBe('foobar');
    expect(base32Decode('MZXW 6YTB OI').toString()).toBe('foobar');
  });

  it('round-trips random bytes of every length', () => {
    for (let n = 0; n <= 41; n++) {
      const bytes = randomBytes(n);
      expect(base32Decode(base32Encode(bytes)).equals(bytes)).toBe(true);
    }
  });

  it('refuses characters outside the alphabet', () => {
    expect(() => base32Decode('MZXW0')).toThrow();
    expect(() => base32Decode('MZXW1')).toThrow();
  });

  it('makes 160-bit secrets', () => {
    const secret = generateTotpSecret();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(base32Decode(secret)).toHaveLength(20);
    expect(generateTotpSecret()).not.toBe(secret);
  });
});

describe('otpauth URI and recovery codes', () => {
  it('builds the key URI apps import, labelled with the issuer host', () => {
    const uri = new URL(otpauthUri('JBSWY3DPEHPK3PXP', 'acme.example.com', 'ada@example.com'));
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.host).toBe('totp');
    expect(decodeURIComponent(uri.pathname)).toBe('/acme.example.com:ada@example.com');
    expect(Object.fromEntries(uri.searchParams)).toEqual({ secret: 'JBSWY3DPEHPK3PXP', issuer: 'acme.example.com', algorithm: 'SHA1', digits: '6', period: '30' });
  });

  it('makes ten distinct codes whose hash ignores case and separators', () => {
    const codes = generateRecoveryCodes();
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const c of codes) expect(c).toMatch(/^[a-z2-9]{5}-[a-z2-9]{5}$/);
    const c = codes[0]!;
    expect(hashRecoveryCode(c.toUpperCase().replace('-', ' '))).toBe(hashRecoveryCode(c));
    expect(hashRecoveryCode(codes[1]!)).not.toBe(hashRecoveryCode(c));
  });
});

describe('replay protection and single-use recovery codes (SQLite)', () => {
  const T = 'default';
  let temp: TempStorage;
  let deps: { storage: TempStorage['storage']; sealer: Sealer };

  beforeAll(() => {
    temp = openTempStorage();
    deps = { storage: temp.storage, sealer: new Sealer(Buffer.alloc(32, 3)) };
  });
  afterAll(() => temp?.close());

  async function newUser(id: string): Promise<UserRecord> {
    const at = new Date().toISOString();
    const user: UserRecord = {
      id, email: `${id}@example.com`, email_verified: true, username: null, given_name: null, family_name: null, name: null, nickname: null,
      role: 'user', account_enabled: true, locked: false, locked_until: null, auth_provider: 'local', password_hash: '$argon2id$fake',
      mfa_enabled: false, mfa_methods: [], mfa_secret_sealed: null, mfa_recovery_sealed: null, deleted_at: null, created_at: at, updated_at: at, last_login_at: null,
    };
    await temp.storage.users.create(T, user);
    return user;
  }

  it('accepts a step once, never an earlier one afterwards, and the next one', async () => {
    const secret = generateTotpSecret();
    const now = 1_700_000_015_000;
    const s = totpStep(now);
    const code = (step: number) => hotp(base32Decode(secret), step);
    expect(await checkTotp(deps, T, 'u-replay', secret, code(s), now)).toBe('ok');
    expect(await checkTotp(deps, T, 'u-replay', secret, code(s), now)).toBe('replayed');
    expect(await checkTotp(deps, T, 'u-replay', secret, code(s - 1), now)).toBe('replayed');
    expect(await checkTotp(deps, T, 'u-replay', secret, code(s + 1), now)).toBe('ok');
    expect(await checkTotp(deps, T, 'u-replay', secret, code(s + 1), now + 30_000)).toBe('replayed');
    expect(await checkTotp(deps, T, 'u-replay', secret, code(s + 2), now + 30_000)).toBe('ok');
    // Steps are per user.
    expect(await checkTotp(deps, T, 'u-other', secret, code(s), now)).toBe('ok');
  });

  it('stores the secret and recovery codes sealed, and each recovery code works once', async () => {
    const user = await newUser('u-enrolled');
    const secret = generateTotpSecret();
    const codes = await enableTotp(deps, T, user.id, secret);
    const stored = (await temp.storage.users.get(T, user.id))!;
    expect(stored.mfa_enabled).toBe(true);
    expect(stored.mfa_methods).toEqual(['totp']);
    expect(stored.mfa_secret_sealed).toMatch(/^v1\./);
    const raw = JSON.stringify(stored);
    expect(raw).not.toContain(secret);
    for (const c of codes) expect(raw).not.toContain(c);

    expect(await verifyUserTotp(deps, T, stored, totpAt(secret, Date.now()))).toBe('ok');
    expect(await useRecoveryCode(deps, T, stored, codes[3]!.toUpperCase())).toBe(9);
    const after = (await temp.storage.users.get(T, user.id))!;
    expect(await useRecoveryCode(deps, T, after, codes[3]!)).toBeUndefined();
    expect(await useRecoveryCode(deps, T, after, 'aaaaa-aaaaa')).toBeUndefined();
    // A stale copy of the record (a concurrent request) cannot use the same code again either.
    expect(await useRecoveryCode(deps, T, stored, codes[3]!)).toBeUndefined();
    expect(await useRecoveryCode(deps, T, after, codes[4]!)).toBe(8);
  });

  it('a sealed secret copied to another user does not open', async () => {
    const a = await newUser('u-a');
    const b = await newUser('u-b');
    await enableTotp(deps, T, a.id, generateTotpSecret());
    const sealed = (await temp.storage.users.get(T, a.id))!.mfa_secret_sealed;
    const forged = (await temp.storage.users.update(T, b.id, { mfa_enabled: true, mfa_methods: ['totp'], mfa_secret_sealed: sealed }))!;
    await expect(verifyUserTotp(deps, T, forged, '123456')).rejects.toThrow();
  });
});
