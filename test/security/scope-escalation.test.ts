/**
 * Issue 12, hole 3: nobody grants what they do not hold. A caller holding only svc:clients:write
 * created a client allowed every svc:* scope and minted a key-rotating token; a caller holding only
 * svc:registration-tokens:write issued a token with allow-management-scopes +
 * allow-client-credentials, and register-rp minted an all-scope client with it. Now client writes
 * and registration tokens beyond the caller's own scopes are 403 insufficient-scope naming them,
 * and registered clients never get svc:* scopes their token's creator lacked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { requestToken, serviceClient, tokenFor } from '../helpers/oauth.js';
import { expectProblem } from '../helpers/problem.js';
import { REDIRECT, signInForToken } from '../helpers/user-token.js';
import { createUser } from '../helpers/users.js';

const EVERY = [
  'svc:clients:read', 'svc:clients:write', 'svc:clients:delete', 'svc:users:read', 'svc:users:write', 'svc:users:delete',
  'svc:sessions:read', 'svc:sessions:revoke', 'svc:jwks:read', 'svc:jwks:rotate', 'svc:audit:read', 'svc:stats:read',
  'svc:registration-tokens:read', 'svc:registration-tokens:write', 'svc:registration-tokens:delete',
].join(' ');

/** A 403 insufficient-scope whose detail, challenge and extension member name exactly `missing`. */
function expectBeyond(res: { status: number; headers: Headers; json: any }, path: string, missing: string[]): void {
  const body = expectProblem(res, 403, 'insufficient-scope', path);
  for (const s of missing) expect(body.detail).toContain(s);
  expect(body.missing_scopes).toEqual(missing);
  expect(res.headers.get('www-authenticate')).toBe(`Bearer error="insufficient_scope", scope="${missing.join(' ')}"`);
}

describe('hole 3: scope escalation', () => {
  let t: TestApp;
  let root: string;
  const clientCount = async () => (await api(t, 'GET', '/api/v1/clients?include_count=true&limit=1', { token: root })).json.pagination.total_count as number;

  beforeAll(async () => {
    t = await startTestApp({ SECURITY_RATE_LIMIT_WRITE: '10000', SECURITY_RATE_LIMIT_SENSITIVE: '10000' });
    root = await t.token(EVERY);
  });
  afterAll(async () => t?.close());

  it('svc:clients:write alone cannot create a client allowed scopes it lacks (the reported attack)', async () => {
    const writer = await t.token('svc:clients:write');
    const before = await clientCount();
    const body = { client_name: 'Escalator', grant_types: ['client_credentials'], scope: 'svc:clients:write svc:jwks:rotate svc:users:write' };
    expectBeyond(await api(t, 'POST', '/api/v1/clients', { token: writer, body }), '/api/v1/clients', ['svc:jwks:rotate', 'svc:users:write']);
    expect(await clientCount()).toBe(before);
    // Within what it holds, creation works as before.
    const ok = await api(t, 'POST', '/api/v1/clients', { token: writer, body: { ...body, scope: 'svc:clients:write' } });
    expect(ok.status, ok.text).toBe(201);
  });

  it('PUT, PATCH and secret regeneration of a client need every svc:* scope it is allowed', async () => {
    const strong = await serviceClient(t, root, EVERY);
    const writer = await t.token('svc:clients:write svc:clients:delete svc:users:read');
    const path = `/api/v1/clients/${strong.id}`;
    // Taking over a powerful client by changing how it authenticates, or by resetting its secret.
    expectBeyond(await api(t, 'PATCH', path, { token: writer, body: { client_name: 'mine now' } }), path, EVERY.split(' ').filter((s) => !['svc:clients:write', 'svc:clients:delete', 'svc:users:read'].includes(s)));
    expect((await api(t, 'PUT', path, { token: writer, body: { client_name: 'x', grant_types: ['client_credentials'], scope: 'svc:users:read' } })).status).toBe(403);
    expect((await api(t, 'POST', `${path}/secret`, { token: writer })).status).toBe(403);
    expect((await requestToken(t, strong, 'svc:jwks:rotate')).status).toBe(200); // the old secret still works
    expect((await api(t, 'GET', path, { token: root })).json.data.client_name).toBe(strong.data.client_name);

    // Its own kind of client: adding a scope it lacks is refused, keeping within it is fine.
    const weak = await serviceClient(t, root, 'svc:users:read');
    const weakPath = `/api/v1/clients/${weak.id}`;
    expectBeyond(await api(t, 'PATCH', weakPath, { token: writer, body: { scope: 'svc:users:read svc:jwks:rotate' } }), weakPath, ['svc:jwks:rotate']);
    expect((await api(t, 'PATCH', weakPath, { token: writer, body: { client_name: 'renamed' } })).status).toBe(200);
    const rotated = await api(t, 'POST', `${weakPath}/secret`, { token: writer });
    expect(rotated.status, rotated.text).toBe(200);
    expect((await tokenFor(t, { id: weak.id, secret: rotated.json.data.client_secret }, 'svc:users:read')).length).toBeGreaterThan(0);
  });

  it('a registration token beyond the caller is refused; registered clients get only the creator\'s svc:* scopes', async () => {
    const rtOnly = await t.token('svc:registration-tokens:write');
    const create = (token: string, policies: string[]) => api(t, 'POST', '/api/v1/registration-tokens', { token, body: { expires_in: 3600, max_usage_count: 5, policies } });
    expectBeyond(await create(rtOnly, ['allow-management-scopes', 'allow-client-credentials']), '/api/v1/registration-tokens', ['svc:clients:write']);
    expectBeyond(await create(rtOnly, ['allow-management-scopes']), '/api/v1/registration-tokens', ['svc:clients:write']);
    expect((await create(rtOnly, ['general-policy'])).status).toBe(201);

    const creator = await t.token('svc:registration-tokens:write svc:clients:write svc:users:read');
    const made = await create(creator, ['allow-management-scopes', 'allow-client-credentials']);
    expect(made.status, made.text).toBe(201);
    const register = (scope: string) =>
      api(t, 'POST', '/oidc/v1/register-rp', { headers: { authorization: `Bearer ${made.json.data.token}` }, body: { client_name: 'Registered', grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic', scope } });
    const beyond = await register('svc:users:read svc:jwks:rotate');
    expect(beyond.status).toBe(400);
    expect(beyond.json).toMatchObject({ error: 'invalid_client_metadata' });
    expect(beyond.json.error_description).toContain('svc:jwks:rotate');
    const within = await register('svc:users:read');
    expect(within.status, within.text).toBe(201);
    expect((await tokenFor(t, { id: within.json.client_id, secret: within.json.client_secret }, 'svc:users:read')).length).toBeGreaterThan(0);
    // The refused registration did not spend a use.
    expect((await api(t, 'GET', `/api/v1/registration-tokens/${made.json.data.jti}`, { token: await t.token('svc:registration-tokens:read') })).json.data.current_usage_count).toBe(1);
  });

  it('a registration token made before the rule (no recorded creator scopes) gives registrants no svc:* scope', async () => {
    const made = await api(t, 'POST', '/api/v1/registration-tokens', { token: root, body: { expires_in: 3600, max_usage_count: 5, policies: ['allow-management-scopes'] } });
    expect(made.status).toBe(201);
    await t.sql('UPDATE registration_tokens SET creator_scopes = NULL WHERE jti = ?', [made.json.data.jti]);
    const res = await api(t, 'POST', '/oidc/v1/register-rp', { headers: { authorization: `Bearer ${made.json.data.token}` }, body: { redirect_uris: [REDIRECT], scope: 'openid svc:users:read' } });
    expect(res.status).toBe(400);
    expect(res.json.error_description).toContain('svc:users:read');
  });

  describe('with a user token', () => {
    it("a tenant admin cannot create a client allowed the platform scopes its role lacks", async () => {
      const console1 = await api(t, 'POST', '/api/v1/clients', {
        token: root,
        body: { client_name: 'Console', redirect_uris: [REDIRECT], first_party: true, grant_types: ['authorization_code'], scope: `openid ${EVERY}` },
      });
      expect(console1.status, console1.text).toBe(201);
      const admin = await createUser(t, { role: 'admin' });
      const s = await signInForToken(t, console1.json.data, admin, { scope: `openid ${EVERY}` });
      const body = { client_name: 'Platform-level', grant_types: ['client_credentials'], scope: 'svc:clients:read svc:tenants:write svc:cross-tenant:write' };
      expectBeyond(await api(t, 'POST', '/api/v1/clients', { token: s.tokens.access_token, body }), '/api/v1/clients', ['svc:tenants:write', 'svc:cross-tenant:write']);
      const ok = await api(t, 'POST', '/api/v1/clients', { token: s.tokens.access_token, body: { ...body, scope: 'svc:clients:read' } });
      expect(ok.status, ok.text).toBe(201);
    });
  });
});
