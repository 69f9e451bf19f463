/**
 * Who is calling a Management API operation, and for which tenant (spec 5, CONTRACT.md):
 *
 * - an ordinary operation: a token of the addressed tenant's issuer; or, in multi-tenant mode, a
 *   token of the `_platforms` issuer holding `svc:cross-tenant:read` (GET) or
 *   `svc:cross-tenant:write` (anything else) besides the operation's own scope;
 * - a platform operation (Operation.platform, the tenants resource): a token of the `_platforms`
 *   issuer only, whatever tenant the request resolved to; 404 in single-tenant mode.
 *
 * Every token is a JWT for the Management API resource; the scope of the operation itself is
 * checked by the caller (api.ts), so its 403 still comes before any lookup.
 *
 * Two kinds of bearer (issue 12): a client's own client_credentials token, and a user's token
 * (authorization code + PKCE with resource=urn:svc:api:v1, e.g. through the console's first-party
 * client). A user token is checked at every use by checkAccessToken: the user must exist and be
 * able to sign in, and its scope is narrowed to what the user's role grants now (users/roles.ts).
 */
import type { AppContext } from '../context.js';
import { insufficientScope, notFound, unauthorized } from '../http/problem.js';
import type { HttpRequest } from '../http/types.js';
import { decodeJwt } from '../keys/jwt.js';
import type { AccessTokenClaims, TokenUser } from '../oidc/token-verification.js';
import { MANAGEMENT_RESOURCE } from '../oidc/scopes.js';
import type { TenantHandle } from '../tenancy/handle.js';
import { PLATFORM_TENANT } from '../tenancy/resolver.js';
import { checkSenderConstraint, presentedToken, type PresentedToken } from './dpop.js';
import type { Operation } from './operation.js';

/** Where tokens are verified: the addressed tenant's actor and the `_platforms` actor. */
export interface AuthDeps {
  ctx: Pick<AppContext, 'config' | 'resolver'>;
  actorFor: (req: HttpRequest) => Promise<{ tenant: string; actor: TenantHandle }>;
  /** The `_platforms` actor (multi-tenant mode): platform operations and cross-tenant tokens. */
  platformActor?: () => Promise<TenantHandle>;
}

export interface Authenticated {
  /** The tenant the call acts on (rate limits, audit, storage). */
  tenant: string;
  actor: TenantHandle;
  /** For a user token, `scope` is already narrowed to the user's current role. */
  claims: AccessTokenClaims;
  /** The user who acts, for a user token; absent for a client's own token. */
  user?: TokenUser;
  /** The tenant of the token when it is not `tenant`: a cross-tenant `_platforms` token. */
  tokenTenant?: string;
}

/**
 * The claims (and user) of a token `actor` verifies, for the Management API resource; 401 otherwise.
 * A DPoP-bound token must come with a valid proof, a Bearer token without one (dpop.ts, issue 18 item 8).
 */
async function verifiedBy(actor: TenantHandle, req: HttpRequest, presented: PresentedToken): Promise<{ claims: AccessTokenClaims; user?: TokenUser }> {
  const check = await actor.checkAccessToken(presented.token);
  if (!check.active) throw unauthorized(`The access token is not valid: ${check.reason}`);
  const aud = Array.isArray(check.claims.aud) ? check.claims.aud : [check.claims.aud];
  if (!aud.includes(MANAGEMENT_RESOURCE)) throw unauthorized(`The access token is not valid: audience is not ${MANAGEMENT_RESOURCE}`);
  await checkSenderConstraint(req, presented, check.claims.cnf?.jkt, { claimJti: (jkt, jti, exp) => actor.claimProofJti(jkt, jti, exp) });
  return check.user ? { claims: check.claims, user: check.user } : { claims: check.claims };
}

export async function authenticate(deps: AuthDeps, o: Operation, req: HttpRequest): Promise<Authenticated> {
  const multiTenant = deps.ctx.config.multi_tenancy.enabled;
  if (o.platform) {
    // CONTRACT.md: in single-tenant mode the tenant endpoints answer 404 problem+json.
    if (!multiTenant || !deps.platformActor) throw notFound(`${req.path} is available in multi-tenant mode only`);
    const actor = await deps.platformActor();
    return { tenant: PLATFORM_TENANT, actor, ...(await verifiedBy(actor, req, presentedToken(req))) };
  }

  const { tenant, actor } = await deps.actorFor(req);
  const presented = presentedToken(req);
  const token = presented.token;
  try {
    return { tenant, actor, ...(await verifiedBy(actor, req, presented)) };
  } catch (err) {
    if (!multiTenant || tenant === PLATFORM_TENANT || !deps.platformActor || !issuedByPlatform(deps, token)) throw err;
  }
  // A `_platforms` token: valid there, and allowed to cross into this tenant.
  const verified = await verifiedBy(await deps.platformActor(), req, presented);
  const needed = req.method === 'GET' || req.method === 'HEAD' ? 'svc:cross-tenant:read' : 'svc:cross-tenant:write';
  // Both the crossing scope and the operation's own: name every one missing at once (issue 18 item 5).
  const held = new Set((verified.claims.scope ?? '').split(' '));
  const missing = [needed, o.scope].filter((s) => !held.has(s));
  if (missing.length) throw insufficientScope(missing);
  return { tenant, actor, ...verified, tokenTenant: PLATFORM_TENANT };
}

/** Whether the token claims the `_platforms` issuer (checked before building that actor; verified after). */
function issuedByPlatform(deps: AuthDeps, token: string): boolean {
  return decodeJwt(token)?.payload.iss === deps.ctx.resolver.issuerOf(PLATFORM_TENANT);
}
