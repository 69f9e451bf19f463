/**
 * Issue 12, the authorization model and hole 2: the Management API accepts a user's token (code +
 * PKCE with resource=urn:svc:api:v1) beside client-credentials tokens, and such a token carries at
 * most client-allowed ∩ requested ∩ role-granted scopes, checked again when USED: a demoted, locked,
 * disabled or deleted user's token stops working (and introspects inactive), and so does one whose
 * session or grant has ended (it names its grant). Audit entries name the user who acted and the client.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { introspect } from '../helpers/oauth.js';
import { expectInsufficientScope, expectUnauthorized } from '../helpers/problem.js';
import { REDIRECT, claimsOf, signInForToken, type SignedIn } from '../helpers/user-token.js';
import { createUser, type TestUser } from '../helpers/users.js';
import { awayFromWindowEdge } from '../helpers/fixed-window.js';
import * as oidc from 'openid-client';
import { ADMIN_CLIENT_ID } from '../../src/clients/system-clients.js';

const ALL_TENANT_SCOPES = [
  'svc:clients:read', 'svc:clients:write', 'svc:clients:delete', 'svc:users:read', 'svc:users:write', 'svc:users:delete',
  'svc:sessions:read', 'svc:sessions:revoke', 'svc:jwks:read', 'svc:jwks:rotate', 'svc:audit:read', 'svc:stats:read',
  'svc:registration-tokens:read', 'svc:registration-tokens:write', 'svc:registration-tokens:delete',
];

describe('Management API: user tokens', () => {
  let t: TestApp;
  let console1: { client_id: string; client_secret: string };
  let thirdParty: { client_id: string; client_secret: string };
  let admin: TestUser;
  let plain: TestUser;
  let root: string;

  beforeAll(async () => {
    t = await startTestApp({ SECURITY_RATE_LIMIT_READ: '10000', SECURITY_RATE_LIMIT_WRITE: '10000' });
    root = await t.token([...ALL_TENANT_SCOPES, 'svc:tenants:read']);
    const made = async (body: Record<string, unknown>) => {
      const res = await api(t, 'POST', '/api/v1/clients', { token: root, body });
      expect(res.status, res.text).toBe(201);
      return res.json.data as { client_id: string; client_secret: string };
    };
    // A stored first-party client allowed a few Management scopes (not all of them).
    console1 = await made({
      client_name: 'Stored console', application_type: 'web', redirect_uris: [REDIRECT], first_party: true,
      grant_types: ['authorization_code', 'refresh_token'], scope: 'openid offline_access svc:users:read svc:users:write svc:audit:read svc:jwks:read',
    });
    thirdParty = await made({
      client_name: 'Third party', application_type: 'web', redirect_uris: [REDIRECT],
      grant_types: ['authorization_code'], scope: 'openid svc:users:read svc:users:write',
    });
    admin = await createUser(t, { role: 'admin' });
    plain = await createUser(t, { role: 'user' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("an admin's token holds client-allowed ∩ requested ∩ role scopes and works on the API", async () => {
    const s = await signInForToken(t, console1, admin, { scope: 'openid offline_access svc:users:read svc:users:write svc:audit:read' });
    const at = claimsOf(s.tokens.access_token);
    expect(at).toMatchObject({ aud: 'urn:svc:api:v1', sub: admin.id, client_id: console1.client_id });
    // svc:jwks:read is allowed to the client but was not asked for.
    expect(at.scope.split(' ').sort()).toEqual(['svc:audit:read', 'svc:users:read', 'svc:users:write']);
    const list = await api(t, 'GET', '/api/v1/users', { token: s.tokens.access_token });
    expect(list.status, list.text).toBe(200);
    expect(list.json.data.map((u: { id: string }) => u.id)).toContain(admin.id);
    expectInsufficientScope(await api(t, 'GET', '/api/v1/jwks', { token: s.tokens.access_token }), '/api/v1/jwks', 'svc:jwks:read');
  });

  it('audit entries of actions done with a user token name the user and the client', async () => {
    const s = await signInForToken(t, console1, admin, { scope: 'openid svc:users:write svc:audit:read' });
    const created = await api(t, 'POST', '/api/v1/users', { token: s.tokens.access_token, body: { email: `made-${Date.now()}@example.com`, password: 'Correct-Horse-Battery-77' } });
    expect(created.status, created.text).toBe(201);
    const entries = await api(t, 'GET', '/api/v1/audit?type=user.created&limit=100', { token: s.tokens.access_token });
    expect(entries.status, entries.text).toBe(200);
    const entry = entries.json.data.find((e: { details: { user_id: string } }) => e.details.user_id === created.json.data.id);
    expect(entry).toMatchObject({ user_id: admin.id, username: admin.email, client_id: console1.client_id });
  });

  it('a user with role `user` gets no Management scope, through a first-party or a third-party client (hole 2)', async () => {
    const first = await signInForToken(t, console1, plain, { scope: 'openid svc:users:read svc:users:write' });
    expect(claimsOf(first.tokens.access_token).scope).toBeUndefined();
    expectInsufficientScope(await api(t, 'GET', '/api/v1/users', { token: first.tokens.access_token }), '/api/v1/users', 'svc:users:read');
    expectInsufficientScope(
      await api(t, 'POST', '/api/v1/users', { token: first.tokens.access_token, body: { email: `evil-${Date.now()}@example.com`, password: 'Correct-Horse-Battery-77', role: 'admin' } }),
      '/api/v1/users', 'svc:users:write',
    );
    const third = await signInForToken(t, thirdParty, plain, { scope: 'openid svc:users:read svc:users:write', consent: true });
    expect(claimsOf(third.tokens.access_token).scope).toBeUndefined();
    expectInsufficientScope(await api(t, 'GET', '/api/v1/users', { token: third.tokens.access_token }), '/api/v1/users', 'svc:users:read');
  });

  it('a role granted by an older token is checked at use: demotion narrows, promotion does not widen', async () => {
    const victim = await createUser(t, { role: 'admin' });
    const s = await signInForToken(t, console1, victim, { scope: 'openid offline_access svc:users:read' });
    const token = s.tokens.access_token;
    expect((await api(t, 'GET', '/api/v1/users', { token })).status).toBe(200);
    expect((await api(t, 'PATCH', `/api/v1/users/${victim.id}`, { token: root, body: { role: 'user' } })).status).toBe(200);
    expectInsufficientScope(await api(t, 'GET', '/api/v1/users', { token }), '/api/v1/users', 'svc:users:read');
    const seen = await introspect(t, token);
    expect(seen.json.active).toBe(true);
    expect(seen.json.scope).toBeUndefined();
    // A refresh after the demotion hands out no Management scope either.
    const refreshed = await oidc.refreshTokenGrant(s.config, s.tokens.refresh_token!);
    expect(claimsOf(refreshed.access_token).scope).toBeUndefined();
    // Promoted again: the old token works again, holding no more than it was issued with.
    expect((await api(t, 'PATCH', `/api/v1/users/${victim.id}`, { token: root, body: { role: 'admin' } })).status).toBe(200);
    expect((await api(t, 'GET', '/api/v1/users', { token })).status).toBe(200);
    expectInsufficientScope(await api(t, 'POST', '/api/v1/users', { token, body: {} }), '/api/v1/users', 'svc:users:write');
  });

  it("a locked, disabled or deleted user's token stops working and introspects inactive (hole 2)", async () => {
    for (const [label, change, undo] of [
      ['locked', (id: string) => api(t, 'POST', `/api/v1/users/${id}/lock`, { token: root }), (id: string) => api(t, 'DELETE', `/api/v1/users/${id}/lock`, { token: root })],
      ['disabled', (id: string) => api(t, 'PATCH', `/api/v1/users/${id}`, { token: root, body: { account_enabled: false } }), (id: string) => api(t, 'PATCH', `/api/v1/users/${id}`, { token: root, body: { account_enabled: true } })],
      ['deleted', (id: string) => api(t, 'DELETE', `/api/v1/users/${id}`, { token: root }), undefined],
    ] as const) {
      const victim = await createUser(t, { role: 'admin' });
      const s = await signInForToken(t, console1, victim, { scope: 'openid svc:users:read' });
      const token = s.tokens.access_token;
      expect((await api(t, 'GET', '/api/v1/users', { token })).status, label).toBe(200);
      expect([200, 204], label).toContain((await change(victim.id)).status);
      expectUnauthorized(await api(t, 'GET', '/api/v1/users', { token }), '/api/v1/users');
      expect((await introspect(t, token)).json, label).toEqual({ active: false });
      if (undo) {
        // The change ended the user's sessions and grants, and the token with them: undoing it
        // lets the user sign in again but does not bring the old token back.
        expect((await undo(victim.id)).status, label).toBe(200);
        expectUnauthorized(await api(t, 'GET', '/api/v1/users', { token }), '/api/v1/users');
        expect((await introspect(t, token)).json, label).toEqual({ active: false });
      }
    }
  });

  it("ending a user's session or grant ends the user's Management token too (revocation, password reset, refresh token revoked)", async () => {
    const revokeOne = async (id: string) => {
      const sessions = await api(t, 'GET', `/api/v1/sessions?username=${id}`, { token: root });
      expect(sessions.json.data).toHaveLength(1);
      return api(t, 'DELETE', `/api/v1/sessions/${sessions.json.data[0].jti}`, { token: root });
    };
    for (const [label, end] of [
      ['one session revoked', (_s: SignedIn, id: string) => revokeOne(id)],
      ['all sessions revoked', (_s: SignedIn, id: string) => api(t, 'DELETE', `/api/v1/sessions?username=${id}`, { token: root })],
      ['password reset', (_s: SignedIn, id: string) => api(t, 'POST', `/api/v1/users/${id}/password-reset`, { token: root, body: { new_password: 'Another-Passw0rd-123' } })],
      ['refresh token revoked', (s: SignedIn) => oidc.tokenRevocation(s.config, s.tokens.refresh_token!, { token_type_hint: 'refresh_token' })],
    ] as const) {
      const victim = await createUser(t, { role: 'admin' });
      const s = await signInForToken(t, console1, victim, { scope: 'openid offline_access svc:users:read' });
      const token = s.tokens.access_token;
      expect(typeof claimsOf(token).grant_id, label).toBe('string');
      expect((await api(t, 'GET', '/api/v1/users', { token })).status, label).toBe(200);
      const ended = await end(s, victim.id);
      if (ended) expect([200, 204], label).toContain(ended.status);
      expectUnauthorized(await api(t, 'GET', '/api/v1/users', { token }), '/api/v1/users');
      expect((await introspect(t, token)).json, label).toEqual({ active: false });
    }
  });

  it("another user's session ending leaves this user's token alone", async () => {
    const a = await createUser(t, { role: 'admin' });
    const b = await createUser(t, { role: 'admin' });
    const sa = await signInForToken(t, console1, a, { scope: 'openid svc:users:read' });
    const sb = await signInForToken(t, console1, b, { scope: 'openid svc:users:read' });
    expect((await api(t, 'DELETE', `/api/v1/sessions?username=${b.id}`, { token: root })).status).toBe(200);
    expect((await api(t, 'GET', '/api/v1/users', { token: sa.tokens.access_token })).status).toBe(200);
    expect((await introspect(t, sa.tokens.access_token)).json.active).toBe(true);
    expectUnauthorized(await api(t, 'GET', '/api/v1/users', { token: sb.tokens.access_token }), '/api/v1/users');
  });

  it('the built-in console client svc-admin gets an admin every tenant-level scope, a plain user none', async () => {
    const svcAdmin = { client_id: ADMIN_CLIENT_ID, redirect: `${new URL(t.issuer).origin}/admin/callback` };
    const everything = `openid ${ALL_TENANT_SCOPES.join(' ')} svc:tenants:read svc:tenants:write svc:cross-tenant:read svc:cross-tenant:write`;
    const s = await signInForToken(t, svcAdmin, admin, { scope: everything });
    const at = claimsOf(s.tokens.access_token);
    expect(at).toMatchObject({ aud: 'urn:svc:api:v1', sub: admin.id, client_id: ADMIN_CLIENT_ID });
    // Not the tenant or cross-tenant scopes: those need a platform role in `_platforms`.
    expect(at.scope.split(' ').sort()).toEqual([...ALL_TENANT_SCOPES].sort());
    expect((await api(t, 'GET', '/api/v1/clients', { token: s.tokens.access_token })).status).toBe(200);
    const p = await signInForToken(t, svcAdmin, plain, { scope: everything });
    expect(claimsOf(p.tokens.access_token).scope).toBeUndefined();
    expectInsufficientScope(await api(t, 'GET', '/api/v1/clients', { token: p.tokens.access_token }), '/api/v1/clients', 'svc:clients:read');
  });

  it('rate limits count per user for user tokens: one admin cannot use up another\'s budget', { timeout: 60_000 }, async () => {
    const a = await createUser(t, { role: 'admin' });
    const b = await createUser(t, { role: 'admin' });
    const sa = await signInForToken(t, console1, a, { scope: 'openid svc:users:write' });
    const sb = await signInForToken(t, console1, b, { scope: 'openid svc:users:write' });
    const reset = (s: typeof sa, who: TestUser) => api(t, 'POST', `/api/v1/users/${who.id}/password-reset`, { token: s.tokens.access_token, body: { new_password: 'Another-Passw0rd-123' } });
    const limit = t.app.ctx.config.security.rate_limit.sensitive;
    await awayFromWindowEdge(t.app.ctx.config.security.rate_limit.window_seconds);
    for (let i = 0; i < limit; i++) expect((await reset(sa, plain)).status).toBe(200);
    expect((await reset(sa, plain)).status).toBe(429);
    expect((await reset(sb, plain)).status).toBe(200);
  });

  it('client-credentials tokens keep working as before', async () => {
    const token = await t.token('svc:users:read');
    expect((await api(t, 'GET', '/api/v1/users', { token })).status).toBe(200);
    expect((await introspect(t, token)).json).toMatchObject({ active: true, scope: 'svc:users:read' });
  });
});
