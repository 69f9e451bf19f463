/**
 * Verification of this tenant's access tokens, for every surface that accepts one: the Management
 * API guard, introspection, the platform routes. A JWT is checked for signature (the tenant's keys),
 * type `at+jwt`, issuer, expiry and the shape of its claims (a schema, not a cast), then against the
 * current state of its client; an opaque user token through oidc-provider's own store.
 */
import { z } from 'zod';
import { JwtError, decodeJwt, verifyJwt } from '../keys/jwt.js';
import type { KeySet } from '../keys/keystore.js';
import type { ClientRecord } from '../storage/types.js';

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
});
export type AccessTokenClaims = z.output<typeof accessTokenClaims>;

export type TokenCheck = { active: true; claims: AccessTokenClaims } | { active: false; reason: string };

export interface VerifierHost {
  readonly issuer: string;
  readonly keys: KeySet;
  loadClient(clientId: string): Promise<ClientRecord | undefined>;
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
  return { active: true, claims: parsed.data };
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

/** Who an end user's access token belongs to. */
export interface AccessTokenOwner {
  accountId: string;
  clientId: string;
  scope: string;
}

/** oidc-provider's stored opaque access token, as far as the owner lookup needs it. */
export interface StoredAccessToken {
  accountId?: string;
  clientId?: string;
  scope?: string;
  isExpired: boolean;
}

export interface OwnerHost extends VerifierHost {
  findOpaqueAccessToken(token: string): Promise<StoredAccessToken | undefined>;
}

/**
 * The end user an access token of this tenant was issued to (authorization code or device flow),
 * or undefined when it is not a live user token: opaque tokens through oidc-provider's own store
 * (expiry and session binding checked), JWTs through checkAccessToken. A client_credentials
 * token has no user (its `sub` is the client) and is refused.
 */
export async function accessTokenOwner(host: OwnerHost, token: string): Promise<AccessTokenOwner | undefined> {
  if (decodeJwt(token)) {
    const check = await checkAccessToken(host, token);
    if (!check.active || check.claims.sub === check.claims.client_id) return undefined;
    return { accountId: check.claims.sub, clientId: check.claims.client_id, scope: check.claims.scope ?? '' };
  }
  const stored = await host.findOpaqueAccessToken(token);
  if (!stored?.accountId || !stored.clientId || stored.isExpired) return undefined;
  const client = await host.loadClient(stored.clientId);
  if (!client?.active) return undefined;
  return { accountId: stored.accountId, clientId: stored.clientId, scope: stored.scope ?? '' };
}
