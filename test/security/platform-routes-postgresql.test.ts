/**
 * Issue 12, hole 1: `/platform/*` trusted any `_platforms` user token. A third-party client
 * registered through register-rp, signed in by the superadmin with scope=openid, received a token
 * that could create and suspend tenants and read their users. Now the platform routes need a
 * Management token (audience urn:svc:api:v1) of a FIRST-PARTY client, a user with the role
 * platform_admin or superadmin, and the route's svc:tenants:* scope. Multi-tenant mode: PostgreSQL
 * and Redis. openid-client is the relying party; its requests reach the `_platforms` issuer
 * through 127.0.0.1 with the tenant header (fetch cannot resolve `_platforms.localhost` here).
 */
import { randomBytes } from 'node:crypto';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, dropRedisKeys, startTestApp, type TestApp } from '../helpers/app.js';
import { expectInsufficientScope, expectProblem, expectUnauthorized } from '../helpers/problem.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { send } from '../helpers/tenant-http.js';
import { claimsOf } from '../helpers/user-token.js';
import { HttpSession, loopbackFetch } from '../helpers/code-flow.js';

const ADMIN_EMAIL = 'root@platform.example.com';
const ADMIN_PASSWORD = 'Platform-Admin-Passw0rd';
const RESOURCE = 'urn:svc:api:v1';
const P = '_platforms';
const RP = 'http://127.0.0.1:65532';
const REDIRECT = `${RP}/cb`;
const TENANT_SCOPES = 'svc:tenants:read svc:tenants:write svc:cross-tenant:read';

describe('hole 1: /platform/* needs a first-party Management token of a platform administrator', () => {
  let t: TestApp;
  let port: number;
  let prefix: string;
  const issuer = () => `http://${P}.localhost:${port}/oidc/v1`;
  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

  async function machineToken(scope: string): Promise<string> {
    const res = await send(port, 'POST', '/oidc/v1/token', { tenant: P, auth: basic(BOOTSTRAP_ID, BOOTSTRAP_SECRET), form: { grant_type: 'client_credentials', resource: RESOURCE, scope } });
    expect(res.status, res.text).toBe(200);
    return res.json.access_token;
  }

  async function apiClient(body: Record<string, unknown>): Promise<{ client_id: string; client_secret: string }> {
    const token = await machineToken(`svc:clients:write ${TENANT_SCOPES} svc:users:read`);
    const res = await send(port, 'POST', '/api/v1/clients', { tenant: P, token, body: { application_type: 'web', redirect_uris: [REDIRECT], grant_types: ['authorization_code'], ...body } });
    expect(res.status, res.text).toBe(201);
    return res.json.data;
  }

  async function userIn(role: string): Promise<{ id: string; email: string; password: string }> {
    const token = await machineToken('svc:users:write');
    const email = `u${randomBytes(4).toString('hex')}@example.com`;
    const password = 'Correct-Horse-Battery-9';
    const res = await send(port, 'POST', '/api/v1/users', { tenant: P, token, body: { email, password, role } });
    expect(res.status, res.text).toBe(201);
    return { id: res.json.data.id, email, password };
  }

  /** Code + PKCE with openid-client; the user signs in (and consents when asked) in Chromium. */
  async function signIn(client: { client_id: string; client_secret: string }, who: { email: string; password: string }, params: Record<string, string>) {
    const viaLoopback: oidc.CustomFetch = (url, options) => {
      const headers = new Headers(options.headers as HeadersInit);
      headers.set('x-tenant-id', P);
      return fetch(url.replace(`//${P}.localhost:`, '//127.0.0.1:'), { ...options, headers } as RequestInit);
    };
    const config = await oidc.discovery(new URL(issuer()), client.client_id, client.client_secret, undefined, {
      execute: [oidc.allowInsecureRequests],
      [oidc.customFetch]: viaLoopback,
    });
    config[oidc.customFetch] = viaLoopback;
    // The user signs in through the sign-in (and consent) pages over HTTP with a cookie jar; the
    // flow stops at the redirect to REDIRECT (nothing listens there) and takes the code.
    const session = new HttpSession(issuer(), who, loopbackFetch(port));
    session.consent = true;
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, state, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...params });
    const callback = await session.authorize(url.href, REDIRECT);
    return oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
  }

  const get = (path: string, token: string) => send(port, 'GET', path, { tenant: P, token });
  const create = (token: string) => send(port, 'POST', '/platform/tenants', { tenant: P, token, body: { slug: `t-${randomBytes(3).toString('hex')}`, display_name: 'Made here' } });

  beforeAll(async () => {
    prefix = uniquePrefix('h1');
    t = await startTestApp({
      MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', REDIS_URL: SHARED_REDIS_URL, REDIS_KEY_PREFIX: prefix,
      SVC_BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL, SVC_BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
    });
    port = t.app.port;
  });
  afterAll(async () => {
    await t?.close();
    if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
  });

  it("refuses the superadmin's token from a client registered through register-rp (the reported attack)", async () => {
    const rt = await send(port, 'POST', '/api/v1/registration-tokens', { tenant: P, token: await machineToken('svc:registration-tokens:write'), body: { expires_in: 3600, max_usage_count: 1 } });
    expect(rt.status, rt.text).toBe(201);
    const reg = await send(port, 'POST', '/oidc/v1/register-rp', { tenant: P, token: rt.json.data.token, body: { client_name: 'Innocent app', redirect_uris: [REDIRECT], scope: 'openid' } });
    expect(reg.status, reg.text).toBe(201);
    const tokens = await signIn(reg.json, { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, { scope: 'openid' });
    for (const res of [await get('/platform/tenants', tokens.access_token), await create(tokens.access_token), await get(`/platform/tenants/${P}/users`, tokens.access_token)]) {
      expect(res.status).toBe(401);
    }
    expectUnauthorized(await get('/platform/tenants', tokens.access_token), '/platform/tenants');
    const list = await get('/platform/tenants', await machineToken('svc:tenants:read'));
    expect(list.status).toBe(401); // a client's own token is no platform administrator either
  });

  it('refuses a Management token of a third-party client, even with the tenant scopes', async () => {
    const third = await apiClient({ client_name: 'Third party with tenant scopes', scope: `openid ${TENANT_SCOPES}` });
    const tokens = await signIn(third, { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, { scope: `openid ${TENANT_SCOPES}`, resource: RESOURCE });
    expect(claimsOf(tokens.access_token).scope).toContain('svc:tenants:read');
    expectProblem(await get('/platform/tenants', tokens.access_token), 403, 'forbidden', '/platform/tenants');
  });

  it('needs the matching svc:tenants:* scope, and the platform role at use', async () => {
    const firstParty = await apiClient({ client_name: 'Platform console', first_party: true, scope: `openid ${TENANT_SCOPES}` });
    const readOnly = await signIn(firstParty, { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, { scope: 'openid svc:tenants:read', resource: RESOURCE });
    expect((await get('/platform/tenants', readOnly.access_token)).status).toBe(200);
    expectInsufficientScope(await create(readOnly.access_token), '/platform/tenants', 'svc:tenants:write');
    expectInsufficientScope(await get(`/platform/tenants/${P}/users`, readOnly.access_token), `/platform/tenants/${P}/users`, 'svc:cross-tenant:read');

    const pa = await userIn('platform_admin');
    const full = await signIn(firstParty, pa, { scope: `openid ${TENANT_SCOPES}`, resource: RESOURCE });
    const made = await create(full.access_token);
    expect(made.status, made.text).toBe(201);
    const audit = await t.sql("SELECT user_id, client_id FROM audit_entries WHERE tenant_id = '_platforms' AND type = 'tenant.created' AND details->>'slug' = ?", [made.json.data.slug]);
    expect(audit).toEqual([{ user_id: pa.id, client_id: firstParty.client_id }]);
    expect((await get(`/platform/tenants/${P}/users`, full.access_token)).status).toBe(200);

    // Demoted: the same token is refused at once.
    const demote = await send(port, 'PATCH', `/api/v1/users/${pa.id}`, { tenant: P, token: await machineToken('svc:users:write'), body: { role: 'user' } });
    expect(demote.status, demote.text).toBe(200);
    expectProblem(await get('/platform/tenants', full.access_token), 403, 'forbidden', '/platform/tenants');

    // An ordinary `_platforms` user signed in through the first-party client gets no tenant scope at all.
    const plain = await userIn('user');
    const plainTokens = await signIn(firstParty, plain, { scope: `openid ${TENANT_SCOPES}`, resource: RESOURCE });
    expect(claimsOf(plainTokens.access_token).scope).toBeUndefined();
    expectProblem(await get('/platform/tenants', plainTokens.access_token), 403, 'forbidden', '/platform/tenants');
  });

  it('in `_platforms`, registration never hands out svc:tenants:* or svc:cross-tenant:* its creator lacked (hole 3)', async () => {
    const policies = ['allow-management-scopes', 'allow-client-credentials'];
    const make = async (scope: string) =>
      send(port, 'POST', '/api/v1/registration-tokens', { tenant: P, token: await machineToken(scope), body: { expires_in: 3600, max_usage_count: 3, policies } });
    const weak = await make('svc:registration-tokens:write');
    expectInsufficientScope(weak, '/api/v1/registration-tokens', 'svc:clients:write');
    const made = await make('svc:registration-tokens:write svc:clients:write');
    expect(made.status, made.text).toBe(201);
    const register = (scope: string) =>
      send(port, 'POST', '/oidc/v1/register-rp', { tenant: P, token: made.json.data.token, body: { client_name: 'Automation', grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic', scope } });
    for (const scope of ['svc:tenants:write', 'svc:cross-tenant:write svc:clients:write', 'svc:tenants:read']) {
      const res = await register(scope);
      expect(res.status, res.text).toBe(400);
      expect(res.json.error).toBe('invalid_client_metadata');
    }
    expect((await register('svc:clients:write')).status).toBe(201);
  });

  it("a `_platforms` user token crosses into a tenant only with a platform role's cross-tenant scope; an admin's does not", async () => {
    const slug = `x-${randomBytes(3).toString('hex')}`;
    const made = await send(port, 'POST', '/api/v1/tenants', { tenant: P, token: await machineToken('svc:tenants:write'), body: { slug, display_name: 'Crossed' } });
    expect(made.status, made.text).toBe(201);
    const firstParty = await apiClient({ client_name: 'Platform console 2', first_party: true, scope: 'openid svc:cross-tenant:read svc:users:read' });
    const want = { scope: 'openid svc:cross-tenant:read svc:users:read', resource: RESOURCE };
    const superToken = (await signIn(firstParty, { email: ADMIN_EMAIL, password: ADMIN_PASSWORD }, want)).access_token;
    expect((await send(port, 'GET', '/api/v1/users', { tenant: slug, token: superToken })).status).toBe(200);
    // A `_platforms` admin is a tenant-level role there: no cross-tenant scope, so no crossing.
    const admin = await userIn('admin');
    const adminToken = (await signIn(firstParty, admin, want)).access_token;
    expect(claimsOf(adminToken).scope).toBe('svc:users:read');
    expectInsufficientScope(await send(port, 'GET', '/api/v1/users', { tenant: slug, token: adminToken }), '/api/v1/users', 'svc:cross-tenant:read');
    expect((await send(port, 'GET', '/api/v1/users', { tenant: P, token: adminToken })).status).toBe(200);
  });
});
