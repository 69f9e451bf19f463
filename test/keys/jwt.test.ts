import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import type { SigningAlg } from '../../src/config/schema.js';
import { JwtError, decodeJwt, signJwt, verifyJwt, type VerifyKey } from '../../src/keys/jwt.js';

function keyPair(alg: SigningAlg): { privateKey: KeyObject; publicKey: KeyObject } {
  if (alg === 'RS256') return generateKeyPairSync('rsa', { modulusLength: 2048 });
  if (alg === 'ES256') return generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return generateKeyPairSync('ed25519');
}

const now = () => Math.floor(Date.now() / 1000);
const claims = () => ({ iss: 'https://issuer.test', sub: 'client-1', aud: 'urn:svc:api:v1', iat: now(), exp: now() + 60 });

function tamperPayload(token: string, change: Record<string, unknown>): string {
  const [h, p, s] = token.split('.') as [string, string, string];
  const payload = { ...JSON.parse(Buffer.from(p, 'base64url').toString()), ...change };
  return `${h}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${s}`;
}

function expectJwtError(fn: () => unknown, message: RegExp): void {
  expect(fn).toThrow(JwtError);
  expect(fn).toThrow(message);
}

describe.each(['RS256', 'ES256', 'EdDSA'] as const)('%s', (alg) => {
  const pair = keyPair(alg);
  const other = keyPair(alg);
  const signing = { kid: `kid-${alg}`, alg, privateKey: pair.privateKey };
  const verifyKey: VerifyKey = { alg, publicKey: pair.publicKey };
  const find = (kid: string | undefined) => (kid === signing.kid ? verifyKey : undefined);

  it('signs a compact JWS that it and jose verify', async () => {
    const c = claims();
    const token = await signJwt(c, signing, 'at+jwt');
    const decoded = verifyJwt(token, find);
    expect(decoded.header).toEqual({ alg, typ: 'at+jwt', kid: signing.kid });
    expect(decoded.payload).toEqual(c);

    const viaJose = await jwtVerify(token, pair.publicKey, { issuer: c.iss, audience: 'urn:svc:api:v1', typ: 'at+jwt', algorithms: [alg] });
    expect(viaJose.payload.sub).toBe('client-1');
    expect(viaJose.protectedHeader.kid).toBe(signing.kid);
  });

  it('verifies tokens signed by jose', async () => {
    const token = await new SignJWT(claims()).setProtectedHeader({ alg, kid: signing.kid, typ: 'JWT' }).sign(pair.privateKey);
    expect(verifyJwt(token, find).payload.sub).toBe('client-1');
  });

  it('refuses an expired token and one without exp', async () => {
    const expired = await signJwt({ ...claims(), exp: now() - 1 }, signing);
    expectJwtError(() => verifyJwt(expired, find), /expired/);
    const noExp = await signJwt({ sub: 'x' }, signing);
    expectJwtError(() => verifyJwt(noExp, find), /expired/);
  });
  it('refuses a token that is not yet valid, and accepts one at the expiry edge only before it', async () => {
    const t = await signJwt({ ...claims(), nbf: now() + 600 }, signing);
    expectJwtError(() => verifyJwt(t, find), /not yet valid/);
    const edge = await signJwt({ ...claims(), exp: 1000 }, signing);
    expect(verifyJwt(edge, find, 999).payload.exp).toBe(1000);
    expectJwtError(() => verifyJwt(edge, find, 1000), /expired/);
  });

  it('refuses a signature by another key under the same kid', async () => {
    const forged = await signJwt(claims(), { ...signing, privateKey: other.privateKey });
    expectJwtError(() => verifyJwt(forged, find), /bad signature/);
  });

  it('refuses an unknown kid', async () => {
    const t = await signJwt(claims(), { ...signing, kid: 'someone-else' });
    expectJwtError(() => verifyJwt(t, find), /unknown signing key/);
  });

  it('refuses a tampered payload or signature', async () => {
    const t = await signJwt(claims(), signing);
    expectJwtError(() => verifyJwt(tamperPayload(t, { sub: 'admin' }), find), /bad signature/);
    const [h, p, s] = t.split('.') as [string, string, string];
    const sig = Buffer.from(s, 'base64url');
    sig[5] = sig[5]! ^ 0xff;
    expectJwtError(() => verifyJwt(`${h}.${p}.${sig.toString('base64url')}`, find), /bad signature/);
  });

  it('refuses a header naming another algorithm than the key has', async () => {
    const t = await signJwt(claims(), signing);
    const [, p, s] = t.split('.') as [string, string, string];
    const otherAlg = alg === 'RS256' ? 'ES256' : 'RS256';
    const h = Buffer.from(JSON.stringify({ alg: otherAlg, typ: 'JWT', kid: signing.kid })).toString('base64url');
    expectJwtError(() => verifyJwt(`${h}.${p}.${s}`, find), /algorithm mismatch/);
    const none = Buffer.from(JSON.stringify({ alg: 'none', kid: signing.kid })).toString('base64url');
    expectJwtError(() => verifyJwt(`${none}.${p}.`, find), /malformed|algorithm/);
  });
});

describe('decodeJwt', () => {
  it('splits a compact JWS without verifying', async () => {
    const { privateKey } = keyPair('EdDSA');
    const token = await signJwt({ a: 1, exp: 1 }, { kid: 'k', alg: 'EdDSA', privateKey });
    const d = decodeJwt(token)!;
    expect(d.header).toEqual({ alg: 'EdDSA', typ: 'JWT', kid: 'k' });
    expect(d.payload).toEqual({ a: 1, exp: 1 });
    expect(d.signingInput).toBe(token.split('.').slice(0, 2).join('.'));
    expect(d.signature).toHaveLength(64);
  });

  it.each(['', 'abc', 'a.b', 'a.b.c.d', '..', 'e30.e30.', 'e30.W10.c2ln', 'e30.bnVsbA.c2ln', '!!!.e30.c2ln', 'e30.InN0cmluZyI.c2ln'])(
    'returns undefined for %j',
    (token) => {
      expect(decodeJwt(token)).toBeUndefined();
    },
  );

  it('makes verifyJwt refuse what it cannot decode', () => {
    expect(() => verifyJwt('not-a-jwt', () => undefined)).toThrow(/malformed/);
  });
});

describe('signJwt header (serialised once per key and typ)', () => {
  const headerOf = (token: string) => decodeJwt(token)!.header;

  it('follows the typ of each call with the same key object', async () => {
    const key = { kid: 'k1', alg: 'ES256' as const, privateKey: keyPair('ES256').privateKey };
    expect(headerOf(await signJwt({ exp: 1 }, key, 'at+jwt'))).toEqual({ alg: 'ES256', typ: 'at+jwt', kid: 'k1' });
    expect(headerOf(await signJwt({ exp: 1 }, key, 'logout+jwt'))).toEqual({ alg: 'ES256', typ: 'logout+jwt', kid: 'k1' });
    expect(headerOf(await signJwt({ exp: 1 }, key))).toEqual({ alg: 'ES256', typ: 'JWT', kid: 'k1' });
    expect(headerOf(await signJwt({ exp: 1 }, key, null))).toEqual({ alg: 'ES256', kid: 'k1' });
    const again = await signJwt({ exp: 1 }, key, 'at+jwt');
    expect(headerOf(again)).toEqual({ alg: 'ES256', typ: 'at+jwt', kid: 'k1' });
  });

  it('names each key its own kid, and a key object changed in place its new kid and alg', async () => {
    const es = keyPair('ES256').privateKey;
    const rs = keyPair('RS256');
    const a = { kid: 'a', alg: 'ES256' as SigningAlg, privateKey: es };
    const b = { kid: 'b', alg: 'ES256' as SigningAlg, privateKey: es };
    expect(headerOf(await signJwt({ exp: 1 }, a, 'at+jwt')).kid).toBe('a');
    expect(headerOf(await signJwt({ exp: 1 }, b, 'at+jwt')).kid).toBe('b');
    Object.assign(a, { kid: 'a2', alg: 'RS256', privateKey: rs.privateKey });
    const token = await signJwt({ sub: 's', exp: now() + 60 }, a, 'at+jwt');
    expect(headerOf(token)).toEqual({ alg: 'RS256', typ: 'at+jwt', kid: 'a2' });
    expect(verifyJwt(token, (kid) => (kid === 'a2' ? { alg: 'RS256', publicKey: rs.publicKey } : undefined)).payload.sub).toBe('s');
  });
});
