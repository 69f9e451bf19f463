/**
 * oidc-provider's resource-indicator hooks for a tenant's own API resources (issue 19): what a
 * token for `resource=<identifier>` looks like, and which scopes of it a client may get.
 */
import { errors, type KoaContextWithOIDC, type ResourceServer } from 'oidc-provider';
import { TTL_CEILINGS } from '../tenancy/config/policy.js';
import type { ResourceIndex } from './index-cache.js';

/**
 * The resource server of `identifier`; invalid_target when the tenant has none. For
 * client_credentials a requested scope this resource does not grant the client is invalid_scope
 * (oidc-provider would drop it silently); user flows may name several resources at once, so there
 * the scopes of each are filtered as usual.
 */
export function tenantResourceServer(ctx: KoaContextWithOIDC, index: ResourceIndex, identifier: string, clientScope: string | undefined, algs: readonly string[]): ResourceServer {
  const resource = index.get(identifier);
  if (!resource) throw new errors.InvalidTarget();
  const allowed = index.allowedFor(resource, clientScope);
  if (ctx.oidc.params?.grant_type === 'client_credentials') {
    const held = new Set(allowed);
    const denied = String(ctx.oidc.params.scope ?? '').split(' ').filter((s) => s && !held.has(s));
    if (denied.length) throw new errors.InvalidScope('requested scope is not allowed', denied.join(' '));
  }
  const alg = algs.includes(resource.signing_alg) ? resource.signing_alg : algs[0];
  return {
    scope: allowed.join(' '),
    audience: resource.identifier,
    accessTokenTTL: Math.min(resource.access_token_ttl, TTL_CEILINGS.access_token),
    accessTokenFormat: resource.token_format,
    ...(resource.token_format === 'jwt' ? { jwt: { sign: { alg: alg as 'RS256' } } } : {}),
  };
}
