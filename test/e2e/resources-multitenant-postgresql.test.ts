/**
 * Issue 19 in multi-tenant mode (PostgreSQL + Redis, two instances of one deployment): tenants'
 * resources are apart (the same identifier in two tenants, tokens of one refused by the other's
 * resource server), a resource created on one instance is usable at once on the other, and the
 * audit list's `tenant` filter works for a `_platforms` cross-tenant token only.
 */
import { randomBytes } from 'node:crypto';
import { createLocalJWKSet } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropRedisKeys, startTestApp, TEST_REDIS_URL, type TestApp } from '../helpers/app.js';
import { RESOURCE, basic, bootstrap, type Credentials } from '../helpers/oauth.js';
import { startProtectedApi, type ProtectedApi } from '../helpers/resource-server.js';

const ORDERS = 'https://orders.example.com/';
const prefix = `svctest-res-${process.pid}-${randomBytes(4).toString('hex')}`;

let a: TestApp;
let b: TestApp;
let platform: string;
const clients: Record<string, Credentials> = {};
let acmeApi: ProtectedApi;

async function token(t: TestApp, tenant: string, creds: Credentials, resource: string, scope: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`${t.url}/oidc/v1/token`, {
    method: 'POST',
    headers: { 'x-tenant-id': tenant, authorization: basic(creds), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope }),
  });
  return { status: res.status, json: await res.json() };
}

const call = async (t: TestApp, method: string, path: string, opts: { token?: string; body?: unknown; tenant?: string } = {}) => {
  const headers: Record<string, string> = { authorization: `Bearer ${opts.token ?? platform}` };
  if (opts.tenant) headers['x-tenant-id'] = opts.tenant;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${t.url}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
};

const jwksOf = async (tenant: string) => {
  const res = await fetch(`${a.url}/oidc/v1/jwks`, { headers: { 'x-tenant-id': tenant } });
  return createLocalJWKSet(await res.json());
};

beforeAll(async () => {
  const shared = { MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix };
  a = await startTestApp(shared);
  b = await startTestApp({ ...shared, STORAGE_POSTGRESQL_URL: a.app.ctx.config.storage.postgresql.url!, BASE_URL: a.app.ctx.config.base_url });
  const scopes = 'svc:tenants:write svc:cross-tenant:read svc:cross-tenant:write svc:clients:write svc:resources:write svc:audit:read';
  const issued = await token(a, '_platforms', bootstrap, RESOURCE, scopes);
  expect(issued.status, JSON.stringify(issued.json)).toBe(200);
  platform = issued.json.access_token;
  for (const slug of ['acme', 'globex']) {
    expect((await call(a, 'POST', '/api/v1/tenants', { body: { slug, display_name: slug } })).status).toBe(201);
    // The same identifier in both tenants: unique per tenant only.
    const r = await call(a, 'POST', '/api/v1/resources', { tenant: slug, body: { identifier: ORDERS, name: 'Orders', scopes: [{ name: 'read:orders' }] } });
    expect(r.status, r.text).toBe(201);
    const c = await call(a, 'POST', '/api/v1/clients', { tenant: slug, body: { client_name: `${slug} backend`, grant_types: ['client_credentials'], scope: 'read:orders svc:audit:read' } });
    expect(c.status, c.text).toBe(201);
    clients[slug] = { id: c.json.data.client_id, secret: c.json.data.client_secret };
  }
  const acmeIssuer = a.app.ctx.resolver.issuerOf('acme');
  acmeApi = await startProtectedApi({ issuer: acmeIssuer, audience: ORDERS, requiredScope: 'read:orders', keys: await jwksOf('acme') });
});

afterAll(async () => {
  await acmeApi?.close();
  await b?.close();
  await a?.close();
  await dropRedisKeys(TEST_REDIS_URL, prefix);
});

describe('resources across tenants and instances', () => {
  it("acme's resource server accepts acme's token and refuses globex's token for the same identifier", async () => {
    const mine = await token(b, 'acme', clients.acme!, ORDERS, 'read:orders');
    expect(mine.status, JSON.stringify(mine.json)).toBe(200);
    expect((await acmeApi.call(mine.json.access_token)).status).toBe(200);
    const theirs = await token(a, 'globex', clients.globex!, ORDERS, 'read:orders');
    expect(theirs.status).toBe(200);
    expect((await acmeApi.call(theirs.json.access_token)).status).toBe(401);
    // A client of globex cannot get an acme token at all.
    expect((await token(a, 'acme', clients.globex!, ORDERS, 'read:orders')).json.error).toBe('invalid_client');
  });

  it("a tenant's resources are invisible to another tenant's token", async () => {
    const acmeToken = (await token(a, 'acme', { id: clients.acme!.id, secret: clients.acme!.secret }, RESOURCE, 'svc:audit:read')).json.access_token;
    const list = await call(a, 'GET', '/api/v1/resources', { tenant: 'globex', token: acmeToken });
    expect(list.status).toBe(401);
  });

  it('a resource created through one instance is usable at once through the other, and its deletion too', async () => {
    const created = await call(a, 'POST', '/api/v1/resources', { tenant: 'acme', body: { identifier: 'https://new.example/', name: 'New', scopes: [{ name: 'new:read' }] } });
    expect(created.status).toBe(201);
    // Warm b's actor first, so the change has to arrive by the event.
    expect((await token(b, 'acme', clients.acme!, ORDERS, 'read:orders')).status).toBe(200);
    const patched = await call(a, 'PATCH', `/api/v1/clients/${clients.acme!.id}`, { tenant: 'acme', body: { scope: 'read:orders new:read svc:audit:read' } });
    expect(patched.status, patched.text).toBe(200);
    let got: { status: number; json: any } | undefined;
    for (let i = 0; i < 50; i++) {
      got = await token(b, 'acme', clients.acme!, 'https://new.example/', 'new:read');
      if (got.status === 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(got!.status, JSON.stringify(got!.json)).toBe(200);
    expect((await call(a, 'DELETE', `/api/v1/resources/${created.json.data.id}`, { tenant: 'acme', token: platform })).status).toBe(403);
  });
});

describe('list cursors', () => {
  it("are bound to their tenant: another tenant's cursor is a 422 on after, not an empty page", async () => {
    // Each tenant's own audit log (a resource and a client created in each), with its own token.
    const own = async (slug: string) => (await token(a, slug, clients[slug]!, RESOURCE, 'svc:audit:read')).json.access_token as string;
    const [acme, globex] = [await own('acme'), await own('globex')];
    const first = await call(a, 'GET', '/api/v1/audit?limit=1', { tenant: 'globex', token: globex });
    const cursor = encodeURIComponent(first.json.pagination.next_cursor);
    expect((await call(a, 'GET', `/api/v1/audit?limit=1&after=${cursor}`, { tenant: 'globex', token: globex })).status).toBe(200);
    const foreign = await call(a, 'GET', `/api/v1/audit?limit=100&after=${cursor}`, { tenant: 'acme', token: acme });
    expect(foreign.status, foreign.text).toBe(422);
    expect(foreign.json.errors).toEqual([{ field: 'after', message: 'Invalid cursor' }]);
    // The audit log read across tenants: a cursor of acme's log is not one of globex's.
    const log = await call(a, 'GET', '/api/v1/audit?tenant=acme&limit=1', { tenant: '_platforms' });
    const logCursor = encodeURIComponent(log.json.pagination.next_cursor);
    expect((await call(a, 'GET', `/api/v1/audit?tenant=acme&limit=1&after=${logCursor}`, { tenant: '_platforms' })).status).toBe(200);
    expect((await call(a, 'GET', `/api/v1/audit?tenant=globex&limit=1&after=${logCursor}`, { tenant: '_platforms' })).status).toBe(422);
  });
});

describe('audit tenant filter', () => {
  it('a _platforms cross-tenant token lists a named tenant; a tenant token naming another is 403', async () => {
    const listed = await call(a, 'GET', '/api/v1/audit?tenant=acme&type=resource.created', { tenant: '_platforms' });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.json.data.length).toBeGreaterThan(0);
    expect(listed.json.data.every((e: { tenant_id: string }) => e.tenant_id === 'acme')).toBe(true);
    const unknown = await call(a, 'GET', '/api/v1/audit?tenant=nosuch', { tenant: '_platforms' });
    expect(unknown.status).toBe(404);
    const acmeToken = (await token(a, 'acme', clients.acme!, RESOURCE, 'svc:audit:read')).json.access_token;
    const own = await call(a, 'GET', '/api/v1/audit?tenant=acme', { tenant: 'acme', token: acmeToken });
    expect(own.status).toBe(200);
    const other = await call(a, 'GET', '/api/v1/audit?tenant=globex', { tenant: 'acme', token: acmeToken });
    expect(other.status).toBe(403);
    expect(other.json.type).toBe('urn:svc:error:insufficient-scope');
  });
});
