/** What the server wrote into the shell for this tenant (src/admin/static-console.ts). */
export interface ConsoleConfig {
  tenant: string;
  issuer: string;
  platform: boolean;
  multiTenant: boolean;
}

export const CLIENT_ID = 'svc-admin';
export const API_RESOURCE = 'urn:svc:api:v1';
export const BASE = '/admin';

export function readConfig(): ConsoleConfig {
  const meta = document.querySelector<HTMLMetaElement>('meta[name="svc-console"]');
  const raw = meta?.content ?? '';
  if (raw.startsWith('{')) return JSON.parse(raw) as ConsoleConfig;
  // Served by something other than the service (vite dev): the default tenant of this origin.
  return { tenant: 'default', issuer: `${location.origin}/oidc/v1`, platform: false, multiTenant: false };
}

/** Scopes the console asks for; the role decides which the user is granted. */
export function consoleScopes(platform: boolean): string {
  const tenantScopes = [
    'svc:clients:read', 'svc:clients:write', 'svc:clients:delete',
    'svc:users:read', 'svc:users:write', 'svc:users:delete',
    'svc:sessions:read', 'svc:sessions:revoke',
    'svc:jwks:read', 'svc:jwks:rotate',
    'svc:audit:read', 'svc:stats:read',
    'svc:registration-tokens:read', 'svc:registration-tokens:write', 'svc:registration-tokens:delete',
    'svc:config:read', 'svc:config:write',
    'svc:resources:read', 'svc:resources:write', 'svc:resources:delete',
  ];
  const platformScopes = ['svc:tenants:read', 'svc:tenants:write', 'svc:tenants:delete', 'svc:cross-tenant:read', 'svc:cross-tenant:write'];
  return ['openid', 'profile', 'email', ...tenantScopes, ...(platform ? platformScopes : [])].join(' ');
}
