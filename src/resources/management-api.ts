/**
 * The Management API as a resource (spec section 5): its identifier and scopes. It lives with the
 * resources domain (the tenant's own APIs are its siblings); src/oidc/scopes.ts re-exports it.
 */
export const MANAGEMENT_RESOURCE = 'urn:svc:api:v1';

export const MANAGEMENT_SCOPES = [
  'svc:clients:read', 'svc:clients:write', 'svc:clients:delete',
  'svc:users:read', 'svc:users:write', 'svc:users:delete',
  'svc:sessions:read', 'svc:sessions:revoke',
  'svc:jwks:read', 'svc:jwks:rotate',
  'svc:audit:read', 'svc:stats:read',
  'svc:registration-tokens:read', 'svc:registration-tokens:write', 'svc:registration-tokens:delete',
  'svc:tenants:read', 'svc:tenants:write', 'svc:tenants:delete',
  'svc:cross-tenant:read', 'svc:cross-tenant:write',
  'svc:resources:read', 'svc:resources:write', 'svc:resources:delete',
  // The addressed tenant's own configuration (GET /api/v1/config, PUT /api/v1/config/:section).
  'svc:config:read', 'svc:config:write',
] as const;

export type ManagementScope = (typeof MANAGEMENT_SCOPES)[number];

const SET = new Set<string>(MANAGEMENT_SCOPES);

export function isManagementScope(scope: string): boolean {
  return SET.has(scope);
}
