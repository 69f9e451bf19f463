/**
 * Compact JWS signing and verification on node:crypto. Signing uses the callback form of
 * crypto.sign, which runs on libuv's threadpool (measured faster here than a Piscina pool, see
 * PERFORMANCE-NOTES); verification is synchronous and cheap.
 */
import { sign as cryptoSign, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import type { SigningAlg } from '../config/schema.js';
import { parseJson } from '../http/json.js';

const HASH: Record<SigningAlg, string | null> = { RS256: 'sha256', ES256: 'sha256', EdDSA: null };

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

export function signJwt(
  payload: Record<string, unknown>,
  key: { kid: string; alg: SigningAlg; privateKey: KeyObject },
  /** The header's `typ`; null for none (oidc-provider's ID tokens carry none). */
  typ: string | null = 'JWT',
): Promise<string> {
  const header = typ === null ? { alg: key.alg, kid: key.kid } : { alg: key.alg, typ, kid: key.kid };
  const input = `${b64(header)}.${b64(payload)}`;
  return new Promise((resolve, reject) => {
    cryptoSign(HASH[key.alg], Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' }, (err, sig) => {
      if (err) reject(err);
      else resolve(`${input}.${sig.toString('base64url')}`);
    });
  });
}

export interface VerifyKey {
  alg: SigningAlg;
  publicKey: KeyObject;
}

export class JwtError extends Error {}

export interface DecodedJwt {
  header: { alg?: string; kid?: string; typ?: string };
  payload: Record<string, unknown>;
}

/** Splits and parses without verifying; undefined if it is not a compact JWS. */
export function decodeJwt(token: string): (DecodedJwt & { signingInput: string; signature: Buffer }) | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || !parts[0] || !parts[1] || !parts[2]) return undefined;
  try {
    const header = parseJson(Buffer.from(parts[0], 'base64url').toString()) as DecodedJwt['header'];
    const payload = parseJson(Buffer.from(parts[1], 'base64url').toString()) as Record<string, unknown>;
    if (!header || typeof header !== 'object' || !payload || typeof payload !== 'object' || Array.isArray(payload)) return undefined;
    return { header, payload, signingInput: `${parts[0]}.${parts[1]}`, signature: Buffer.from(parts[2], 'base64url') };
  } catch {
    return undefined;
  }
}

/** Verifies signature and exp/nbf; the caller checks iss/aud and anything else. */
export function verifyJwt(token: string, findKey: (kid: string | undefined) => VerifyKey | undefined, nowSeconds = Date.now() / 1000): DecodedJwt {
  const decoded = decodeJwt(token);
  if (!decoded) throw new JwtError('malformed token');
  const key = findKey(decoded.header.kid);
  if (!key) throw new JwtError('unknown signing key');
  if (decoded.header.alg !== key.alg) throw new JwtError('algorithm mismatch');
  const ok = cryptoVerify(HASH[key.alg], Buffer.from(decoded.signingInput), { key: key.publicKey, dsaEncoding: 'ieee-p1363' }, decoded.signature);
  if (!ok) throw new JwtError('bad signature');
  const { exp, nbf } = decoded.payload;
  if (typeof exp !== 'number' || exp <= nowSeconds) throw new JwtError('token expired');
  if (typeof nbf === 'number' && nbf > nowSeconds + 5) throw new JwtError('token not yet valid');
  return { header: decoded.header, payload: decoded.payload };
}
