/**
 * Tenant configuration overrides on a running single-tenant service (both backends).
 *
 * The Management API for overrides is multi-tenant only (CONTRACT.md: tenant endpoints answer 404
 * problem+json in single-tenant mode; the API itself is tested in tenant-config-postgresql.test.ts).
 * Here the overrides of `default` are written to storage and announced on
 * `<prefix>:default:config:changed`, exactly what the PUT handler does, to prove the actor side:
 * token lifetimes, rate limits and discovery follow the tenant's merged configuration without a
 * restart, and a stored value beyond a ceiling is clamped.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { configChangedChannel } from '../../src/events/bus.js';
import type { SectionName } from '../../src/tenancy/config/sections.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { bootstrap, peekJwt, postForm, requestToken, serviceClient } from '../helpers/oauth.js';
import { expectProblem } from '../helpers/problem.js';

/** The tenant's stored configuration documents, without the start-up's own bootstrap records (src/bootstrap-record.ts). */
const storedSections = async (tenant: string) =>
  Object.fromEntries(Object.entries(await t.app.ctx.storage.tenantConfig.get(tenant)).filter(([name]) => !name.startsWith('bootstrap_')));

let t: TestApp;
let admin: string;

beforeAll(async () => {
  // One long window: the rate-limit counts below stay in it.
  t = await startTestApp({ SECURITY_RATE_LIMIT_WINDOW_SECONDS: '3600' });
  admin = await t.token('svc:clients:read svc:clients:write svc:cross-tenant:read svc:cross-tenant:write');
});
afterAll(async () => t?.close());

/** Stores a section for `default` and announces it, as PUT /api/v1/tenants/default/config/:section would. */
async function override(section: SectionName, data: Record<string, unknown>): Promise<void> {
  const { storage, events, config } = t.app.ctx;
  await storage.tenantConfig.put('default', section, data);
  await events.publish(configChangedChannel('default', config.redis.key_prefix), { tenant: 'default', section, at: new Date().toISOString() });
}

/** Polls until check passes or `ms` elapse (the change must reach the actor within a second). */
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

describe('the tenant config endpoints in single-tenant mode', () => {
  it('answer 404 problem+json (CONTRACT.md)', async () => {
    expectProblem(await api(t, 'GET', '/api/v1/tenants/default/config', { token: admin }), 404, 'not-found', '/api/v1/tenants/default/config');
    const put = await api(t, 'PUT', '/api/v1/tenants/default/config/branding', { token: admin, body: { company_name: 'Acme' } });
    expectProblem(put, 404, 'not-found', '/api/v1/tenants/default/config/branding');
    expect(await storedSections('default')).toEqual({});
  });
});

describe("the tenant's own security section (PUT /api/v1/config/security)", () => {
  it('refuses every second-factor method off while MFA is required, and stores nothing', async () => {
    const token = await t.token('svc:config:read svc:config:write');
    const before = await storedSections('default');
    const both = { totp_enabled: false, webauthn_enabled: false };
    const res = await api(t, 'PUT', '/api/v1/config/security', { token, body: { mfa: { required: true, ...both } } });
    expectProblem(res, 422, 'validation', '/api/v1/config/security');
    expect(res.json.errors.map((e: { field: string }) => e.field)).toEqual(['mfa.totp_enabled', 'mfa.webauthn_enabled']);
    expect(await storedSections('default')).toEqual(before);
    // One method on, or MFA not required: accepted.
    expect((await api(t, 'PUT', '/api/v1/config/security', { token, body: { mfa: { required: true, totp_enabled: false } } })).status).toBe(200);
    expect((await api(t, 'PUT', '/api/v1/config/security', { token, body: { mfa: both } })).status).toBe(200);
    expect((await api(t, 'PUT', '/api/v1/config/security', { token, body: {} })).status).toBe(200);
  });
});

describe('the actor follows its tenant overrides without a restart', () => {
  it('token lifetimes: the Management fast path and oidc-provider both issue 120 s tokens', async () => {
    const before = await requestToken(t, bootstrap, 'svc:clients:read');
    expect(before.json.expires_in).toBe(3600);

    await override('oidc', { ttl: { access_token: 120 } });
    const jwt = await within(1000, async () => {
      const res = await requestToken(t, bootstrap, 'svc:clients:read');
      expect(res.json.expires_in).toBe(120);
      return res.json.access_token as string;
    });
    const { payload } = peekJwt(jwt);
    expect(payload.exp - payload.iat).toBe(120);
    // No resource and no svc:* scope: oidc-provider's own client_credentials (the rebuilt provider).
    const opaque = await postForm(t, '/token', { grant_type: 'client_credentials' }, bootstrap);
    expect(opaque.status).toBe(200);
    expect(opaque.json.expires_in).toBe(120);
    expect(t.app.pool.peek('default')!.config.oidc.ttl.access_token).toBe(120);
  });

  it('clamps a stored lifetime above the ceiling to 86400 s', async () => {
    await override('oidc', { ttl: { access_token: 10 ** 7 } });
    await within(1000, async () => expect((await requestToken(t, bootstrap, 'svc:clients:read')).json.expires_in).toBe(86400));
  });

  it('rate limits: a lower tenant limit applies at once', async () => {
    const reader = await serviceClient(t, admin, 'svc:clients:read');
    const token = (await requestToken(t, reader, 'svc:clients:read')).json.access_token as string;
    expect((await api(t, 'GET', '/api/v1/clients', { token })).headers.get('ratelimit-limit')).toBe('600');

    await override('security', { rate_limit: { read: 3 } });
    await within(1000, async () => expect(t.app.pool.peek('default')!.config.security.rate_limit.read).toBe(3));
    // One request counted already in this window.
    const second = await api(t, 'GET', '/api/v1/clients', { token });
    expect(second.status).toBe(200);
    expect(second.headers.get('ratelimit-limit')).toBe('3');
    expect(second.headers.get('ratelimit-remaining')).toBe('1');
    expect((await api(t, 'GET', '/api/v1/clients', { token })).status).toBe(200);
    expectProblem(await api(t, 'GET', '/api/v1/clients', { token }), 429, 'rate-limited', '/api/v1/clients');
    // Writes keep the global limit.
    const write = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'still 120' } });
    expect(write.headers.get('ratelimit-limit')).toBe('120');

    await override('security', {});
    await within(1000, async () => expect((await api(t, 'GET', '/api/v1/clients', { token })).status).toBe(200));
  });

  it("the organisation's description and links (application.description, integrations.urls): on the pages, escaped, and in discovery", async () => {
    const writer = await t.token('svc:config:write');
    const app = await api(t, 'PUT', '/api/v1/config/application', { token: writer, body: { title: 'Acme', description: '<b>Orders</b> & invoices' } });
    expect(app.status, app.text).toBe(200);
    const urls = { website: 'https://www.acme.example/', privacy_policy: 'https://acme.example/privacy?a=1&b="2"', terms: 'https://acme.example/tos' };
    const integrations = await api(t, 'PUT', '/api/v1/config/integrations', { token: writer, body: { urls } });
    expect(integrations.status, integrations.text).toBe(200);
    // Still refused: what nothing can act on (there is no SMS channel).
    expect((await api(t, 'PUT', '/api/v1/config/notifications', { token: writer, body: { sms: { enabled: true } } })).status).toBe(422);
    const page = await within(1000, async () => {
      const text = await (await fetch(`${t.url}/account/password/forgot`)).text();
      expect(text).toContain('&lt;b&gt;Orders&lt;/b&gt; &amp; invoices');
      return text;
    });
    expect(page).not.toContain('<b>Orders</b>');
    expect(page).toContain('<a href="https://www.acme.example/" rel="noopener noreferrer">www.acme.example</a>');
    expect(page).toContain('<a href="https://acme.example/privacy?a=1&amp;b=&quot;2&quot;" rel="noopener noreferrer">Privacy policy</a>');
    expect(page).toContain('<a href="https://acme.example/tos" rel="noopener noreferrer">Terms of use</a>');
    // Discovery names the organisation's policy and terms unless its own discovery settings name others.
    const doc = await within(1000, async () => {
      const res = await api(t, 'GET', '/oidc/v1/.well-known/openid-configuration');
      expect(res.json.op_policy_uri).toBe(urls.privacy_policy);
      return res.json;
    });
    expect(doc.op_tos_uri).toBe(urls.terms);
    expect((await api(t, 'PUT', '/api/v1/config/integrations', { token: writer, body: { urls: { website: 'javascript:alert(1)' } } })).status).toBe(422);
  });

  it('discovery: the tenant metadata is published', async () => {
    await override('oidc', { discovery: { op_tos_uri: 'https://acme.example/terms', service_documentation: 'https://docs.acme.example' } });
    const doc = await within(1000, async () => {
      const res = await api(t, 'GET', '/oidc/v1/.well-known/openid-configuration');
      expect(res.json.op_tos_uri).toBe('https://acme.example/terms');
      return res.json;
    });
    expect(doc.service_documentation).toBe('https://docs.acme.example');
    expect(doc.claim_types_supported).toEqual(['normal']);
    // That section no longer sets a lifetime: back to the global 3600 s.
    expect((await requestToken(t, bootstrap, 'svc:clients:read')).json.expires_in).toBe(3600);
  });

  it("a change made through this instance reloads its actor once: its own config:changed event is skipped, another instance's is not", async () => {
    const { events, config, tenantStates } = t.app.ctx;
    const prefix = config.redis.key_prefix;
    const writer = await t.token('svc:resources:write');
    const actor = await t.app.pool.get('default');
    const reload = vi.spyOn(actor, 'reload');
    const invalidate = vi.spyOn(tenantStates, 'invalidate');
    try {
      const put = await api(t, 'PUT', '/api/v1/claims', { token: writer, body: { claims: [{ name: 'tier', value: 'gold' }] } });
      expect(put.status, put.text).toBe(200);
      expect(reload).toHaveBeenCalledTimes(1);
      // One publisher's events arrive in order: once this marker is routed, the PUT's event was too.
      await events.publish(configChangedChannel('marker', prefix), { tenant: 'marker', section: 'oidc', at: new Date().toISOString() });
      await within(1000, async () => expect(invalidate).toHaveBeenCalledWith('marker'));
      // A second reload would have dropped the oidc-provider build the first one made.
      expect(reload).toHaveBeenCalledTimes(1);

      await events.publish(configChangedChannel('default', prefix), { tenant: 'default', section: 'oidc', at: new Date().toISOString(), origin: 'another-instance' });
      await within(1000, async () => expect(reload).toHaveBeenCalledTimes(2));
    } finally {
      reload.mockRestore();
      invalidate.mockRestore();
      expect((await api(t, 'PUT', '/api/v1/claims', { token: writer, body: { claims: [] } })).status).toBe(200);
    }
  });
});
