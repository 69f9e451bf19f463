/**
 * The addressed tenant's own configuration (issue 16 follow-up): GET /api/v1/config and
 * PUT /api/v1/config/:section with `svc:config:read` / `svc:config:write`, on a single-tenant service
 * (the `default` tenant's overrides; both backends). Same domain code as the platform resource:
 * validation per field, floors and ceilings, secrets sealed at rest and masked in every response,
 * the change live on the actor before the response, an audit entry naming sections and fields only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MASK, sealAad } from '../../src/tenancy/config/secrets.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { bootstrap, requestToken } from '../helpers/oauth.js';
import { expectInsufficientScope, expectProblem, expectUnauthorized, expectValidation } from '../helpers/problem.js';

/** The tenant's stored configuration documents, without the start-up's own bootstrap records (src/bootstrap-record.ts). */
const storedSections = async (tenant: string) =>
  Object.fromEntries(Object.entries(await t.app.ctx.storage.tenantConfig.get(tenant)).filter(([name]) => !name.startsWith('bootstrap_')));

let t: TestApp;
let admin: string;
const CONFIG = '/api/v1/config';
const put = (section: string, body: unknown, token = admin) => api(t, 'PUT', `${CONFIG}/${section}`, { token, body });

beforeAll(async () => {
  t = await startTestApp({ SECURITY_RATE_LIMIT_WINDOW_SECONDS: '3600' });
  admin = await t.token('svc:config:read svc:config:write svc:audit:read');
});
afterAll(async () => t?.close());

describe('GET/PUT /api/v1/config', () => {
  it('reads {} when unset; needs a token and svc:config:read / svc:config:write', async () => {
    const empty = await api(t, 'GET', CONFIG, { token: admin });
    expect(empty.status, empty.text).toBe(200);
    expect(empty.json).toEqual({ data: {} });
    expectUnauthorized(await api(t, 'GET', CONFIG), CONFIG);
    const other = await t.token('svc:clients:read svc:clients:write svc:cross-tenant:read svc:cross-tenant:write');
    expectInsufficientScope(await api(t, 'GET', CONFIG, { token: other }), CONFIG, 'svc:config:read');
    expectInsufficientScope(await put('branding', { company_name: 'x' }, other), `${CONFIG}/branding`, 'svc:config:write');
    const reader = await t.token('svc:config:read');
    expectInsufficientScope(await put('branding', { company_name: 'x' }, reader), `${CONFIG}/branding`, 'svc:config:write');
    expect(await storedSections('default')).toEqual({});
  });

  it('applies a section to the running tenant before answering (token lifetime)', async () => {
    const res = await put('oidc', { ttl: { access_token: 120 } });
    expect(res.status, res.text).toBe(200);
    expect(res.json.data).toEqual({ oidc: { ttl: { access_token: 120 } } });
    expect((await requestToken(t, bootstrap, 'svc:clients:read')).json.expires_in).toBe(120);
    expect((await api(t, 'GET', CONFIG, { token: admin })).json.data.oidc).toEqual({ ttl: { access_token: 120 } });
  });

  it('refuses values beyond the platform ceilings and floors with 422 per field, changing nothing', async () => {
    const body = expectValidation(await put('oidc', { ttl: { access_token: 86401, refresh_token: 7776001 } }), `${CONFIG}/oidc`, 'ttl.access_token');
    expect(body.errors.map((e: { field: string }) => e.field)).toEqual(['ttl.access_token', 'ttl.refresh_token']);
    expectValidation(await put('security', { password_policy: { min_length: 6 } }), `${CONFIG}/security`, 'password_policy.min_length');
    expectValidation(await put('branding', { company_name: 'Acme', companyName: 'Acme' }), `${CONFIG}/branding`, 'companyName');
    expectValidation(await put('branding', ['x']), `${CONFIG}/branding`, 'body');
    expectValidation(await put('branding', { logo_light_url: 'javascript:alert(1)' }), `${CONFIG}/branding`, 'logo_light_url');
    expectProblem(await api(t, 'PUT', `${CONFIG}/branding`, { token: admin, body: '{"company_name": ' }), 400, 'bad-request', `${CONFIG}/branding`);
    // An unknown section is a resource that does not exist.
    expectProblem(await put('billing', { plan: 'gold' }), 404, 'not-found', `${CONFIG}/billing`);
    expectProblem(await put('__proto__', {}), 404, 'not-found', `${CONFIG}/__proto__`);
    expect(await storedSections('default')).toEqual({ oidc: { ttl: { access_token: 120 } } });
  });

  it('seals secrets at rest, never returns them, and keeps them when the mask is sent back', async () => {
    const clear = `smtp-secret-${Date.now()}`;
    const res = await put('integrations', { smtp: { host: 'smtp.example.test', port: 587, password: clear } });
    expect(res.status, res.text).toBe(200);
    expect(res.json.data.integrations).toEqual({ smtp: { host: 'smtp.example.test', port: 587, password: MASK } });
    expect(res.text).not.toContain(clear);
    const stored = (await storedSections('default')).integrations as { smtp: { password: string } };
    expect(stored.smtp.password).toMatch(/^v1\./);
    expect(t.app.ctx.sealer.unseal(stored.smtp.password, sealAad('default', 'integrations', ['smtp', 'password']))).toBe(clear);
    const read = await api(t, 'GET', CONFIG, { token: admin });
    expect(read.text).not.toContain(clear);
    expect(read.json.data.integrations.smtp.password).toBe(MASK);
    // Edit another field and send the mask back: the stored secret is unchanged.
    const edited = await put('integrations', { smtp: { host: 'mail.example.test', port: 587, password: MASK } });
    expect(edited.json.data.integrations.smtp).toEqual({ host: 'mail.example.test', port: 587, password: MASK });
    const after = (await storedSections('default')).integrations as { smtp: { password: string } };
    expect(after.smtp.password).toBe(stored.smtp.password);
    // The mask for a secret that was never set is refused at its field.
    expect((await put('integrations', { smtp: { host: 'mail.example.test', port: 587 } })).status).toBe(200);
    expectValidation(await put('integrations', { smtp: { host: 'mail.example.test', port: 587, password: MASK } }), `${CONFIG}/integrations`, 'smtp.password');
  });

  it('audits section and fields, never values', async () => {
    const log = await api(t, 'GET', '/api/v1/audit?type=tenant.config_updated&limit=100', { token: admin });
    expect(log.status, log.text).toBe(200);
    const entry = log.json.data.find((e: { details: { section: string } }) => e.details.section === 'integrations');
    expect(entry).toMatchObject({ tenant_id: 'default', details: { tenant: 'default', section: 'integrations', fields: ['smtp'] } });
    expect(log.text).not.toMatch(/smtp-secret-|v1\./);
  });
});
