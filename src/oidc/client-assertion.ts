/**
 * client_secret_jwt and private_key_jwt (RFC 7523 client authentication) checked in the actor, in
 * the order and with the answers of oidc-provider's lib/shared/jwt_client_auth.js: every failure
 * is 401 invalid_client "client authentication failed" (the reason is only logged by the caller).
 * Rules: alg among the client auth algorithms of its kind (HS* for client_secret_jwt, the others
 * for private_key_jwt); exp, jti, iss required; iss = the client; aud = the issuer, the token
 * endpoint URL or the URL of the endpoint called; signature (RSA keys of at least 2048 bits, as
 * jose requires); exp/nbf/iat with 15 s of clock tolerance; the jti used once (ReplayStore).
 * Signatures are checked with node:crypto directly (sync, a few µs to ~50 µs), not WebCrypto.
 */
import { constants, createHmac, timingSafeEqual, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import { parseJson } from '../http/json.js';
import type { ClientRecord } from '../storage/types.js';
import { CLIENT_AUTH_SIGNING_ALGS, type ClientAuthAlg, type ClientKeyCache, type ClientPublicKey, isClientAuthAlg } from './client-keys.js';
import type { ReplayStore } from './replay-store.js';

/** oidc-provider's default clockTolerance (seconds). */
export const CLOCK_TOLERANCE = 15;

export class AssertionError extends Error {}

export interface AssertionServices {
  readonly keys: ClientKeyCache;
  readonly replay: ReplayStore;
}

export interface Assertion {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  signingInput: string;
  signature: Buffer;
}

function parseSegment(segment: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = parseJson(Buffer.from(segment, 'base64url').toString('utf8'));
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A compact JWS with JSON object header and payload (jose's decodeJwt rules), or undefined. */
export function parseAssertion(token: string): Assertion | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [h, p, s] = parts as [string, string, string];
  const header = parseSegment(h);
  const payload = parseSegment(p);
  if (!header || !payload) return undefined;
  return { header, payload, signingInput: `${h}.${p}`, signature: Buffer.from(s, 'base64url') };
}

const HASH: Record<ClientAuthAlg, string | null> = { HS256: 'sha256', HS384: 'sha384', HS512: 'sha512', RS256: 'sha256', PS256: 'sha256', ES256: 'sha256', EdDSA: null };
const KTY: Record<ClientAuthAlg, string> = { HS256: 'oct', HS384: 'oct', HS512: 'oct', RS256: 'RSA', PS256: 'RSA', ES256: 'EC', EdDSA: 'OKP' };
const CRV: Partial<Record<ClientAuthAlg, string>> = { ES256: 'P-256', EdDSA: 'Ed25519' };

function hmacValid(alg: ClientAuthAlg, secret: Buffer, input: string, signature: Buffer): boolean {
  const expected = createHmac(HASH[alg]!, secret).update(input).digest();
  return expected.length === signature.length && timingSafeEqual(expected, signature);
}

function publicKeyValid(alg: ClientAuthAlg, key: KeyObject, input: string, signature: Buffer): boolean {
  if (KTY[alg] === 'RSA' && (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) return false;
  const options =
    alg === 'PS256'
      ? { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }
      : alg === 'ES256'
        ? { key, dsaEncoding: 'ieee-p1363' as const }
        : { key };
  try {
    return cryptoVerify(HASH[alg], Buffer.from(input), options, signature);
  } catch {
    return false;
  }
}

/** oidc-provider's KeyStore.selectForVerify for a JWS alg and optional kid. */
function candidates(keys: readonly ClientPublicKey[], alg: ClientAuthAlg, kid: unknown): ClientPublicKey[] {
  const crv = CRV[alg];
  return keys.filter(
    (k) =>
      k.kty === KTY[alg] &&
      (typeof kid !== 'string' || k.kid === kid) &&
      (k.alg === undefined || k.alg === alg) &&
      (k.use === undefined || k.use === 'sig') &&
      (crv === undefined || k.crv === crv) &&
      (k.keyOps === undefined || k.keyOps.includes('verify')),
  );
}

function signatureValid(services: AssertionServices, record: ClientRecord, alg: ClientAuthAlg, a: Assertion): boolean {
  if (KTY[alg] === 'oct') {
    const secret = services.keys.hmacKey(record);
    return secret !== undefined && hmacValid(alg, secret, a.signingInput, a.signature);
  }
  return candidates(services.keys.publicKeys(record), alg, a.header.kid).some((k) => publicKeyValid(alg, k.key, a.signingInput, a.signature));
}

/** jose's claim type checks and oidc-provider's assertPayload, with the clock tolerance. */
function claimsValid(payload: Record<string, unknown>, now: number): string | undefined {
  const { nbf, iat, exp, jti, iss, aud } = payload;
  if (nbf !== undefined && (typeof nbf !== 'number' || nbf > now + CLOCK_TOLERANCE)) return 'jwt not active yet';
  if (iat !== undefined && typeof iat !== 'number') return 'invalid iat value';
  if (typeof exp !== 'number') return 'invalid exp value';
  if (now - CLOCK_TOLERANCE >= exp) return 'jwt expired';
  if (typeof jti !== 'string') return 'invalid jti value';
  if (typeof iss !== 'string') return 'invalid iss value';
  if (typeof aud !== 'string' && (!Array.isArray(aud) || aud.some((v) => typeof v !== 'string'))) return 'invalid aud value';
  return undefined;
}

/**
 * Verifies the client assertion of an already identified client whose registered method is
 * client_secret_jwt or private_key_jwt; throws AssertionError (a reason for the log) on failure.
 * `audiences`: the issuer, the token endpoint URL and the URL of the endpoint called.
 */
export async function verifyClientAssertion(
  services: AssertionServices,
  record: ClientRecord,
  assertion: string,
  audiences: ReadonlySet<string>,
): Promise<void> {
  const a = parseAssertion(assertion);
  if (!a) throw new AssertionError('malformed client_assertion');
  const { header, payload } = a;
  const symmetric = record.metadata.token_endpoint_auth_method === 'client_secret_jwt';
  const alg = header.alg;
  const allowed = CLIENT_AUTH_SIGNING_ALGS.filter((x) => x.startsWith('HS') === symmetric);
  if (!isClientAuthAlg(alg) || !allowed.includes(alg)) throw new AssertionError('alg mismatch');
  if (!payload.exp) throw new AssertionError('expiration must be specified in the client_assertion JWT');
  if (!payload.jti) throw new AssertionError('unique jti (JWT ID) must be provided in the client_assertion JWT');
  if (!payload.iss) throw new AssertionError('iss (JWT issuer) must be provided in the client_assertion JWT');
  if (payload.iss !== record.client_id) throw new AssertionError('iss (JWT issuer) must be the client_id');
  if (!payload.aud) throw new AssertionError('aud (JWT audience) must be provided in the client_assertion JWT');
  const auds = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (!auds.some((v) => typeof v === 'string' && audiences.has(v))) throw new AssertionError('audience (aud) must equal the endpoint url, issuer identifier or token endpoint url');
  // jose refuses any `crit` it does not implement; an assertion has no use for one.
  if (header.crit !== undefined) throw new AssertionError('unsupported crit header parameter');

  let valid = signatureValid(services, record, alg, a);
  if (!valid && services.keys.stale(record)) {
    // oidc-provider refetches a stale jwks_uri when no key verified, then tries once more.
    try {
      await services.keys.refresh(record);
    } catch (err) {
      throw new AssertionError(`client JSON Web Key Set failed to be refreshed: ${err instanceof Error ? err.message : String(err)}`);
    }
    valid = signatureValid(services, record, alg, a);
  }
  if (!valid) throw new AssertionError('signature verification failed');
  const problem = claimsValid(payload, Math.floor(Date.now() / 1000));
  if (problem) throw new AssertionError(problem);

  const unique = await services.replay.unique(payload.iss, payload.jti as string, (payload.exp as number) + CLOCK_TOLERANCE);
  if (!unique) throw new AssertionError('client assertion tokens must only be used once');
}
