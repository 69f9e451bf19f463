/**
 * Compact JWS signing and verification on node:crypto. RS256 signs with the callback form of
 * crypto.sign, on libuv's threadpool, handed over at the end of the turn (batch-signer.ts
 * signOnPool; measured faster here than a Piscina pool, see
 * PERFORMANCE-NOTES); ES256 and EdDSA sign in batches on two worker threads (batch-signer.ts:
 * their signature is cheap enough that the threadpool's per-token hand-off was a good part of the
 * event loop's work). Verification is synchronous and cheap.
 */
import { verify as cryptoVerify, type KeyObject } from 'node:crypto';
import type { SigningAlg } from '../config/schema.js';
import { JsonTooDeep, parseJson } from '../http/json.js';
import { BatchSigner, SIGNER_WORKER_FILE, signOnPool } from './batch-signer.js';

const HASH: Record<SigningAlg, string | null> = { RS256: 'sha256', ES256: 'sha256', EdDSA: null };

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

type SignWith = { kid: string; alg: SigningAlg; privateKey: KeyObject };

/**
 * The encoded protected header per key and typ. It is the same bytes for every token a key signs
 * with a typ, so it is serialised once (issue 17): keyed by the key object (a KeySet's keys live as
 * long as the set; a one-off object's entry goes with it) and then by typ (null: no typ member).
 */
const headers = new WeakMap<SignWith, { alg: SigningAlg; kid: string; byTyp: Map<string | null, string> }>();
function encodedHeader(key: SignWith, typ: string | null): string {
  let entry = headers.get(key);
  // A key object whose kid or alg was changed in place starts over: never a stale header.
  if (!entry || entry.alg !== key.alg || entry.kid !== key.kid) headers.set(key, (entry = { alg: key.alg, kid: key.kid, byTyp: new Map() }));
  let header = entry.byTyp.get(typ);
  if (header === undefined) entry.byTyp.set(typ, (header = b64(typ === null ? { alg: key.alg, kid: key.kid } : { alg: key.alg, typ, kid: key.kid })));
  return header;
}

/** One per process: the threads serve every tenant's keys (each batch carries the keys it uses). */
const batched = new BatchSigner(SIGNER_WORKER_FILE, 2);

export function signJwt(
  payload: Record<string, unknown>,
  key: SignWith,
  /** The header's `typ`; null for none (oidc-provider's ID tokens carry none). */
  typ: string | null = 'JWT',
): Promise<string> {
  const input = `${encodedHeader(key, typ)}.${b64(payload)}`;
  const signing = key.alg === 'RS256' ? signOnPool(HASH.RS256, input, key.privateKey) : batched.sign(HASH[key.alg], input, key.privateKey);
  return signing.then((signature) => `${input}.${signature}`);
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

/**
 * Three dot-separated parts whose first is a JSON object: what oidc-provider takes for a JWT
 * (reject_structured_tokens.js), whether or not decodeJwt can read it (an empty signature, a
 * payload nested past the bound).
 */
export function isStructuredToken(token: string): boolean {
  const parts = token.split('.');
  if (parts.length !== 3) return false;
  try {
    const header = parseJson(Buffer.from(parts[0]!, 'base64url').toString());
    return typeof header === 'object' && header !== null && !Array.isArray(header);
  } catch (err) {
    // Nested past the bound: structured all the same.
    return err instanceof JsonTooDeep;
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
