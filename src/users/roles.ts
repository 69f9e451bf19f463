/**
 * What a user's role lets a token of theirs do on the Management API (CONTRACT.md, "Administration
 * console"; issue 12). A user token carries at most the intersection of what its client may
 * request, what was asked for and what this grants; the Management API intersects again with the
 * role the user holds when the token is USED, so a demotion, lock or deletion acts at once.
 *
 * - `admin`: every tenant-level `svc:*` scope of its own tenant (including `svc:config:read` /
 *   `svc:config:write`: the tenant's own Settings, GET/PUT /api/v1/config);
 * - `superadmin` / `platform_admin`, only in `_platforms` (elsewhere they grant nothing, as the
 *   Management API refuses to give them there anyway): also `svc:tenants:*` and `svc:cross-tenant:*`;
 * - any other role: nothing.
 */
import { MANAGEMENT_SCOPES, type ManagementScope } from '../resources/management-api.js';

/** Scopes that act on the platform (tenants) or across tenants, not inside one tenant. */
const PLATFORM_LEVEL = (s: string) => s.startsWith('svc:tenants:') || s.startsWith('svc:cross-tenant:');

export const TENANT_LEVEL_SCOPES: ReadonlySet<ManagementScope> = new Set(MANAGEMENT_SCOPES.filter((s) => !PLATFORM_LEVEL(s)));
const EVERY_SCOPE: ReadonlySet<ManagementScope> = new Set(MANAGEMENT_SCOPES);
const NONE: ReadonlySet<ManagementScope> = new Set();

/** The roles that administer the platform (`_platforms` only); superadmin includes platform_admin. */
export const PLATFORM_ADMIN_ROLES: ReadonlySet<string> = new Set(['platform_admin', 'superadmin']);

/** The Management scopes `role` grants in a tenant; `platformTenant` is true for `_platforms`. */
export function roleScopes(role: string, platformTenant: boolean): ReadonlySet<ManagementScope> {
  if (role === 'admin') return TENANT_LEVEL_SCOPES;
  if (platformTenant && PLATFORM_ADMIN_ROLES.has(role)) return EVERY_SCOPE;
  return NONE;
}

/** `scope` (space separated) narrowed to what `role` grants; the order of `scope` is kept. */
export function narrowToRole(scope: string, role: string, platformTenant: boolean): string {
  const allowed = roleScopes(role, platformTenant);
  return scope.split(' ').filter((s) => s && allowed.has(s as ManagementScope)).join(' ');
}
