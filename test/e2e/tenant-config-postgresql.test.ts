/**
 * The tenant configuration API (spec 1.5, 4.9) in multi-tenant mode, on two instances sharing one
 * PostgreSQL database and one Redis: GET/PUT with `_platforms` tokens, validation with field
 * names, floors and ceilings, secrets sealed at rest and masked, audit, and a change reaching the
 * tenant's actor on the instance that handled it (before the response) and on the other one
 * (within a second), without a restart.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MASK, sealAad } from '../../src/tenancy/config/secrets.js';
import { api, dropRedisKeys, startTestApp, TEST_REDIS_URL, type TestApp } from '../helpers/app.js';
import { RESOURCE, basic, bootstrap, peekJwt, type Credentials } from '../helpers/oauth.js';
import { expectProblem, expectUnauthorized, expectValidation } from '../helpers/problem.js';

const TENANT = 'acme';
const CONFIG = `/api/v1/tenants/${TENANT}/config`;
const prefix = `svctest-tcfg-${process.pid}-${randomBytes(4).toString('hex')}`;

let a: TestApp; // handles the PUTs
let b: TestApp; // the other instance
let platform: string; // `_platforms` token: tenants, config, cross-tenant clients and audit
let acmeClient: Credentials;

/** client_credentials for the Management API at `tenant`'s issuer. */
async function tokenAt(t: TestApp, tenant: string, creds: Credentials, scope: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`${t.url}/oidc/v1/token`, {
    method: 'POST',
    headers: { 'x-tenant-id': tenant, authorization: basic(creds), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource: RESOURCE, scope }),
  });
  return { status: res.status, json: await res.json() };
}

const call = (t: TestApp, method: string, path: string, opts: { token?: string; body?: unknown; tenant?: string } = {}) =>
  api(t, method, path, { token: opts.token ?? platform, body: opts.body, headers: opts.tenant ? { 'x-tenant-id': opts.tenant } : {} });

const put = (section: string, body: unknown, t = a) => call(t, 'PUT', `${CONFIG}/${section}`, { body });

async function within<T>(ms: number, check: () => Promise<T>): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > end) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

beforeAll(async () => {
  const shared = { MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix, SECURITY_RATE_LIMIT_WINDOW_SECONDS: '3600' };
  a = await startTestApp(shared);
  // The same deployment: one database, one Redis prefix, one public address (so one issuer per tenant).
  b = await startTestApp({ ...shared, STORAGE_POSTGRESQL_URL: a.app.ctx.config.storage.postgresql.url!, BASE_URL: a.app.ctx.config.base_url });
  const scopes = 'svc:tenants:read svc:tenants:write svc:cross-tenant:read svc:cross-tenant:write svc:clients:read svc:clients:write svc:audit:read';
  const issued = await tokenAt(a, '_platforms', bootstrap, scopes);
  expect(issued.status, JSON.stringify(issued.json)).toBe(200);
  platform = issued.json.access_token;

  expect((await call(a, 'POST', '/api/v1/tenants', { body: { slug: TENANT, display_name: 'Acme' } })).status).toBe(201);
  // A client of acme itself, allowed even the cross-tenant scopes: its tokens still cannot manage tenants.
  const created = await call(a, 'POST', '/api/v1/clients', {
    tenant: TENANT,
    body: { client_name: 'acme backend', grant_types: ['client_credentials'], scope: 'svc:clients:read svc:cross-tenant:read svc:cross-tenant:write' },
  });
  expect(created.status, created.text).toBe(201);
  acmeClient = { id: created.json.data.client_id, secret: created.json.data.client_secret };
});

afterAll(async () => {
  await b?.close();
  await a?.close();
  await dropRedisKeys(TEST_REDIS_URL, prefix);
});

describe('GET /api/v1/tenants/:slug/config', () => {
  it('reads {} for a tenant without overrides, and 404 for an unknown tenant', async () => {
    const res = await call(a, 'GET', CONFIG);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ data: {} });
    expectProblem(await call(a, 'GET', '/api/v1/tenants/nope/config'), 404, 'not-found', '/api/v1/tenants/nope/config');
    expectProblem(await call(a, 'PUT', '/api/v1/tenants/nope/config/branding', { body: { company_name: 'x' } }), 404, 'not-found', '/api/v1/tenants/nope/config/branding');
    // Nothing was stored for it, and storage itself refuses a tenant without a record (the write guard, migration 110).
    await expect(a.app.ctx.storage.tenantConfig.get('nope')).rejects.toThrow(/nope not found/);
  });

  it('needs a `_platforms` token: a token of the tenant itself is refused even with the cross-tenant scopes', async () => {
    const own = await tokenAt(a, TENANT, acmeClient, 'svc:cross-tenant:read svc:cross-tenant:write');
    expect(own.status).toBe(200);
    expectUnauthorized(await call(a, 'GET', CONFIG, { token: own.json.access_token, tenant: TENANT }), CONFIG);
    expectUnauthorized(await call(a, 'PUT', `${CONFIG}/branding`, { token: own.json.access_token, tenant: TENANT, body: { company_name: 'Mine' } }), `${CONFIG}/branding`);
  });
});

describe('PUT /api/v1/tenants/:slug/config/:section', () => {
  it('applies token lifetimes on this instance before answering and on the other within a second', async () => {
    // Both instances have a live actor for acme.
    for (const t of [a, b]) expect((await tokenAt(t, TENANT, acmeClient, 'svc:clients:read')).json.expires_in).toBe(3600);

    const res = await put('oidc', { ttl: { access_token: 120 } });
    expect(res.status, res.text).toBe(200);
    expect(res.json.data.oidc).toEqual({ ttl: { access_token: 120 } });

    const here = await tokenAt(a, TENANT, acmeClient, 'svc:clients:read');
    expect(here.json.expires_in).toBe(120);
    const { payload } = peekJwt(here.json.access_token);
    expect(payload.exp - payload.iat).toBe(120);
    expect(payload.iss).toBe(a.app.ctx.resolver.issuerOf(TENANT));

    const started = Date.now();
    await within(1000, async () => expect((await tokenAt(b, TENANT, acmeClient, 'svc:clients:read')).json.expires_in).toBe(120));
    expect(Date.now() - started).toBeLessThan(1000);
    // Other tenants keep the global lifetime.
    expect((await tokenAt(a, '_platforms', bootstrap, 'svc:tenants:read')).json.expires_in).toBe(3600);
  });

  it('refuses values beyond the ceilings with 422 naming the field, and keeps the stored configuration', async () => {
    const path = `${CONFIG}/oidc`;
    const body = expectValidation(await put('oidc', { ttl: { access_token: 86401, refresh_token: 7776001 } }), path, 'ttl.access_token');
    expect(body.errors).toEqual([
      { field: 'ttl.access_token', message: 'must be at most 86400 (oidc.ttl.access_token: platform ceiling)' },
      { field: 'ttl.refresh_token', message: 'must be at most 7776000 (oidc.ttl.refresh_token: platform ceiling)' },
    ]);
    expectValidation(await put('security', { rate_limit: { read: 601 } }), `${CONFIG}/security`, 'rate_limit.read');
    expectValidation(await put('security', { password_policy: { min_length: 6 } }), `${CONFIG}/security`, 'password_policy.min_length');
    expect((await call(a, 'GET', CONFIG)).json.data.oidc).toEqual({ ttl: { access_token: 120 } });
  });

  it('refuses an unknown section, unknown fields and bodies that are not objects', async () => {
    expectValidation(await put('billing', { plan: 'gold' }), `${CONFIG}/billing`, 'section');
    // Settings nothing acts on yet are refused, not stored and ignored (docs/settings.md).
    for (const [section, body, field] of [
      ['notifications', { email: { enabled: true } }, 'email'],
      ['notifications', { sms: { enabled: true, provider: 'twilio', api_key: 'k' } }, 'sms'],
    ] as const) {
      const refused = expectValidation(await put(section, body), `${CONFIG}/${section}`, field);
      expect(JSON.stringify(refused.errors)).toContain(`not supported yet (${section}.${field}`);
    }
    expectValidation(await put('branding', { company_name: 'Acme', companyName: 'Acme' }), `${CONFIG}/branding`, 'companyName');
    expectValidation(await put('oidc', { ttl: { access_token: 60, acess_token: 60 } }), `${CONFIG}/oidc`, 'ttl.acess_token');
    expectValidation(await put('branding', ['x']), `${CONFIG}/branding`, 'body');
    const text = await call(a, 'PUT', `${CONFIG}/branding`, { body: '{"company_name": ' });
    expectProblem(text, 400, 'bad-request', `${CONFIG}/branding`);
  });

  it('applies a lower rate limit to the tenant on every instance (counted together in Redis)', async () => {
    const res = await put('security', { rate_limit: { read: 2 } });
    expect(res.status, res.text).toBe(200);
    const reader = (await tokenAt(a, TENANT, acmeClient, 'svc:clients:read')).json.access_token as string;
    const first = await call(a, 'GET', '/api/v1/clients', { token: reader, tenant: TENANT });
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-limit')).toBe('2');
    await within(1000, async () => expect(b.app.pool.peek(TENANT)?.config.security.rate_limit.read).toBe(2));
    const second = await call(b, 'GET', '/api/v1/clients', { token: reader, tenant: TENANT });
    expect(second.status).toBe(200);
    expect(second.headers.get('ratelimit-remaining')).toBe('0');
    expectProblem(await call(a, 'GET', '/api/v1/clients', { token: reader, tenant: TENANT }), 429, 'rate-limited', '/api/v1/clients');
    // The platform's own limits are untouched.
    expect((await call(a, 'GET', CONFIG)).headers.get('ratelimit-limit')).toBe('600');
    expect((await put('security', {})).status).toBe(200);
  });

  it('seals secrets at rest, masks them in every response and keeps them when the mask is sent back', async () => {
    const clear = `smtp-${randomBytes(8).toString('hex')}`;
    const res = await put('integrations', { smtp: { host: 'smtp.acme.test', port: 587, password: clear } });
    expect(res.status, res.text).toBe(200);
    expect(res.json.data.integrations).toEqual({ smtp: { host: 'smtp.acme.test', port: 587, password: MASK } });
    expect(res.text).not.toContain(clear);

    const rows = await a.sql("SELECT data::text AS data FROM tenant_config WHERE tenant_id = ? AND section = 'integrations'", [TENANT]);
    expect(rows).toHaveLength(1);
    const raw = String(rows[0]!.data);
    expect(raw).not.toContain(clear);
    const sealed = JSON.parse(raw).smtp.password as string;
    expect(sealed).toMatch(/^v1\./);
    expect(a.app.ctx.sealer.unseal(sealed, sealAad(TENANT, 'integrations', ['smtp', 'password']))).toBe(clear);

    const read = await call(b, 'GET', CONFIG);
    expect(read.json.data.integrations.smtp.password).toBe(MASK);
    expect(read.text).not.toContain(clear);

    // GET, edit, PUT back with the mask: the secret stays as it was.
    const edited = { ...read.json.data.integrations, smtp: { ...read.json.data.integrations.smtp, host: 'mail.acme.test' } };
    expect((await put('integrations', edited)).json.data.integrations.smtp).toEqual({ host: 'mail.acme.test', port: 587, password: MASK });
    const after = await a.sql("SELECT data::text AS data FROM tenant_config WHERE tenant_id = ? AND section = 'integrations'", [TENANT]);
    expect(JSON.parse(String(after[0]!.data)).smtp.password).toBe(sealed);

  });

  it('answers with the whole configuration and audits section and fields, never values', async () => {
    const res = await put('branding', { company_name: 'Acme Inc.', palette_light: { primary: '#1a73e8' } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.json.data).sort()).toEqual(['branding', 'integrations', 'oidc', 'security']);
    expect(res.json.data.branding).toEqual({ company_name: 'Acme Inc.', palette_light: { primary: '#1a73e8' } });

    const platformLog = await call(a, 'GET', '/api/v1/audit?type=tenant.config_updated&limit=100', { tenant: '_platforms' });
    expect(platformLog.status, platformLog.text).toBe(200);
    const sections = platformLog.json.data.map((e: { details: { section: string } }) => e.details.section);
    expect(sections).toEqual(expect.arrayContaining(['oidc', 'security', 'integrations', 'branding']));
    const entry = platformLog.json.data.find((e: { details: { section: string } }) => e.details.section === 'integrations');
    expect(entry).toMatchObject({ tenant_id: '_platforms', client_id: bootstrap.id, details: { tenant: TENANT, section: 'integrations', fields: ['smtp'] } });
    expect(platformLog.text).not.toMatch(/smtp-[0-9a-f]{16}|v1\./);

    // The tenant's own log has it too (read with a cross-tenant token).
    const tenantLog = await call(a, 'GET', '/api/v1/audit?type=tenant.config_updated&limit=100', { tenant: TENANT });
    expect(tenantLog.status, tenantLog.text).toBe(200);
    expect(tenantLog.json.data.find((e: { details: { section: string } }) => e.details.section === 'branding')).toMatchObject({ tenant_id: TENANT, details: { by_tenant: '_platforms' } });
  });
});
