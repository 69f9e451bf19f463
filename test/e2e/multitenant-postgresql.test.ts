/**
 * Multi-tenant mode end to end (spec 1.5, 4.9, 5 rule 4, 7; CONTRACT.md), on real PostgreSQL and
 * Redis: each app gets a migrated database of its own (test/helpers/postgres.ts through
 * startTestApp) and a Redis key prefix no other run uses (REDIS_KEY_PREFIX), so runs never share
 * tenants, channels or counters.
 *
 * Requests that name a tenant by subdomain go to 127.0.0.1 with a `Host: <tenant>.localhost:<port>`
 * header (node:http, since fetch will not send a Host of our choosing); the browser maps
 * *.localhost to 127.0.0.1 with a host-resolver rule.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApp, type App } from '../../src/app.js';
import { ConfigError, loadConfig, type Config } from '../../src/config/index.js';
import { RelayState } from '../../src/tenancy/ops.js';
import { dropRedisKeys, freePort, startTestApp, type TestApp, BOOTSTRAP_ID, BOOTSTRAP_SECRET } from '../helpers/app.js';
import { migratedDatabase, type TestDatabase } from '../helpers/postgres.js';
import { expectInsufficientScope, expectProblem, expectUnauthorized, expectValidation } from '../helpers/problem.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { send, type TenantRequest, type TenantResponse } from '../helpers/tenant-http.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { TENANT_SUBDOMAINS, launchBrowser } from '../helpers/browser.js';
import { runMain } from '../helpers/run-main.js';

const ADMIN_EMAIL = 'root@platform.example.com';
const ADMIN_PASSWORD = 'Platform-Admin-Passw0rd';
const RESOURCE = 'urn:svc:api:v1';
const run = randomBytes(3).toString('hex');
/** Unique slugs per run (the database is per app anyway; this keeps logs and Redis keys unambiguous). */
const slug = (name: string) => `${name}-${run}`;

function mtEnv(prefix: string): Record<string, string> {
  return {
    MULTI_TENANCY_ENABLED: 'true',
    STORAGE_ADAPTER: 'postgresql',
    REDIS_URL: SHARED_REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    SVC_BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL,
    SVC_BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
    FEATURES_METRICS_ENABLED: 'true',
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP with a Host header of our choosing.

type Res = TenantResponse;
type Send = TenantRequest;

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

async function clientToken(port: number, tenant: string, id: string, secret: string, scope: string): Promise<string> {
  const res = await send(port, 'POST', '/oidc/v1/token', { tenant, headers: { authorization: basic(id, secret) }, form: { grant_type: 'client_credentials', resource: RESOURCE, scope } });
  if (res.status !== 200) throw new Error(`token request at ${tenant} failed: ${res.status} ${res.text}`);
  return res.json.access_token as string;
}

/** A Management token of the `_platforms` bootstrap client (CONTRACT.md: multi-tenant bootstrap lives there). */
const platformToken = (port: number, scope: string) => clientToken(port, '_platforms', BOOTSTRAP_ID, BOOTSTRAP_SECRET, scope);

const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, any>;

// ---------------------------------------------------------------------------------------------

describe('start-up refusal', () => {
  it('loadConfig refuses multi-tenancy on SQLite or without Redis with one line naming both', () => {
    const err = (() => {
      try {
        loadConfig({ MULTI_TENANCY_ENABLED: 'true' });
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error('expected a ConfigError');
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.problems).toEqual(['MULTI_TENANCY_ENABLED: multi-tenant mode requires STORAGE_ADAPTER=postgresql (SQLite is single-tenant only) and REDIS_URL']);
  });

  it('the service process stops with exit code 78 and one configuration line', async () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{}, /^configuration error: MULTI_TENANCY_ENABLED: .*STORAGE_ADAPTER=postgresql.* and REDIS_URL$/],
      [{ STORAGE_ADAPTER: 'postgresql', STORAGE_POSTGRESQL_URL: 'postgres://postgres@127.0.0.1:5432/none' }, /^configuration error: MULTI_TENANCY_ENABLED: multi-tenant mode requires REDIS_URL$/],
    ];
    const runs = cases.map(([env]) =>
      runMain({ MULTI_TENANCY_ENABLED: 'true', SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false', STORAGE_SQLITE_PATH: '/tmp/svc-mt-refused/svc.db', ...env }),
    );
    const results = await Promise.all(runs);
    results.forEach((out, i) => {
      expect(out.code).toBe(78);
      // oidc-provider prints its own runtime notice when imported; everything else is our one line.
      const lines = out.stderr.split('\n').filter((l) => l.trim() && !l.startsWith('oidc-provider WARNING'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(cases[i]![1]);
    });
  }, 120_000);

  it('startApp refuses a multi-tenant config on SQLite even when it was not built by loadConfig', async () => {
    const base = loadConfig({ SVC_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'), STORAGE_SQLITE_PATH: ':memory:' });
    const config: Config = { ...base, multi_tenancy: { ...base.multi_tenancy, enabled: true }, redis: { ...base.redis, url: SHARED_REDIS_URL } };
    await expect(startApp(config, { listen: false })).rejects.toThrow(/^MULTI_TENANCY_ENABLED: multi-tenant mode requires STORAGE_ADAPTER=postgresql/);
  });
});

describe('single-tenant mode', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it('answers the tenant endpoints with 404 problem+json, with or without a token', async () => {
    const token = await t.token('svc:tenants:read svc:tenants:write');
    for (const [method, path] of [['GET', '/api/v1/tenants'], ['GET', '/api/v1/tenants/acme'], ['POST', '/api/v1/tenants'], ['DELETE', '/api/v1/tenants/acme']] as const) {
      const res = await send(t.app.port, method, path, { token, body: method === 'POST' ? { slug: 'acme', display_name: 'Acme' } : undefined });
      expectProblem(res, 404, 'not-found', path);
      expectProblem(await send(t.app.port, method, path), 404, 'not-found', path);
    }
  });

  it('ignores tenant headers and subdomains, and has no `_ops` or platform routes', async () => {
    const res = await send(t.app.port, 'GET', '/oidc/v1/.well-known/openid-configuration', { sub: 'acme', tenant: 'beta' });
    expect(res.json.issuer).toBe(t.issuer);
    expectProblem(await send(t.app.port, 'GET', '/platform/tenants', { tenant: '_platforms' }), 404, 'not-found', '/platform/tenants');
    expectProblem(await send(t.app.port, 'GET', '/oauth/callback', { tenant: '_ops' }), 404, 'not-found', '/oauth/callback');
    // The relay path reaches the default tenant, which has no such provider: its 404 page, no relay.
    const relayPath = await send(t.app.port, 'GET', '/oidc/v1/social/google/callback?state=x', { tenant: '_ops' });
    expect(relayPath.status).toBe(404);
    expect(relayPath.headers.location).toBeUndefined();
  });
});

describe('multi-tenant mode', () => {
  let t: TestApp;
  let port: number;
  let prefix: string;
  let browser: Browser;
  let rp: RpServer;
  let REDIRECT: string;
  const ACME = slug('acme');
  const BETA = slug('beta');

  beforeAll(async () => {
    prefix = uniquePrefix('mt');
    rp = await startRpServer();
    REDIRECT = `${rp.origin}/cb`;
    t = await startTestApp(mtEnv(prefix));
    port = t.app.port;
    browser = await launchBrowser([TENANT_SUBDOMAINS]);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rp?.close();
    if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
  });

  const issuerOf = (tenant: string) => `http://${tenant}.localhost:${port}/oidc/v1`;

  async function createTenant(name: string, extra: Record<string, unknown> = {}): Promise<any> {
    const token = await platformToken(port, 'svc:tenants:write');
    const res = await send(port, 'POST', '/api/v1/tenants', { token, body: { slug: name, display_name: `Tenant ${name}`, ...extra } });
    expect(res.status, res.text).toBe(201);
    return res.json.data;
  }

  /** A client in `tenant`, created with a cross-tenant `_platforms` token. */
  async function createClientIn(tenant: string, body: Record<string, unknown>): Promise<{ client_id: string; client_secret: string }> {
    // Holding whatever the client will be allowed (issue 12, hole 3).
    const token = await platformToken(port, 'svc:cross-tenant:write svc:clients:write svc:clients:read svc:tenants:read');
    const res = await send(port, 'POST', '/api/v1/clients', { tenant, token, body });
    expect(res.status, res.text).toBe(201);
    return res.json.data;
  }

  async function createUserIn(tenant: string, fields: Record<string, unknown>): Promise<{ id: string; email: string; password: string }> {
    const scope = tenant === '_platforms' ? 'svc:users:write' : 'svc:cross-tenant:write svc:users:write';
    const token = await platformToken(port, scope);
    const password = 'Correct-Horse-Battery-9';
    const email = `u${randomBytes(4).toString('hex')}@example.com`;
    const res = await send(port, 'POST', '/api/v1/users', { tenant, token, body: { email, password, email_verified: true, ...fields } });
    expect(res.status, res.text).toBe(201);
    return { id: res.json.data.id, email, password };
  }

  const webClient = (name: string) => ({
    client_name: name,
    application_type: 'web',
    redirect_uris: [REDIRECT],
    grant_types: ['authorization_code'],
    scope: 'openid profile email',
    first_party: true,
  });

  /**
   * The authorization code flow in Chromium at `<tenant>.localhost`: sign in on the login page,
   * exchange the code at the tenant's token endpoint. Returns the access token and the browser's
   * cookies for the tenant host.
   */
  async function signIn(tenant: string, client: { client_id: string; client_secret: string }, email: string, password: string, extra: Record<string, string> = { scope: 'openid profile' }) {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const verifier = randomBytes(32).toString('base64url');
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      const params = new URLSearchParams({ client_id: client.client_id, response_type: 'code', redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 'st', nonce: 'nn', ...extra });
      await page.goto(`${issuerOf(tenant)}/auth?${params}`);
      await page.getByLabel('E-mail').fill(email);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${REDIRECT}**`);
      const code = new URL(page.url()).searchParams.get('code');
      expect(code, page.url()).toBeTruthy();
      const cookies = (await context.cookies(`http://${tenant}.localhost:${port}`)).map((c) => `${c.name}=${c.value}`).join('; ');
      const res = await send(port, 'POST', '/oidc/v1/token', {
        sub: tenant,
        headers: { authorization: basic(client.client_id, client.client_secret) },
        form: { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT, code_verifier: verifier },
      });
      expect(res.status, res.text).toBe(200);
      return { accessToken: res.json.access_token as string, idToken: res.json.id_token as string, cookies };
    } finally {
      await context.close();
    }
  }

  describe('resolution and issuers', () => {
    beforeAll(async () => {
      await createTenant(ACME);
      await createTenant(BETA);
    });

    it('creates `_platforms` at first start, with its keys and issuer', async () => {
      const rows = await t.sql("SELECT slug, status, tenant_id FROM tenants WHERE slug = '_platforms'");
      expect(rows).toEqual([{ slug: '_platforms', status: 'active', tenant_id: '_platforms' }]);
      const res = await send(port, 'GET', '/oidc/v1/.well-known/openid-configuration', { tenant: '_platforms' });
      expect(res.json.issuer).toBe(issuerOf('_platforms'));
    });

    it('resolves by header and by subdomain to the same per-tenant issuer', async () => {
      const byHeader = await send(port, 'GET', '/oidc/v1/.well-known/openid-configuration', { tenant: ACME });
      const bySub = await send(port, 'GET', '/oidc/v1/.well-known/openid-configuration', { sub: ACME });
      expect(byHeader.status).toBe(200);
      expect(byHeader.json.issuer).toBe(issuerOf(ACME));
      expect(bySub.json.issuer).toBe(issuerOf(ACME));
      expect(byHeader.json.token_endpoint).toBe(`${issuerOf(ACME)}/token`);
      // Each tenant has keys of its own.
      const jwksA = await send(port, 'GET', '/oidc/v1/jwks', { tenant: ACME });
      const jwksB = await send(port, 'GET', '/oidc/v1/jwks', { sub: BETA });
      const kids = (r: Res) => (r.json.keys as Array<{ kid: string }>).map((k) => k.kid);
      expect(kids(jwksA).filter((k) => kids(jwksB).includes(k))).toEqual([]);
    });

    it('issues tokens whose iss is the tenant issuer, and a tenant token is worthless at another tenant', async () => {
      const creds = await createClientIn(ACME, { client_name: 'acme service', grant_types: ['client_credentials'], scope: 'svc:clients:read svc:tenants:read' });
      const token = await clientToken(port, ACME, creds.client_id, creds.client_secret, 'svc:clients:read');
      expect(claimsOf(token).iss).toBe(issuerOf(ACME));
      const own = await send(port, 'GET', '/api/v1/clients', { sub: ACME, token });
      expect(own.status).toBe(200);
      expect((own.json.data as Array<{ client_id: string }>).map((c) => c.client_id)).toContain(creds.client_id);
      expectUnauthorized(await send(port, 'GET', '/api/v1/clients', { tenant: BETA, token }), '/api/v1/clients');
      // The same token at introspection of another tenant is inactive.
      const platformTok = await platformToken(port, 'svc:clients:read');
      expect(claimsOf(platformTok).iss).toBe(issuerOf('_platforms'));
    });

    it('answers an unknown well-formed tenant with 404 and a malformed one with 400 invalid-tenant', async () => {
      const ghost = slug('ghost');
      expectProblem(await send(port, 'GET', '/oidc/v1/.well-known/openid-configuration', { tenant: ghost }), 404, 'not-found', '/oidc/v1/.well-known/openid-configuration');
      expectProblem(await send(port, 'GET', '/api/v1/clients', { sub: ghost }), 404, 'not-found', '/api/v1/clients');
      expectProblem(await send(port, 'GET', '/oidc/v1/jwks', { tenant: 'Not_Valid!' }), 400, 'invalid-tenant', '/oidc/v1/jwks');
      expectProblem(await send(port, 'GET', '/oidc/v1/jwks', { tenant: '_nope' }), 400, 'invalid-tenant', '/oidc/v1/jwks');
      expect(t.app.pool.has(ghost)).toBe(false);
    });

    it('takes a host with a trailing dot as the same host and answers 400 for a host with an empty label', async () => {
      const path = '/oidc/v1/.well-known/openid-configuration';
      const absolute = await send(port, 'GET', path, { headers: { host: `${ACME}.localhost.:${port}` } });
      expect(absolute.status, absolute.text).toBe(200);
      expect(absolute.json.issuer).toBe(issuerOf(ACME));
      expectProblem(await send(port, 'GET', path, { headers: { host: `${ACME}..localhost:${port}` } }), 400, 'invalid-tenant', path);
    });

    it('resolves the tenant once per request, for a Management call and an OIDC request alike', async () => {
      const creds = await createClientIn(ACME, { client_name: 'acme resolver probe', grant_types: ['client_credentials'], scope: 'svc:clients:read' });
      const token = await clientToken(port, ACME, creds.client_id, creds.client_secret, 'svc:clients:read');
      const spy = vi.spyOn(t.app.ctx.resolver, 'resolve');
      try {
        expect((await send(port, 'GET', '/api/v1/clients', { tenant: ACME, token })).status).toBe(200);
        expect(spy).toHaveBeenCalledTimes(1);
        spy.mockClear();
        expect((await send(port, 'POST', '/oidc/v1/token/introspection', { tenant: ACME, headers: { authorization: basic(creds.client_id, creds.client_secret) }, form: { token } })).status).toBe(200);
        expect(spy).toHaveBeenCalledTimes(1);
      } finally {
        spy.mockRestore();
      }
    });

    it('falls back to `default` without a tenant (development and test)', async () => {
      const res = await send(port, 'GET', '/oidc/v1/.well-known/openid-configuration');
      expect(res.status).toBe(200);
      expect(res.json.issuer).toBe(`http://localhost:${port}/oidc/v1`);
    });
  });

  describe('the subdomain wins over a conflicting header; sessions stay with their tenant', () => {
    let acmeClient: { client_id: string; client_secret: string };
    let betaClient: { client_id: string; client_secret: string };
    let acmeSession: string;

    beforeAll(async () => {
      acmeClient = await createClientIn(ACME, webClient('acme web'));
      betaClient = await createClientIn(BETA, webClient('beta web'));
      const user = await createUserIn(ACME, {});
      acmeSession = (await signIn(ACME, acmeClient, user.email, user.password)).cookies;
      expect(acmeSession).toMatch(/_session=/);
    });

    const silentAuth = (client: { client_id: string }) =>
      `/oidc/v1/auth?${new URLSearchParams({ client_id: client.client_id, response_type: 'code', redirect_uri: REDIRECT, scope: 'openid', prompt: 'none', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256', state: 'x' })}`;
    const outcome = (res: Res) => {
      expect([302, 303]).toContain(res.status);
      const loc = new URL(res.headers.location!);
      return loc.searchParams.get('error') ?? (loc.searchParams.get('code') ? 'code' : 'none');
    };

    it('honours the session on its own host (control)', async () => {
      const res = await send(port, 'GET', silentAuth(acmeClient), { sub: ACME, headers: { cookie: acmeSession } });
      expect(outcome(res)).toBe('code');
    });

    it('resolves by the host when the header names another tenant, and clears the authentication state', async () => {
      const discovery = await send(port, 'GET', '/oidc/v1/.well-known/openid-configuration', { sub: ACME, tenant: BETA });
      expect(discovery.json.issuer).toBe(issuerOf(ACME));
      // Same host, same valid cookie, but a conflicting header: no session is honoured.
      const res = await send(port, 'GET', silentAuth(acmeClient), { sub: ACME, tenant: BETA, headers: { cookie: acmeSession } });
      expect(outcome(res)).toBe('login_required');
    });

    it('never honours one tenant session at another tenant (per-tenant cookie keys)', async () => {
      // The acme cookie replayed to beta by header on the bare host, and by beta's own host.
      expect(outcome(await send(port, 'GET', silentAuth(betaClient), { tenant: BETA, headers: { cookie: acmeSession } }))).toBe('login_required');
      expect(outcome(await send(port, 'GET', silentAuth(betaClient), { sub: BETA, headers: { cookie: acmeSession } }))).toBe('login_required');
    });
  });

  describe('Tenants Management API', () => {
    it('runs the whole lifecycle: create (keys at once), get, list, 409, suspend, reactivate, delete (purged)', async () => {
      const name = slug('life');
      const write = await platformToken(port, 'svc:tenants:write');
      const read = await platformToken(port, 'svc:tenants:read');
      const del = await platformToken(port, 'svc:tenants:delete');

      const created = await send(port, 'POST', '/api/v1/tenants', { token: write, body: { slug: name, display_name: 'Life Corp', domain: `login.${name}.example.com` } });
      expect(created.status).toBe(201);
      expect(created.json.data).toEqual({
        id: expect.any(String), slug: name, display_name: 'Life Corp', domain: `login.${name}.example.com`, status: 'active',
        created_at: expect.stringMatching(/Z$/), updated_at: expect.stringMatching(/Z$/),
      });
      // Keys exist before any request reached the tenant (no actor yet).
      expect(t.app.pool.has(name)).toBe(false);
      const keys = await t.sql('SELECT alg FROM signing_keys WHERE tenant_id = ? ORDER BY alg', [name]);
      expect(keys.map((k) => k.alg)).toEqual([...t.app.ctx.config.security.key_store.algorithms].sort());

      const dup = await send(port, 'POST', '/api/v1/tenants', { token: write, body: { slug: name, display_name: 'Again' } });
      expectProblem(dup, 409, 'conflict', '/api/v1/tenants');
      const sameDomain = await send(port, 'POST', '/api/v1/tenants', { token: write, body: { slug: `${name}-2`, display_name: 'Other', domain: `login.${name}.example.com` } });
      expectProblem(sameDomain, 409, 'conflict', '/api/v1/tenants');

      const got = await send(port, 'GET', `/api/v1/tenants/${name}`, { token: read });
      expect(got.json.data).toEqual(created.json.data);
      const listed = await send(port, 'GET', '/api/v1/tenants?limit=100&include_count=true', { token: read });
      const slugs = (listed.json.data as Array<{ slug: string }>).map((x) => x.slug);
      expect(slugs).toEqual(expect.arrayContaining(['_platforms', name, ACME, BETA]));
      expect(listed.json.pagination.total_count).toBe(slugs.length);
      const page1 = await send(port, 'GET', '/api/v1/tenants?limit=1', { token: read });
      expect(page1.json.pagination.has_more).toBe(true);
      const page2 = await send(port, 'GET', `/api/v1/tenants?limit=1&after=${encodeURIComponent(page1.json.pagination.next_cursor)}`, { token: read });
      expect(page2.json.data[0].slug).not.toBe(page1.json.data[0].slug);

      // Serve something so the tenant has an actor, then suspend it.
      expect((await send(port, 'GET', '/oidc/v1/jwks', { tenant: name })).status).toBe(200);
      expect(t.app.pool.has(name)).toBe(true);
      const suspended = await send(port, 'PATCH', `/api/v1/tenants/${name}`, { token: write, body: { status: 'suspended' } });
      expect(suspended.status).toBe(200);
      expect(suspended.json.data.status).toBe('suspended');
      expect(t.app.pool.has(name)).toBe(false);
      const onlySuspended = await send(port, 'GET', '/api/v1/tenants?status=suspended', { token: read });
      expect((onlySuspended.json.data as Array<{ slug: string }>).map((x) => x.slug)).toEqual([name]);

      // Suspended: OIDC and Management answer 403 tenant-suspended; the platform endpoints still work.
      for (const path of ['/oidc/v1/.well-known/openid-configuration', '/oidc/v1/jwks']) {
        expectProblem(await send(port, 'GET', path, { tenant: name }), 403, 'tenant-suspended', path);
        expectProblem(await send(port, 'GET', path, { sub: name }), 403, 'tenant-suspended', path);
      }
      const tokenRes = await send(port, 'POST', '/oidc/v1/token', { tenant: name, form: { grant_type: 'client_credentials' } });
      expectProblem(tokenRes, 403, 'tenant-suspended', '/oidc/v1/token');
      const cross = await platformToken(port, 'svc:cross-tenant:read svc:clients:read');
      expectProblem(await send(port, 'GET', '/api/v1/clients', { tenant: name, token: cross }), 403, 'tenant-suspended', '/api/v1/clients');
      expect((await send(port, 'GET', `/api/v1/tenants/${name}`, { token: read, tenant: name })).status).toBe(200);

      // Reactivated: served again.
      const back = await send(port, 'PATCH', `/api/v1/tenants/${name}`, { token: write, body: { status: 'active', display_name: 'Life Corp 2', domain: null } });
      expect(back.json.data).toMatchObject({ status: 'active', display_name: 'Life Corp 2', domain: null });
      expect((await send(port, 'GET', '/oidc/v1/jwks', { tenant: name })).status).toBe(200);
      expect((await send(port, 'GET', '/api/v1/clients', { tenant: name, token: cross })).status).toBe(200);

      // Delete: 204, gone (404), its data and Redis keys purged, its actor evicted.
      await createClientIn(name, { client_name: 'doomed', grant_types: ['client_credentials'] });
      const redisKeysBefore = await redisKeys(`${prefix}:${name}:*`);
      expect(redisKeysBefore.length).toBeGreaterThan(0); // rate-limit counters at least
      const deleted = await send(port, 'DELETE', `/api/v1/tenants/${name}`, { token: del });
      expect(deleted.status).toBe(204);
      expect(t.app.pool.has(name)).toBe(false);
      expectProblem(await send(port, 'GET', `/api/v1/tenants/${name}`, { token: read }), 404, 'not-found', `/api/v1/tenants/${name}`);
      expectProblem(await send(port, 'GET', '/oidc/v1/jwks', { tenant: name }), 404, 'not-found', '/oidc/v1/jwks');
      for (const table of ['clients', 'signing_keys', 'audit_entries']) {
        expect(await t.sql(`SELECT 1 FROM ${table} WHERE tenant_id = ?`, [name]), table).toEqual([]);
      }
      expect(await redisKeys(`${prefix}:${name}:*`)).toEqual([]);
      expectProblem(await send(port, 'DELETE', `/api/v1/tenants/${name}`, { token: del }), 404, 'not-found', `/api/v1/tenants/${name}`);
      // The audit trail of the lifecycle is in `_platforms`.
      const audit = await t.sql("SELECT type FROM audit_entries WHERE tenant_id = '_platforms' AND details->>'slug' = ? ORDER BY \"timestamp\"", [name]);
      expect(audit.map((a) => a.type)).toEqual(['tenant.created', 'tenant.updated', 'tenant.updated', 'tenant.deleted']);

      // A freed slug starts empty.
      await createTenant(name);
      expect(await t.sql('SELECT 1 FROM clients WHERE tenant_id = ?', [name])).toEqual([]);
    });

    it('searches the list with q (slug, display name or domain; case-insensitive, wildcards literal, at most 200 characters) beside status and paging', async () => {
      const write = await platformToken(port, 'svc:tenants:write');
      const read = await platformToken(port, 'svc:tenants:read');
      const [north, south, east] = [slug('qnorth'), slug('qsouth'), slug('qeast')];
      await createTenant(north, { display_name: 'Northwind 100%_Traders' });
      await createTenant(south, { display_name: 'Southwind 100 Traders', domain: `sso.${south}.example.com` });
      await createTenant(east, { display_name: 'Eastern' });
      expect((await send(port, 'PATCH', `/api/v1/tenants/${south}`, { token: write, body: { status: 'suspended' } })).status).toBe(200);
      const slugsOf = async (query: string) => {
        const res = await send(port, 'GET', `/api/v1/tenants?${query}`, { token: read });
        expect(res.status, res.text).toBe(200);
        return (res.json.data as Array<{ slug: string }>).map((x) => x.slug);
      };
      expect(await slugsOf('q=WIND')).toEqual([north, south]);
      expect(await slugsOf(`q=${encodeURIComponent(`SSO.${south}`)}`)).toEqual([south]); // domain
      expect(await slugsOf(`q=${encodeURIComponent(east.toUpperCase())}`)).toEqual([east]); // slug
      expect(await slugsOf(`q=${encodeURIComponent('100%_')}`)).toEqual([north]);
      expect(await slugsOf('q=%25')).toEqual([north]);
      expect(await slugsOf('q=wind&status=suspended')).toEqual([south]);
      expect(await slugsOf('q=wind&status=active')).toEqual([north]);
      const first = await send(port, 'GET', '/api/v1/tenants?q=wind&limit=1&include_count=true', { token: read });
      expect(first.json.data.map((x: { slug: string }) => x.slug)).toEqual([north]);
      expect(first.json.pagination).toMatchObject({ has_more: true, total_count: 2 });
      expect(await slugsOf(`q=wind&limit=1&after=${encodeURIComponent(first.json.pagination.next_cursor)}`)).toEqual([south]);
      expect(await slugsOf(`q=${'x'.repeat(200)}`)).toEqual([]);
      expectValidation(await send(port, 'GET', `/api/v1/tenants?q=${'x'.repeat(201)}`, { token: read }), '/api/v1/tenants', 'q');
      expect((await send(port, 'PATCH', `/api/v1/tenants/${south}`, { token: write, body: { status: 'active' } })).status).toBe(200);
    });

    it('renames a tenant and changes or removes its domain with PATCH (422 at the field, 409 for a domain in use); `_platforms` can be renamed only', async () => {
      const write = await platformToken(port, 'svc:tenants:write');
      const [one, two] = [slug('rename1'), slug('rename2')];
      await createTenant(one);
      await createTenant(two, { domain: `login.${two}.example.com` });
      const renamed = await send(port, 'PATCH', `/api/v1/tenants/${one}`, { token: write, body: { display_name: '  Renamed Ltd  ', domain: `login.${one}.example.com` } });
      expect(renamed.status, renamed.text).toBe(200);
      expect(renamed.json.data).toMatchObject({ slug: one, display_name: 'Renamed Ltd', domain: `login.${one}.example.com`, status: 'active' });
      expectValidation(await send(port, 'PATCH', `/api/v1/tenants/${one}`, { token: write, body: { display_name: '   ' } }), `/api/v1/tenants/${one}`, 'display_name');
      expectValidation(await send(port, 'PATCH', `/api/v1/tenants/${one}`, { token: write, body: { domain: 'Not A Host' } }), `/api/v1/tenants/${one}`, 'domain');
      expectProblem(await send(port, 'PATCH', `/api/v1/tenants/${one}`, { token: write, body: { domain: `login.${two}.example.com` } }), 409, 'conflict', `/api/v1/tenants/${one}`);
      // The service's own hosts name tenants: no tenant records another's address (or the base host) as its domain.
      for (const domain of [`${two}.localhost`, 'login.localhost']) {
        const refused = await send(port, 'PATCH', `/api/v1/tenants/${one}`, { token: write, body: { domain } });
        expectValidation(refused, `/api/v1/tenants/${one}`, 'domain');
        expect(JSON.stringify(refused.json), domain).toContain('must not be localhost or one of its subdomains');
      }
      expectValidation(await send(port, 'POST', '/api/v1/tenants', { token: write, body: { slug: `${one}-x`, display_name: 'X', domain: `${two}.localhost` } }), '/api/v1/tenants', 'domain');
      const cleared = await send(port, 'PATCH', `/api/v1/tenants/${one}`, { token: write, body: { domain: null } });
      expect(cleared.json.data).toMatchObject({ display_name: 'Renamed Ltd', domain: null });
      const before = await send(port, 'GET', '/api/v1/tenants/_platforms', { token: await platformToken(port, 'svc:tenants:read') });
      const platform = await send(port, 'PATCH', '/api/v1/tenants/_platforms', { token: write, body: { display_name: 'The Platform' } });
      expect(platform.status, platform.text).toBe(200);
      expect(platform.json.data).toMatchObject({ slug: '_platforms', display_name: 'The Platform', status: 'active' });
      expect((await send(port, 'PATCH', '/api/v1/tenants/_platforms', { token: write, body: { display_name: before.json.data.display_name } })).status).toBe(200);
    });

    it('validates slugs (422), refuses reserved tenants (422 on create, 409 on delete or suspend) and unknown ones (404)', async () => {
      const write = await platformToken(port, 'svc:tenants:write svc:tenants:delete');
      for (const bad of ['a', '-acme', 'acme-', 'Acme', 'ac_me', 'a'.repeat(64), '_ops']) {
        expectValidation(await send(port, 'POST', '/api/v1/tenants', { token: write, body: { slug: bad, display_name: 'x' } }), '/api/v1/tenants', 'slug');
      }
      expectValidation(await send(port, 'POST', '/api/v1/tenants', { token: write, body: { slug: 'default', display_name: 'x' } }), '/api/v1/tenants', 'slug');
      expectValidation(await send(port, 'POST', '/api/v1/tenants', { token: write, body: { slug: slug('ok') } }), '/api/v1/tenants', 'display_name');
      expectValidation(await send(port, 'POST', '/api/v1/tenants', { token: write, body: { slug: slug('ok'), display_name: '' } }), '/api/v1/tenants', 'display_name');
      expectValidation(await send(port, 'PATCH', `/api/v1/tenants/${ACME}`, { token: write, body: { status: 'frozen' } }), `/api/v1/tenants/${ACME}`, 'status');
      for (const reserved of ['default', '_platforms', '_ops']) {
        expectProblem(await send(port, 'DELETE', `/api/v1/tenants/${reserved}`, { token: write }), 409, 'conflict', `/api/v1/tenants/${reserved}`);
      }
      expectProblem(await send(port, 'PATCH', '/api/v1/tenants/_platforms', { token: write, body: { status: 'suspended' } }), 409, 'conflict', '/api/v1/tenants/_platforms');
      const ghost = slug('ghost');
      expectProblem(await send(port, 'PATCH', `/api/v1/tenants/${ghost}`, { token: write, body: { status: 'suspended' } }), 404, 'not-found', `/api/v1/tenants/${ghost}`);
      expectProblem(await send(port, 'DELETE', `/api/v1/tenants/${ghost}`, { token: write }), 404, 'not-found', `/api/v1/tenants/${ghost}`);
    });

    it('needs the svc:tenants:* scopes and a token of the `_platforms` issuer, whatever tenant the request resolved to', async () => {
      expectUnauthorized(await send(port, 'GET', '/api/v1/tenants'), '/api/v1/tenants');
      const noScope = await platformToken(port, 'svc:clients:read');
      expectInsufficientScope(await send(port, 'GET', '/api/v1/tenants', { token: noScope }), '/api/v1/tenants', 'svc:tenants:read');
      const readOnly = await platformToken(port, 'svc:tenants:read');
      expectInsufficientScope(await send(port, 'POST', '/api/v1/tenants', { token: readOnly, body: { slug: slug('x'), display_name: 'x' } }), '/api/v1/tenants', 'svc:tenants:write');
      expectInsufficientScope(await send(port, 'DELETE', `/api/v1/tenants/${ACME}`, { token: readOnly }), `/api/v1/tenants/${ACME}`, 'svc:tenants:delete');
      // Resolved to acme (by header or host), the platform token still works...
      expect((await send(port, 'GET', '/api/v1/tenants', { token: readOnly, tenant: ACME })).status).toBe(200);
      expect((await send(port, 'GET', '/api/v1/tenants', { token: readOnly, sub: ACME })).status).toBe(200);
      // ...and a token of acme's own issuer, even with the scope, is not accepted (401).
      const creds = await createClientIn(ACME, { client_name: 'acme tenants reader', grant_types: ['client_credentials'], scope: 'svc:tenants:read' });
      const acmeToken = await clientToken(port, ACME, creds.client_id, creds.client_secret, 'svc:tenants:read');
      expectUnauthorized(await send(port, 'GET', '/api/v1/tenants', { token: acmeToken, tenant: ACME }), '/api/v1/tenants');
      expectUnauthorized(await send(port, 'GET', `/api/v1/tenants/${ACME}`, { token: acmeToken }), `/api/v1/tenants/${ACME}`);
    });
  });

  describe('cross-tenant access with a `_platforms` token', () => {
    it('reads with svc:cross-tenant:read, writes only with svc:cross-tenant:write, and still needs the operation scope', async () => {
      const client = await createClientIn(ACME, { client_name: 'visible across', grant_types: ['client_credentials'] });
      const reader = await platformToken(port, 'svc:cross-tenant:read svc:clients:read svc:clients:write');
      const list = await send(port, 'GET', '/api/v1/clients?limit=100', { tenant: ACME, token: reader });
      expect(list.status).toBe(200);
      expect((list.json.data as Array<{ client_id: string }>).map((c) => c.client_id)).toContain(client.client_id);
      // By subdomain too, and a `_platforms` client never shows up in the acme list.
      const bySub = await send(port, 'GET', `/api/v1/clients/${client.client_id}`, { sub: ACME, token: reader });
      expect(bySub.json.data.client_id).toBe(client.client_id);
      expect((list.json.data as Array<{ client_id: string }>).map((c) => c.client_id)).not.toContain(BOOTSTRAP_ID);

      const write = await send(port, 'POST', '/api/v1/clients', { tenant: ACME, token: reader, body: { client_name: 'nope', grant_types: ['client_credentials'] } });
      expectInsufficientScope(write, '/api/v1/clients', 'svc:cross-tenant:write');
      const plain = await platformToken(port, 'svc:clients:read');
      expectInsufficientScope(await send(port, 'GET', '/api/v1/clients', { tenant: ACME, token: plain }), '/api/v1/clients', 'svc:cross-tenant:read');
      const crossOnly = await platformToken(port, 'svc:cross-tenant:read');
      expectInsufficientScope(await send(port, 'GET', '/api/v1/clients', { tenant: ACME, token: crossOnly }), '/api/v1/clients', 'svc:clients:read');
    });

    it('a 403 names EVERY missing scope: the crossing one and the operation one, in the detail, the challenge and missing_scopes (issue 18 item 5)', async () => {
      // Holds the resource scope only: told it needs svc:cross-tenant:write (and not svc:users:write).
      const usersOnly = await platformToken(port, 'svc:users:write');
      const a = await send(port, 'POST', '/api/v1/users', { tenant: ACME, token: usersOnly, body: { email: 'x18@example.com' } });
      expectInsufficientScope(a, '/api/v1/users', 'svc:cross-tenant:write');
      expect(a.json.missing_scopes).toEqual(['svc:cross-tenant:write']);
      // Holds neither the resource scope nor the write crossing: both named at once.
      const readOnly = await platformToken(port, 'svc:cross-tenant:read');
      const b = await send(port, 'POST', '/api/v1/users', { tenant: ACME, token: readOnly, body: { email: 'x18@example.com' } });
      expectInsufficientScope(b, '/api/v1/users', 'svc:cross-tenant:write svc:users:write');
      expect(b.json.missing_scopes).toEqual(['svc:cross-tenant:write', 'svc:users:write']);
      expect(b.json.detail).toContain('svc:cross-tenant:write');
      expect(b.json.detail).toContain('svc:users:write');
      // A token with no relevant scope at all, on a read: both read scopes named.
      const none = await platformToken(port, 'svc:tenants:read');
      const c = await send(port, 'GET', '/api/v1/clients', { tenant: ACME, token: none });
      expectInsufficientScope(c, '/api/v1/clients', 'svc:cross-tenant:read svc:clients:read');
      // Nothing was created by the refused calls.
      const admin = await platformToken(port, 'svc:cross-tenant:read svc:users:read');
      const list = await send(port, 'GET', '/api/v1/users?limit=100', { tenant: ACME, token: admin });
      expect((list.json.data as Array<{ email: string }>).map((u) => u.email)).not.toContain('x18@example.com');
    });
  });

  describe('`_platforms`: bootstrap administrator and /platform/*', () => {
    let web: { client_id: string; client_secret: string };
    let adminToken: string;
    // Issue 12: the platform routes take a Management token (resource + svc:tenants:* scope) of a first-party client.
    const PLATFORM_SCOPES = 'svc:tenants:read svc:tenants:write svc:cross-tenant:read';
    const platformSignIn = (client: { client_id: string; client_secret: string }, email: string, password: string) =>
      signIn('_platforms', client, email, password, { scope: `openid ${PLATFORM_SCOPES}`, resource: RESOURCE });

    beforeAll(async () => {
      const token = await platformToken(port, `svc:clients:write ${PLATFORM_SCOPES}`);
      const res = await send(port, 'POST', '/api/v1/clients', { tenant: '_platforms', token, body: { ...webClient('platform console'), scope: `openid profile email ${PLATFORM_SCOPES}` } });
      expect(res.status, res.text).toBe(201);
      web = res.json.data;
      adminToken = (await platformSignIn(web, ADMIN_EMAIL, ADMIN_PASSWORD)).accessToken;
    });

    it('created the bootstrap administrator once, as superadmin, in `_platforms` only', async () => {
      const rows = await t.sql("SELECT tenant_id, role FROM users WHERE lower(email) = lower(?)", [ADMIN_EMAIL]);
      expect(rows).toEqual([{ tenant_id: '_platforms', role: 'superadmin' }]);
    });

    it('serves the platform routes to a platform administrator signed in through the authorization code flow', async () => {
      const list = await send(port, 'GET', '/platform/tenants', { sub: '_platforms', token: adminToken });
      expect(list.status, list.text).toBe(200);
      expect((list.json.data as Array<{ slug: string }>).map((x) => x.slug)).toEqual(expect.arrayContaining(['_platforms', ACME, BETA]));

      const name = slug('plat');
      const created = await send(port, 'POST', '/platform/tenants', { tenant: '_platforms', token: adminToken, body: { slug: name, display_name: 'Made on the platform' } });
      expect(created.status, created.text).toBe(201);
      expect(created.json.data).toMatchObject({ slug: name, status: 'active' });
      expectProblem(await send(port, 'POST', '/platform/tenants', { tenant: '_platforms', token: adminToken, body: { slug: name, display_name: 'x' } }), 409, 'conflict', '/platform/tenants');
      expectValidation(await send(port, 'POST', '/platform/tenants', { tenant: '_platforms', token: adminToken, body: { slug: '-x', display_name: 'x' } }), '/platform/tenants', 'slug');
      // The same search as /api/v1/tenants.
      const found = await send(port, 'GET', `/platform/tenants?q=${encodeURIComponent('MADE ON THE')}`, { sub: '_platforms', token: adminToken });
      expect((found.json.data as Array<{ slug: string }>).map((x) => x.slug)).toEqual([name]);
      expectValidation(await send(port, 'GET', `/platform/tenants?q=${'x'.repeat(201)}`, { sub: '_platforms', token: adminToken }), '/platform/tenants', 'q');

      const user = await createUserIn(ACME, { username: 'visible-to-platform' });
      const users = await send(port, 'GET', `/platform/tenants/${ACME}/users?limit=100`, { sub: '_platforms', token: adminToken });
      expect(users.status).toBe(200);
      expect((users.json.data as Array<{ id: string }>).map((u) => u.id)).toContain(user.id);
      expect(JSON.stringify(users.json)).not.toMatch(/password_hash|argon2/);
      expectProblem(await send(port, 'GET', `/platform/tenants/${slug('ghost')}/users`, { sub: '_platforms', token: adminToken }), 404, 'not-found', `/platform/tenants/${slug('ghost')}/users`);

      const suspended = await send(port, 'PATCH', `/platform/tenants/${name}`, { sub: '_platforms', token: adminToken, body: { status: 'suspended' } });
      expect(suspended.json.data.status).toBe('suspended');
      expectProblem(await send(port, 'GET', '/oidc/v1/jwks', { tenant: name }), 403, 'tenant-suspended', '/oidc/v1/jwks');
      const back = await send(port, 'PATCH', `/platform/tenants/${name}`, { sub: '_platforms', token: adminToken, body: { status: 'active' } });
      expect(back.json.data.status).toBe('active');
      expect((await send(port, 'GET', '/oidc/v1/jwks', { tenant: name })).status).toBe(200);
      const audit = await t.sql("SELECT type, user_id FROM audit_entries WHERE tenant_id = '_platforms' AND details->>'slug' = ? ORDER BY \"timestamp\"", [name]);
      expect(audit.map((a) => a.type)).toEqual(['tenant.created', 'tenant.updated', 'tenant.updated']);
      expect(new Set(audit.map((a) => a.user_id)).size).toBe(1);
    });

    it('refuses anonymous callers, machine tokens, non-admin users and other tenants', async () => {
      expectUnauthorized(await send(port, 'GET', '/platform/tenants', { tenant: '_platforms' }), '/platform/tenants');
      const machine = await platformToken(port, 'svc:tenants:read');
      expectUnauthorized(await send(port, 'GET', '/platform/tenants', { tenant: '_platforms', token: machine }), '/platform/tenants');
      expectUnauthorized(await send(port, 'GET', '/platform/tenants', { tenant: '_platforms', token: 'opaque-garbage' }), '/platform/tenants');

      const plain = await createUserIn('_platforms', { role: 'user' });
      const userToken = (await platformSignIn(web, plain.email, plain.password)).accessToken;
      expectProblem(await send(port, 'GET', '/platform/tenants', { tenant: '_platforms', token: userToken }), 403, 'forbidden', '/platform/tenants');
      const pa = await createUserIn('_platforms', { role: 'platform_admin' });
      const paToken = (await platformSignIn(web, pa.email, pa.password)).accessToken;
      expect((await send(port, 'GET', '/platform/tenants', { tenant: '_platforms', token: paToken })).status).toBe(200);

      // Only on `_platforms`; an ordinary tenant has no platform routes.
      expectProblem(await send(port, 'GET', '/platform/tenants', { tenant: ACME, token: adminToken }), 404, 'not-found', '/platform/tenants');
      expectProblem(await send(port, 'DELETE', `/platform/tenants/${ACME}`, { tenant: '_platforms', token: adminToken }), 405, 'method-not-allowed', `/platform/tenants/${ACME}`);
    });

    it('refuses the platform roles outside `_platforms` (422)', async () => {
      const token = await platformToken(port, 'svc:cross-tenant:write svc:users:write');
      const res = await send(port, 'POST', '/api/v1/users', { tenant: ACME, token, body: { email: `pa-${run}@example.com`, password: 'Correct-Horse-Battery-9', role: 'platform_admin' } });
      expectValidation(res, '/api/v1/users', 'role');
    });
  });

  describe('`_ops`', () => {
    const relay = () => new RelayState(t.app.ctx.sealer.derive('ops-relay-state'));

    it('serves health, readiness and metrics as JSON/text without a session', async () => {
      for (const o of [{ sub: '_ops' }, { tenant: '_ops' }] as Send[]) {
        const health = await send(port, 'GET', '/healthz', o);
        expect(health.status).toBe(200);
        expect(health.json).toEqual({ status: 'ok' });
        const ready = await send(port, 'GET', '/readyz', o);
        expect(ready.json).toEqual({ status: 'ready', checks: { database: 'ok', redis: 'ok' } });
        expect((await send(port, 'GET', '/metrics', o)).text).toContain('svc_tenant_pool_size');
        expect(health.headers['set-cookie']).toBeUndefined();
      }
    });

    it('relays a social-login callback to the tenant named by the signed state, query preserved', async () => {
      const state = relay().sign(ACME, 'inner-state');
      const query = `code=abc123&state=${encodeURIComponent(state)}&scope=openid`;
      const res = await send(port, 'GET', `/oidc/v1/social/google/callback?${query}`, { sub: '_ops', headers: { cookie: 'x=1' } });
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe(`${issuerOf(ACME)}/social/google/callback?${query}`);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json).toEqual({ redirect_to: res.headers.location });
      expect(res.headers['set-cookie']).toBeUndefined();
      expect(relay().read(new URL(res.headers.location!).searchParams.get('state')!)).toEqual({ tenant: ACME, state: 'inner-state' });
      // A form_post answer (Apple) becomes a GET with the callback parameters only (303).
      const post = await send(port, 'POST', '/oidc/v1/social/apple/callback', { sub: '_ops', form: { code: 'c0de', state, user: '{"name":{"firstName":"Ada"}}', smuggled: 'x' } });
      expect(post.status).toBe(303);
      expect(post.headers.location).toBe(`${issuerOf(ACME)}/social/apple/callback?${new URLSearchParams({ code: 'c0de', state, user: '{"name":{"firstName":"Ada"}}' })}`);
    });

    it('refuses forged or unknown-tenant states and answers 404 JSON for anything else', async () => {
      const cb = '/oidc/v1/social/google/callback';
      expectProblem(await send(port, 'GET', `${cb}?code=1&state=forged.value`, { sub: '_ops' }), 400, 'bad-request', cb);
      expectProblem(await send(port, 'GET', `${cb}?code=1`, { sub: '_ops' }), 400, 'bad-request', cb);
      const ghost = relay().sign(slug('ghost'), 's');
      expectProblem(await send(port, 'GET', `${cb}?state=${encodeURIComponent(ghost)}`, { sub: '_ops' }), 404, 'not-found', cb);
      // The old placeholder route is gone; other providers' paths outside the pattern are 404.
      expectProblem(await send(port, 'GET', '/oauth/callback', { sub: '_ops' }), 404, 'not-found', '/oauth/callback');
      expectProblem(await send(port, 'GET', '/oidc/v1/social/Bad_Name/callback', { sub: '_ops' }), 404, 'not-found', '/oidc/v1/social/Bad_Name/callback');
      for (const path of ['/oidc/v1/.well-known/openid-configuration', '/api/v1/clients', '/platform/tenants', '/']) {
        expectProblem(await send(port, 'GET', path, { sub: '_ops' }), 404, 'not-found', path);
      }
      expect(t.app.pool.has('_ops')).toBe(false);
    });
  });

  describe('pool metrics', () => {
    it('counts size, hits, misses and evictions by reason', async () => {
      const res = await send(port, 'GET', '/metrics');
      const value = (name: string) => Number(new RegExp(`^${name.replace(/[{}"]/g, (c) => `\\${c}`)} (\\S+)$`, 'm').exec(res.text)?.[1] ?? 'NaN');
      expect(value('svc_tenant_pool_size')).toBe(t.app.pool.size);
      expect(value('svc_tenant_pool_size')).toBeGreaterThanOrEqual(3);
      expect(value('svc_tenant_pool_hits_total')).toBeGreaterThan(0);
      expect(value('svc_tenant_pool_misses_total')).toBeGreaterThanOrEqual(3);
      expect(value('svc_tenant_pool_evictions_total{reason="suspended"}')).toBeGreaterThanOrEqual(1);
      expect(value('svc_tenant_pool_evictions_total{reason="deleted"}')).toBeGreaterThanOrEqual(1);
    });
  });

  async function redisKeys(pattern: string): Promise<string[]> {
    const { Redis } = await import('ioredis');
    const r = new Redis(SHARED_REDIS_URL);
    try {
      return await r.keys(pattern);
    } finally {
      r.disconnect();
    }
  }
});

describe('production mode', () => {
  let t: TestApp;
  let prefix: string;
  beforeAll(async () => {
    prefix = uniquePrefix('mtprod');
    t = await startTestApp({ ...mtEnv(prefix), NODE_ENV: 'production' });
  });
  afterAll(async () => {
    await t?.close();
    if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
  });

  it('answers a request without a tenant with 400 tenant-unresolved; probes need none', async () => {
    expectProblem(await send(t.app.port, 'GET', '/oidc/v1/.well-known/openid-configuration'), 400, 'tenant-unresolved', '/oidc/v1/.well-known/openid-configuration');
    expectProblem(await send(t.app.port, 'GET', '/api/v1/clients'), 400, 'tenant-unresolved', '/api/v1/clients');
    expect((await send(t.app.port, 'GET', '/healthz')).status).toBe(200);
    const res = await send(t.app.port, 'GET', '/oidc/v1/.well-known/openid-configuration', { tenant: '_platforms' });
    expect(res.json.issuer).toBe(`http://_platforms.localhost:${t.app.port}/oidc/v1`);
  });
});

describe('two instances, logs', () => {
  interface Started {
    app: App;
    lines: Array<Record<string, any>>;
  }
  let db: TestDatabase;
  let prefix: string;
  const apps: Started[] = [];

  async function start(): Promise<Started> {
    const lines: Array<Record<string, any>> = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line));
        done();
      },
    });
    const config = loadConfig({
      ...mtEnv(prefix),
      NODE_ENV: 'development',
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      STORAGE_POSTGRESQL_URL: db.url,
      SVC_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
      SVC_BOOTSTRAP_CLIENT_ID: BOOTSTRAP_ID,
      SVC_BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP_SECRET,
    });
    const app = await startApp(config, { log: pino({ level: 'debug' }, stream) });
    const started = { app, lines };
    apps.push(started);
    return started;
  }

  beforeAll(async () => {
    db = await migratedDatabase();
    prefix = uniquePrefix('mt2');
  });
  afterAll(async () => {
    for (const a of apps) await a.app.close();
    await db?.drop();
    if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
  });

  it('warns about the bootstrap administrator on every start and creates it once', async () => {
    const a = await start();
    const b = await start();
    for (const s of [a, b]) {
      expect(s.lines.filter((l) => l.level === 40 && /SVC_BOOTSTRAP_ADMIN_EMAIL\/PASSWORD are set/.test(l.msg))).toHaveLength(1);
    }
    const admin = await db.admin();
    try {
      const { rows } = await admin.query('SELECT count(*)::int AS n FROM users WHERE lower(email) = lower($1)', [ADMIN_EMAIL]);
      expect(rows[0].n).toBe(1);
    } finally {
      await admin.end();
    }
  });

  it('logs the development fallback to `default` as a rate-limited warning', async () => {
    const a = apps[0]!;
    for (let i = 0; i < 3; i++) expect((await send(a.app.port, 'GET', '/oidc/v1/jwks')).status).toBe(200);
    expect(a.lines.filter((l) => l.level === 40 && /falling back to the default tenant/.test(l.msg))).toHaveLength(1);
  });

  it('suspends a tenant on every instance through the tenant:changed event, evicting its actor (logged at debug)', async () => {
    const [a, b] = apps as [Started, Started];
    const name = slug('twin');
    const write = await platformToken(a.app.port, 'svc:tenants:write');
    expect((await send(a.app.port, 'POST', '/api/v1/tenants', { token: write, body: { slug: name, display_name: 'Twin' } })).status).toBe(201);
    // B serves the tenant (it was created elsewhere), so it has a live actor watching the channel.
    expect((await send(b.app.port, 'GET', '/oidc/v1/jwks', { tenant: name })).status).toBe(200);
    expect(b.app.pool.has(name)).toBe(true);

    const t0 = Date.now();
    expect((await send(a.app.port, 'PATCH', `/api/v1/tenants/${name}`, { token: write, body: { status: 'suspended' } })).status).toBe(200);
    // Well within the registry's 5 s cache TTL: only the event can have done it.
    let status = 0;
    while (Date.now() - t0 < 2000) {
      status = (await send(b.app.port, 'GET', '/oidc/v1/jwks', { tenant: name })).status;
      if (status === 403) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(403);
    expect(b.app.pool.has(name)).toBe(false);
    expect(b.lines).toContainEqual(expect.objectContaining({ level: 20, msg: 'tenant actor evicted', tenant: name, reason: 'suspended' }));

    expect((await send(a.app.port, 'PATCH', `/api/v1/tenants/${name}`, { token: write, body: { status: 'active' } })).status).toBe(200);
    // B had no actor left, so it relies on its cache TTL (or the event, if it still watched).
    let back = 0;
    for (const end = Date.now() + 7000; Date.now() < end; ) {
      back = (await send(b.app.port, 'GET', '/oidc/v1/jwks', { tenant: name })).status;
      if (back === 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(back).toBe(200);
  });
});
