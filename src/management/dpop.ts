/**
 * DPoP at the Management API (RFC 9449 section 7, issue 18 item 8). A DPoP-bound access token
 * (`cnf.jkt`) is accepted only as `Authorization: DPoP <token>` with a proof that:
 * - is a JWT of type `dpop+jwt`, signed with an asymmetric algorithm by the public key in its header
 *   (no private members), whose SHA-256 JWK thumbprint equals the token's `cnf.jkt`;
 * - names this request: `htm` = the method, `htu` = this host and path (query and fragment ignored;
 *   the scheme is not compared because TLS usually ends at a proxy in front);
 * - is fresh (`iat` within PROOF_WINDOW_S either way) and used once (`jti` in the tenant's replay
 *   store, shared through Redis when configured);
 * - carries `ath` = base64url(SHA-256(access token)).
 * A bound token sent as Bearer is refused (RFC 9449 7.2); an unbound token sent as DPoP is refused too.
 * Refusals of a request in the DPoP scheme carry a DPoP challenge (inRequestScheme).
 */
import { createHash } from 'node:crypto';
import { EmbeddedJWK, calculateJwkThumbprint, jwtVerify, type JWTHeaderParameters } from 'jose';
import { bearerToken } from '../http/bearer.js';
import { ProblemError, unauthorized } from '../http/problem.js';
import type { HttpRequest } from '../http/types.js';

/** Seconds a proof's iat may be off from now, both ways (oidc-provider's default tolerance is similar). */
export const PROOF_WINDOW_S = 60;
/**
 * The proof algorithms accepted here: oidc-provider's (enabledJWA.dPoPSigningAlgValues, its
 * default), which discovery publishes as dpop_signing_alg_values_supported and which bound the
 * token at the token endpoint, so no other key can hold a Management token anyway.
 */
const DPOP_ALGS = ['ES256', 'Ed25519', 'EdDSA'];

/** The token and how it was presented (`Authorization: Bearer|DPoP <token>`). */
export interface PresentedToken {
  scheme: 'Bearer' | 'DPoP';
  token: string;
}

const DPOP_SCHEME = /^DPoP[ ]+([A-Za-z0-9._~+/=-]+)\s*$/i;

/** `Authorization: Bearer` (the shared parser, http/bearer.ts) or `Authorization: DPoP`; 401 otherwise. */
export function presentedToken(req: HttpRequest): PresentedToken {
  const bearer = bearerToken(req);
  if (bearer) return { scheme: 'Bearer', token: bearer };
  const dpop = DPOP_SCHEME.exec(req.headers.authorization ?? '')?.[1];
  if (dpop) return { scheme: 'DPoP', token: dpop };
  throw unauthorized(req.headers.authorization ? 'The Authorization header is not a Bearer or DPoP token' : 'A Bearer access token is required');
}

export interface ProofChecks {
  /** Single use of the proof's jti for this key; false when already seen. */
  claimJti(jkt: string, jti: string, expiresAt: number): Promise<boolean>;
}

/** RFC 9449 7.1: a proof that fails is `invalid_dpop_proof` in a DPoP challenge naming the accepted algorithms. */
const bad = (why: string) =>
  new ProblemError(401, 'unauthorized', `The DPoP proof is not valid: ${why}`, { headers: { 'www-authenticate': `DPoP error="invalid_dpop_proof", algs="${DPOP_ALGS.join(' ')}"` } });

/**
 * RFC 9449 7.1: a request that used the DPoP scheme is answered in it: the Bearer challenge of a
 * 401 or 403 (invalid_token, insufficient_scope) becomes the same challenge under `DPoP`, with the
 * accepted algorithms. Requests with a Bearer token or none keep the CONTRACT's Bearer challenge.
 */
export function inRequestScheme(req: HttpRequest, err: unknown): unknown {
  if (!(err instanceof ProblemError) || !DPOP_SCHEME.test(req.headers.authorization ?? '')) return err;
  const challenge = err.extra.headers?.['www-authenticate'];
  if (typeof challenge !== 'string' || !challenge.startsWith('Bearer ')) return err;
  err.extra.headers = { ...err.extra.headers, 'www-authenticate': `DPoP ${challenge.slice('Bearer '.length)}, algs="${DPOP_ALGS.join(' ')}"` };
  return err;
}

/** Throws 401 unless the presentation matches the token's binding (and the proof is valid). */
export async function checkSenderConstraint(req: HttpRequest, presented: PresentedToken, jkt: string | undefined, checks: ProofChecks): Promise<void> {
  if (!jkt) {
    if (presented.scheme === 'DPoP') throw unauthorized('The access token is not DPoP-bound: send it as Bearer');
    return;
  }
  if (presented.scheme !== 'DPoP') throw unauthorized('The access token is DPoP-bound: send it as Authorization: DPoP with a DPoP proof');
  const proof = req.headers.dpop; // repeated headers arrive joined with ', ' (a JWT has no comma)
  if (!proof || proof.includes(',')) throw bad('exactly one DPoP header is required');

  let payload: Record<string, unknown>;
  let header: JWTHeaderParameters;
  try {
    ({ payload, protectedHeader: header } = await jwtVerify(proof, EmbeddedJWK, { typ: 'dpop+jwt', algorithms: DPOP_ALGS }));
  } catch {
    throw bad('signature, type or algorithm');
  }
  const jwk = header.jwk!;
  if ('d' in jwk || 'k' in jwk) throw bad('the header key must be a public key');
  if ((await calculateJwkThumbprint(jwk, 'sha256')) !== jkt) throw bad('the key does not match the token (cnf.jkt)');
  if (payload.htm !== req.method) throw bad('htm does not match the request method');
  if (typeof payload.htu !== 'string' || !htuMatches(payload.htu, req)) throw bad('htu does not match the request URL');
  const now = Math.floor(Date.now() / 1000);
  if (typeof payload.iat !== 'number' || Math.abs(now - payload.iat) > PROOF_WINDOW_S) throw bad('iat is outside the accepted window');
  const ath = createHash('sha256').update(presented.token).digest('base64url');
  if (payload.ath !== ath) throw bad('ath does not match the access token');
  if (typeof payload.jti !== 'string' || payload.jti.length < 8 || payload.jti.length > 256) throw bad('jti is missing');
  if (!(await checks.claimJti(jkt, payload.jti, payload.iat + PROOF_WINDOW_S))) throw bad('the proof was already used (jti replay)');
}

function htuMatches(htu: string, req: HttpRequest): boolean {
  let url: URL;
  try {
    url = new URL(htu);
  } catch {
    return false;
  }
  const host = req.headers.host;
  // Only the query and fragment may differ (RFC 9449 4.3); a user-info part makes another URI.
  if (url.username || url.password) return false;
  return (url.protocol === 'https:' || url.protocol === 'http:') && typeof host === 'string' && url.host === host.toLowerCase() && url.pathname === req.path;
}
