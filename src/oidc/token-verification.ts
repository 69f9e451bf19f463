/**
 * Verification of this tenant's access tokens, for every surface that accepts one: the Management
 * API guard, introspection, the platform routes. A JWT is checked for signature (the tenant's keys),
 * type `at+jwt`, issuer, expiry and the shape of its claims (a schema, not a cast), then against the
 * current state of its client; an opaque user token through oidc-provider's own store.
 */
import { z } from 'zod';
import { JwtError, decodeJwt, verifyJwt } from '../keys/jwt.js';
import type { KeySet } from '../keys/keystore.js';
import type { ClientRecord, UserWithoutSecrets } from '../storage/types.js';
import { narrowToRole } from '../users/roles.js';
import { canSignIn } from './accounts.js';
import { MANAGEMENT_RESOURCE } from './scopes.js';

/** The claims this service puts in an access token (and that its verifiers rely on). */
const accessTokenClaims = z.object({
  iss: z.string(),
  sub: z.string(),
  aud: z.union([z.string(), z.array(z.string())]),
  iat: z.number(),
  exp: z.number(),
  jti: z.string(),
  scope: z.string().optional(),
  client_id: z.string(),
  sgen: z.number().optional(),
  /** A user's token: the grant it was issued under (provider.ts extraTokenClaims); revoked with it. */
  grant_id: z.string().optional(),
  /** RFC 9449: a DPoP-bound token's key thumbprint (issued by oidc-provider for a request with a proof). */
  cnf: z.object({ jkt: z.string().optional() }).optional(),
});
export type AccessTokenClaims = z.output<typeof accessTokenClaims>;

/** Who a user token belongs to, as checked when it is used (TokenCheck). */
export interface TokenUser {
  id: string;
  email: string | null;
  role: string;
}

/**
 * `user` is set for a user's token (authorization code, refresh, device flow), absent for a
 * client's own (client_credentials: `sub` is the client). For a Management API token of a user,
 * `claims.scope` is already narrowed to what the user's role grants NOW (users/roles.ts).
 */
export type TokenCheck = { active: true; claims: AccessTokenClaims; user?: TokenUser } | { active: false; reason: string };

export interface VerifierHost {
  readonly issuer: string;
  readonly keys: KeySet;
  loadClient(clientId: string): Promise<ClientRecord | undefined>;
  /** The user a user token's `sub` names in this tenant (any state; checked here). */
  findTokenUser(sub: string): Promise<UserWithoutSecrets | undefined>;
  /**
   * The grant a user token names while it is stored (not revoked, not expired), with the account it
   * was granted to; undefined once it is gone.
   */
  grantOf(grantId: string): Promise<{ accountId: string | undefined } | undefined>;
  /** True for the `_platforms` tenant, whose platform roles grant the tenant and cross-tenant scopes. */
  readonly platformTenant: boolean;
}

/** A client's own token names the client as its subject; anything else is a user's token. */
export function isUserToken(claims: { sub?: unknown; client_id?: unknown }): boolean {
  return claims.sub !== claims.client_id;
}

/** Verifies a JWT access token of this tenant and the current state of its client. */
export async function checkAccessToken(host: VerifierHost, token: string): Promise<TokenCheck> {
  // Signature checks are the expensive part (RSA ~50 µs): a token verified once is remembered by
  // the key set that verified it, so a key change (rotation, retirement) forgets it.
  let payload = host.keys.verifiedTokens.get(token);
  if (!payload) {
    try {
      const decoded = verifyJwt(token, (kid) => (kid ? host.keys.verifying.get(kid) : undefined));
      if (decoded.header.typ !== 'at+jwt') return { active: false, reason: 'not an access token' };
      payload = decoded.payload;
    } catch (err) {
      return { active: false, reason: err instanceof JwtError ? err.message : 'invalid token' };
    }
    host.keys.verifiedTokens.set(token, payload);
  }
  if (typeof payload.exp !== 'number' || payload.exp <= Date.now() / 1000) return { active: false, reason: 'token expired' };
  if (payload.iss !== host.issuer) return { active: false, reason: 'wrong issuer' };
  if (typeof payload.client_id !== 'string') return { active: false, reason: 'no client_id claim' };
  const parsed = accessTokenClaims.safeParse(payload);
  if (!parsed.success) return { active: false, reason: 'malformed claims' };
  const revoked = await clientRevoked(host, parsed.data.client_id, parsed.data.sgen);
  if (revoked) return { active: false, reason: revoked };
  if (!isUserToken(parsed.data)) return { active: true, claims: parsed.data };
  return checkTokenUser(host, parsed.data);
}

/**
 * The user half of a user token's check, at every use (issue 12): the user must still exist and be
 * able to sign in (not deleted, disabled or locked), its grant must still exist, and a Management API token holds only what
 * the user's current role grants, whatever it held when issued. The user is the grant's account (a
 * pairwise client's `sub` names no user: it is the user's subject in the client's sector), or for a
 * token from before `grant_id` the `sub`; a token naming no user of this tenant is not active.
 */
async function checkTokenUser(host: VerifierHost, claims: AccessTokenClaims): Promise<TokenCheck> {
  const [grant, bySub] = await Promise.all([claims.grant_id === undefined ? undefined : host.grantOf(claims.grant_id), host.findTokenUser(claims.sub)]);
  // Ending the session or the grant (an administrator's revocation, a lock, a password reset, the
  // revocation endpoint) ends the token too, as it ends an opaque one, and for good: an unlock later
  // does not bring it back. Tokens issued before the claim existed carry none and expire as before.
  if (claims.grant_id !== undefined && !grant) return { active: false, reason: 'the grant of the token was revoked' };
  const accountId = grant?.accountId ?? claims.sub;
  const user = bySub?.id === accountId ? bySub : await host.findTokenUser(accountId);
  if (!user) return { active: false, reason: 'the user of the token does not exist' };
  if (!canSignIn(user)) return { active: false, reason: 'the user of the token can no longer sign in' };
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  const who = { id: user.id, email: user.email, role: user.role };
  if (!aud.includes(MANAGEMENT_RESOURCE)) return { active: true, claims, user: who };
  const { scope: _held, ...rest } = claims;
  const scope = narrowToRole(claims.scope ?? '', user.role, host.platformTenant);
  return { active: true, claims: scope ? { ...rest, scope } : rest, user: who };
}

/**
 * Why the tokens a client was issued no longer count, or undefined while they do: the client was
 * deleted or deactivated, or its secret regenerated since the token was issued (`sgen`, the
 * secret generation at issuance, absent for generation 0). JWT and opaque tokens alike.
 */
export async function clientRevoked(host: Pick<VerifierHost, 'loadClient'>, clientId: string, sgen: unknown): Promise<string | undefined> {
  const client = await host.loadClient(clientId);
  if (!client) return 'client no longer exists';
  if (!client.active) return 'client is deactivated';
  const generation = typeof sgen === 'number' ? sgen : 0;
  if (generation !== client.secret_generation) return 'client secret was regenerated';
  return undefined;
}

/** Who an end user's Management token belongs to (accessTokenOwner), or why it does not qualify. */
export type AccessTokenOwner =
  | { ok: true; user: TokenUser; clientId: string; scope: string }
  | { ok: false; status: 401 | 403; reason: string; scope?: string };

/**
 * The end user a Management API access token of this tenant was issued to, checked for what a
 * route needs (issue 12, hole 1): a JWT of this issuer for the Management API audience, issued to
 * a user (not a client's own token) who can still sign in, through a client that is still active
 * and first-party when `firstParty`, holding `scopes` after the narrowing to the user's current
 * role (checkTokenUser). Opaque tokens carry no audience and never qualify.
 */
export async function accessTokenOwner(host: VerifierHost, token: string, need: { scopes: readonly string[]; firstParty: boolean }): Promise<AccessTokenOwner> {
  if (!decodeJwt(token)) return { ok: false, status: 401, reason: 'the access token is not a Management API token' };
  const check = await checkAccessToken(host, token);
  if (!check.active) return { ok: false, status: 401, reason: `the access token is not valid: ${check.reason}` };
  const aud = Array.isArray(check.claims.aud) ? check.claims.aud : [check.claims.aud];
  if (!aud.includes(MANAGEMENT_RESOURCE)) return { ok: false, status: 401, reason: `the access token's audience is not ${MANAGEMENT_RESOURCE}` };
  if (!check.user) return { ok: false, status: 401, reason: 'the access token was not issued to a user' };
  // Issue 18 item 8: these routes take Bearer tokens only; a DPoP-bound token is never a Bearer.
  if (check.claims.cnf?.jkt) return { ok: false, status: 401, reason: 'the access token is DPoP-bound and cannot be used as a Bearer token' };
  if (need.firstParty && !(await host.loadClient(check.claims.client_id))?.metadata.first_party) {
    return { ok: false, status: 403, reason: 'the access token was not issued to a first-party client' };
  }
  const scope = check.claims.scope ?? '';
  const held = new Set(scope.split(' '));
  const missing = need.scopes.filter((s) => !held.has(s));
  if (missing.length) return { ok: false, status: 403, reason: `the access token lacks the scope ${missing.join(' ')}`, scope: missing.join(' ') };
  return { ok: true, user: check.user, clientId: check.claims.client_id, scope };
}
