/**
 * Rule of the clients domain (issue 19): a client's `scope` names only scopes that exist, so a
 * client never gets created and then fails every token request with invalid_client_metadata.
 * Known scopes: the provider's standard OIDC scopes, the Management API's `svc:*` scopes (whether
 * the creator may grant them is the separate privilege rule), and the tenant's resources' scopes.
 */
import { Invalid } from '../errors.js';
import { isManagementScope } from '../resources/management-api.js';
import { ResourceIndex } from '../resources/index-cache.js';
import { STANDARD_SCOPES } from '../resources/names.js';
import type { Storage, TenantId } from '../storage/types.js';

/** The names in `scope` that no one defines, in the order given. */
export function unknownScopes(scope: string | undefined, resourceScopes: ReadonlySet<string>): string[] {
  const names = (scope ?? '').split(' ').filter(Boolean);
  return [...new Set(names.filter((s) => !STANDARD_SCOPES.has(s) && !isManagementScope(s) && !resourceScopes.has(s)))];
}

/** 422 on `scope` naming every unknown scope; nothing when all are known. */
export function assertKnownScopes(scope: string | undefined, resourceScopes: ReadonlySet<string>): void {
  const unknown = unknownScopes(scope, resourceScopes);
  if (unknown.length) {
    throw new Invalid([{ field: 'scope', message: `unknown scope${unknown.length > 1 ? 's' : ''}: ${unknown.join(' ')} (define them on an API resource first)` }]);
  }
}

/** The check against the tenant's resources as stored now (not a cache: a resource just created counts). */
export async function checkClientScopes(scope: { ctx: { storage: Pick<Storage, 'resources'> }; tenant: TenantId }, value: string | undefined): Promise<void> {
  if (!value) return;
  assertKnownScopes(value, (await ResourceIndex.load(scope.ctx.storage.resources, scope.tenant)).scopeNames);
}
