/** How a tenant's API resources show in oidc-provider's view of scopes and clients. */
import type { AdapterPayload } from 'oidc-provider';
import { isManagementScope } from '../resources/management-api.js';
import type { ResourceIndex } from './index-cache.js';
import { STANDARD_SCOPES } from './names.js';

/**
 * The client metadata with only scopes that exist now: clients are checked at creation
 * (clients/scope-names.ts), but a resource deleted later leaves its scope names behind, and
 * oidc-provider refuses a client whose `scope` names an unknown scope (invalid_client_metadata).
 */
export function knownScopesOnly(metadata: AdapterPayload, index: ResourceIndex): AdapterPayload {
  if (typeof metadata.scope !== 'string') return metadata;
  const kept = metadata.scope.split(' ').filter((s) => s && (STANDARD_SCOPES.has(s) || isManagementScope(s) || index.scopeNames.has(s)));
  const scope = kept.join(' ');
  if (scope === metadata.scope) return metadata;
  // Never no scope at all: oidc-provider reads a client without `scope` as allowed every scope.
  return { ...metadata, scope: scope || 'openid' };
}

/**
 * Whether a scope is an API resource's (the tenant's or the Management API's svc:*). Such a scope
 * goes only into the token for that resource (RFC 8707, docs/decisions.md "Which scopes a client
 * gets"), never into the token without an audience that a user flow gives for userinfo.
 */
export function isResourceScope(scope: string, index: ResourceIndex | undefined): boolean {
  return isManagementScope(scope) || (index?.scopeNames.has(scope) ?? false);
}
