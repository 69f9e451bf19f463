/** A client's registered jwks: public RSA (>= 2048 bits), EC or OKP keys only (src/clients/jwks-rules.ts). */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canVerifySignatures, jwksProblems } from '../../src/clients/jwks-rules.js';

const jwk = (type: 'rsa' | 'ec' | 'ed25519', opts: Record<string, unknown> = {}) => {
  const pair = generateKeyPairSync(type as 'rsa', { modulusLength: 2048, namedCurve: 'P-256', ...opts } as never);
  return { pub: pair.publicKey.export({ format: 'jwk' }) as Record<string, unknown>, priv: pair.privateKey.export({ format: 'jwk' }) as Record<string, unknown> };
};

describe('jwksProblems', () => {
  it('accepts public RSA-2048, EC P-256 and Ed25519 keys', () => {
    expect(jwksProblems({ keys: [jwk('rsa').pub, jwk('ec').pub, jwk('ed25519').pub] })).toEqual([]);
  });

  it('refuses private and symmetric keys, naming the members, and never echoes their values', () => {
    const rsa = jwk('rsa').priv;
    const problems = jwksProblems({ keys: [jwk('ec').pub, rsa, { kty: 'oct', k: 'c2VjcmV0c2VjcmV0' }] });
    expect(problems.map((p) => p.field)).toEqual(['jwks.keys.1', 'jwks.keys.2']);
    expect(problems[0]!.message).toMatch(/private or secret key material \(d, p, q, dp, dq, qi\)/);
    expect(problems[1]!.message).toMatch(/\(k\)/);
    expect(JSON.stringify(problems)).not.toContain(String(rsa.d));
  });

  it('refuses keys nothing could verify with: unknown kty, missing members, RSA under 2048 bits', () => {
    const small = jwk('rsa', { modulusLength: 1024 }).pub;
    const problems = jwksProblems({ keys: [{ kty: 'foo' }, { kty: 'EC', crv: 'P-256' }, { kty: 'RSA', n: 'AQAB', e: 'AQAB' }, small] });
    expect(problems.map((p) => [p.field, p.message])).toEqual([
      ['jwks.keys.0', 'kty must be RSA, EC or OKP (a public key)'],
      ['jwks.keys.1', 'is not a valid public key'],
      ['jwks.keys.2', 'RSA keys need at least 2048 bits'],
      ['jwks.keys.3', 'RSA keys need at least 2048 bits'],
    ]);
  });
  it('refuses an alg that does not fit the key type, an unknown use, an x5c that holds no certificate, and an oversized key', () => {
    const rsa = jwk('rsa').pub;
    const ec = jwk('ec').pub;
    const problems = jwksProblems({
      keys: [
        { ...rsa, alg: 'HS256' },
        { ...ec, alg: 'RS256' },
        { ...rsa, use: 'wrap' },
        { ...rsa, x5c: ['AAAA'] },
        { ...rsa, junk: 'x'.repeat(20_000) },
        { ...rsa, alg: 'PS256', use: 'sig' },
        { ...rsa, alg: 'RSA-OAEP', use: 'enc' },
        { ...ec, alg: 'ES256' },
      ],
    });
    expect(problems.map((p) => [p.field, p.message])).toEqual([
      ['jwks.keys.0', 'alg HS256 does not fit key type RSA'],
      ['jwks.keys.1', 'alg RS256 does not fit key type EC'],
      ['jwks.keys.2', 'use must be sig or enc'],
      ['jwks.keys.3', 'x5c must be a list of base64 DER certificates'],
      ['jwks.keys.4', 'is larger than 16384 characters'],
    ]);
  });

  it('tells keys that can verify a client assertion from keys for encryption only', () => {
    const rsa = jwk('rsa').pub;
    expect([{ ...rsa }, { ...rsa, use: 'sig', alg: 'RS256' }, { ...rsa, use: 'enc' }, { ...rsa, alg: 'RSA-OAEP' }].map(canVerifySignatures)).toEqual([true, true, false, false]);
  });
});
