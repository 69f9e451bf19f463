/**
 * The console asks for every tenant-level Management scope (CONTRACT.md, "Administration
 * console": `admin` gets every tenant-level `svc:*` scope), and the platform scopes only on
 * `_platforms`. Its list is its own (admin/ is a separate build): this keeps it from falling
 * behind the API's (it lacked `svc:resources:*`, so the console's token could not read resources).
 */
import { describe, expect, it } from 'vitest';
import { consoleScopes } from '../../admin/src/config.js';
import { MANAGEMENT_SCOPES } from '../../src/resources/management-api.js';

const PLATFORM = ['svc:tenants:read', 'svc:tenants:write', 'svc:tenants:delete', 'svc:cross-tenant:read', 'svc:cross-tenant:write'];

describe('console scopes', () => {
  it('asks a tenant for every tenant-level Management scope and no platform one', () => {
    const asked = consoleScopes(false).split(' ');
    expect(asked.filter((s) => s.startsWith('svc:')).sort()).toEqual(MANAGEMENT_SCOPES.filter((s) => !PLATFORM.includes(s)).sort());
    expect(asked).toEqual(expect.arrayContaining(['openid', 'profile', 'email']));
  });

  it('adds the platform scopes on _platforms', () => {
    expect(consoleScopes(true).split(' ').filter((s) => s.startsWith('svc:')).sort()).toEqual([...MANAGEMENT_SCOPES].sort());
  });
});
