/**
 * Management API writes made in a tenant with another tenant's token (a `_platforms` token holding
 * svc:cross-tenant:write), in multi-tenant mode on PostgreSQL + Redis: the addressed tenant's entry
 * names the caller's tenant (`details.by_tenant`), and the caller's own log gets a copy naming the
 * tenant acted on (`details.tenant`), as a tenant configuration change already did
 * (tenant-config-postgresql.test.ts). A tenant's own client writes no such trace.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/storage/types.js';
import { api, dropRedisKeys, startTestApp, TEST_REDIS_URL, type TestApp } from '../helpers/app.js';
import { RESOURCE, basic, bootstrap, type Credentials } from '../helpers/oauth.js';

const TENANT = 'acme';
const prefix = `svctest-xaudit-${process.pid}-${randomBytes(4).toString('hex')}`;

let t: TestApp;
let platform: string; // `_platforms` bootstrap client: tenants, and cross-tenant writes and reads
let acmeAdmin: string; // a client of acme itself

async function tokenAt(tenant: string, creds: Credentials, scope: string): Promise<string> {
  const res = await fetch(`${t.url}/oidc/v1/token`, {
    method: 'POST',
    headers: { 'x-tenant-id': tenant, authorization: basic(creds), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource: RESOURCE, scope }),
  });
  const json = (await res.json()) as { access_token?: string };
  if (!json.access_token) throw new Error(`token at ${tenant}: ${res.status} ${JSON.stringify(json)}`);
  return json.access_token;
}

const call = (method: string, path: string, tenant: string, body?: unknown, token = platform) =>
  api(t, method, path, { token, body, headers: { 'x-tenant-id': tenant } });

/** Every entry of `type` in `tenant`'s log (read with the cross-tenant token, so through the API). */
async function log(tenant: string, type: string): Promise<AuditEntry[]> {
  const res = await call('GET', `/api/v1/audit?type=${type}&limit=100&tenant=${tenant}`, tenant === '_platforms' ? '_platforms' : TENANT);
  expect(res.status, res.text).toBe(200);
  return res.json.data as AuditEntry[];
}

beforeAll(async () => {
  t = await startTestApp({ MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix, SECURITY_RATE_LIMIT_WINDOW_SECONDS: '3600' });
  platform = await tokenAt('_platforms', bootstrap, [
    'svc:tenants:write svc:cross-tenant:read svc:cross-tenant:write svc:audit:read',
    'svc:clients:read svc:clients:write svc:users:read svc:users:write svc:resources:write',
  ].join(' '));
  expect((await call('POST', '/api/v1/tenants', '_platforms', { slug: TENANT, display_name: 'Acme' })).status).toBe(201);
  const own = await call('POST', '/api/v1/clients', TENANT, { client_name: 'acme admin', grant_types: ['client_credentials'], scope: 'svc:clients:write svc:users:write' });
  expect(own.status, own.text).toBe(201);
  acmeAdmin = await tokenAt(TENANT, { id: own.json.data.client_id, secret: own.json.data.client_secret }, 'svc:clients:write svc:users:write');
});

afterAll(async () => {
  await t?.close();
  await dropRedisKeys(TEST_REDIS_URL, prefix);
});

describe('a cross-tenant write', () => {
  it('names the acting tenant in the target entry and leaves a copy in the acting tenant\'s log (clients)', async () => {
    const created = await call('POST', '/api/v1/clients', TENANT, { client_name: 'made from platforms', tags: ['x'] });
    expect(created.status, created.text).toBe(201);
    const id = created.json.data.client_id as string;

    const target = (await log(TENANT, 'client.created')).filter((e) => e.details.client_id === id);
    expect(target).toHaveLength(1);
    expect(target[0]).toMatchObject({ tenant_id: TENANT, client_id: bootstrap.id, details: { client_id: id, client_name: 'made from platforms', by_tenant: '_platforms' } });

    const copies = (await log('_platforms', 'client.created')).filter((e) => e.details.client_id === id);
    expect(copies).toHaveLength(1);
    expect(copies[0]).toMatchObject({ tenant_id: '_platforms', client_id: bootstrap.id, user_id: null, ip_address: '127.0.0.1', details: { client_id: id, client_name: 'made from platforms', tenant: TENANT } });
    expect(copies[0]!.details).not.toHaveProperty('by_tenant');
    // The copy names the caller's secret-free facts only, as the original does.
    expect(JSON.stringify([...target, ...copies])).not.toContain(created.json.data.client_secret);
  });

  it('does the same for user writes (the affected user stays in details) and for writes audited after the change (resources)', async () => {
    const user = await call('POST', '/api/v1/users', TENANT, { email: `x-${randomBytes(3).toString('hex')}@acme.example.com`, password: 'a-good-password-1', role: 'admin' });
    expect(user.status, user.text).toBe(201);
    const uid = user.json.data.id as string;
    expect((await call('PUT', `/api/v1/users/${uid}`, TENANT, { email: user.json.data.email })).status).toBe(200);

    const target = (await log(TENANT, 'user.updated')).filter((e) => e.details.user_id === uid);
    expect(target).toHaveLength(1);
    expect(target[0]).toMatchObject({ user_id: uid, client_id: bootstrap.id, details: { fields: ['role'], method: 'PUT', by_tenant: '_platforms' } });
    const copies = (await log('_platforms', 'user.updated')).filter((e) => e.details.user_id === uid);
    expect(copies).toHaveLength(1);
    // In the caller's log the acting client is named; acme's user is not a `_platforms` user_id.
    expect(copies[0]).toMatchObject({ tenant_id: '_platforms', user_id: null, client_id: bootstrap.id, details: { user_id: uid, fields: ['role'], method: 'PUT', tenant: TENANT } });
    expect((await log('_platforms', 'user.created')).filter((e) => e.details.user_id === uid)).toHaveLength(1);

    const identifier = `https://api-${randomBytes(3).toString('hex')}.acme.example.com`;
    const resource = await call('POST', '/api/v1/resources', TENANT, { identifier, name: 'Orders' });
    expect(resource.status, resource.text).toBe(201);
    const rid = resource.json.data.id as string;
    expect((await log(TENANT, 'resource.created')).find((e) => e.details.resource_id === rid)).toMatchObject({ details: { identifier, by_tenant: '_platforms' } });
    expect((await log('_platforms', 'resource.created')).find((e) => e.details.resource_id === rid)).toMatchObject({ client_id: bootstrap.id, details: { identifier, tenant: TENANT } });
  });

  it('copies only what was stored: PATCHes applied again after a concurrent change, and refused writes, leave no extra copy', async () => {
    const created = await call('POST', '/api/v1/clients', TENANT, { client_name: 'patched at once' });
    const id = created.json.data.client_id as string;
    const patches = [{ description: 'D' }, { tags: ['T'] }, { logo_uri: 'https://l.example.com/x.png' }, { client_uri: 'https://c.example.com' }, { policy_uri: 'https://p.example.com' }, { contacts: ['z@example.com'] }];
    const answers = await Promise.all(patches.map((body) => call('PATCH', `/api/v1/clients/${id}`, TENANT, body)));
    const accepted = answers.filter((a) => a.status === 200).length;
    for (const a of answers) expect([200, 409], a.text).toContain(a.status);
    expect((await log(TENANT, 'client.updated')).filter((e) => e.details.client_id === id)).toHaveLength(accepted);
    expect((await log('_platforms', 'client.updated')).filter((e) => e.details.client_id === id)).toHaveLength(accepted);

    const refused = await call('PATCH', `/api/v1/clients/${id}`, TENANT, { client_name: '' });
    expect(refused.status).toBe(422);
    expect((await log('_platforms', 'client.updated')).filter((e) => e.details.client_id === id)).toHaveLength(accepted);
  });
});

describe("a tenant's own write", () => {
  it('has no by_tenant and no copy in `_platforms`', async () => {
    const created = await call('POST', '/api/v1/clients', TENANT, { client_name: 'made by acme' }, acmeAdmin);
    expect(created.status, created.text).toBe(201);
    const id = created.json.data.client_id as string;
    const target = (await log(TENANT, 'client.created')).find((e) => e.details.client_id === id);
    expect(target?.details).toEqual({ client_id: id, client_name: 'made by acme' });
    expect((await log('_platforms', 'client.created')).filter((e) => e.details.client_id === id)).toEqual([]);
  });
});
