/**
 * The sessions resource (spec 4.5) against the real server. Sessions, grants and tokens are written
 * as oidc-provider would store them (same models and payload fields), then read and revoked via the API.
 */
import * as oidcClient from 'openid-client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { createClient, createUser } from '../helpers/users.js';

const T = 'default';
const TTL = 1209600; // default ttl.Session

describe('sessions API', () => {
  let t: TestApp;
  let read: string;
  let revoke: string;
  const now = () => Math.floor(Date.now() / 1000);
  const call = (method: string, path: string, token = read) => api(t, method, path, { token });
  const oidc = () => t.app.ctx.storage.oidc;

  /** A signed-in session with one grant (and a refresh + access token) per client. */
  async function session(jti: string, accountId: string | undefined, clients: string[], opts: { iat?: number; exp?: number; loginTs?: number } = {}) {
    const exp = opts.exp ?? now() + 3600;
    const authorizations: Record<string, { sid: string; grantId: string }> = {};
    for (const c of clients) {
      const grantId = `grant-${jti}-${c}`;
      authorizations[c] = { sid: `sid-${jti}-${c}`, grantId };
      await oidc().upsert(T, 'Grant', grantId, { jti: grantId, kind: 'Grant', accountId, clientId: c, exp }, exp);
      await oidc().upsert(T, 'RefreshToken', `rt-${grantId}`, { jti: `rt-${grantId}`, kind: 'RefreshToken', grantId, accountId, clientId: c }, exp);
      await oidc().upsert(T, 'AccessToken', `at-${grantId}`, { jti: `at-${grantId}`, kind: 'AccessToken', grantId, accountId, clientId: c }, now() + 600);
    }
    const payload: Record<string, unknown> = { jti, kind: 'Session', uid: `uid-${jti}`, iat: opts.iat ?? now() - 60, exp, authorizations };
    if (accountId) Object.assign(payload, { accountId, loginTs: opts.loginTs ?? now() - 60 });
    await oidc().upsert(T, 'Session', jti, payload, exp);
  }
  const alive = async (model: string, id: string) => (await oidc().find(T, model, id)) !== undefined;
  async function tokensAlive(jti: string, client: string) {
    const g = `grant-${jti}-${client}`;
    return [await alive('Grant', g), await alive('RefreshToken', `rt-${g}`), await alive('AccessToken', `at-${g}`)];
  }
  const jtis = (res: { json: any }) => res.json.data.map((s: { jti: string }) => s.jti);

  beforeAll(async () => {
    t = await startTestApp({ SECURITY_RATE_LIMIT_DELETE: '10000', SECURITY_RATE_LIMIT_READ: '10000' });
    read = await t.token('svc:sessions:read');
    revoke = await t.token(['svc:sessions:read', 'svc:sessions:revoke']);
  });
  afterAll(async () => t?.close());

  beforeEach(async () => {
    // Each test starts from an empty session table.
    for (const s of await oidc().listByModel(T, 'Session')) await oidc().destroy(T, 'Session', s.id);
  });

  it('lists sessions with the contract fields, oldest first', async () => {
    const n = now();
    await session('s-a', 'alice', ['app-1', 'app-2'], { iat: n - 300, loginTs: n - 200, exp: n + TTL - 30 });
    await session('s-b', 'bob', ['app-1'], { iat: n - 100, loginTs: n - 60 });
    const res = await call('GET', '/api/v1/sessions');
    expect(res.status).toBe(200);
    expect(jtis(res)).toEqual(['s-a', 's-b']);
    expect(res.json.data[0]).toEqual({
      jti: 's-a',
      account_id: 'alice',
      client_ids: ['app-1', 'app-2'],
      created_at: new Date((n - 300) * 1000).toISOString(),
      expires_at: new Date((n + TTL - 30) * 1000).toISOString(),
      // Re-saved 30 s ago (exp = save time + ttl.Session), later than the login.
      last_active_at: new Date((n - 30) * 1000).toISOString(),
      active: true,
    });
    expect(res.json.data[1].last_active_at).toBe(new Date((n - 60) * 1000).toISOString());
    expect(res.text).not.toContain('grant-');
    expect(res.json.pagination).toEqual({ has_more: false, next_cursor: null });
  });

  it('filters by account (username), client_id and active, and never lists expired sessions', async () => {
    await session('s-1', 'alice', ['app-1']);
    await session('s-2', 'alice', ['app-2']);
    await session('s-3', 'bob', ['app-1']);
    await session('s-old', 'alice', ['app-1'], { exp: now() - 1 });
    const q = async (s: string) => jtis(await call('GET', `/api/v1/sessions?${s}`));
    expect((await q('')).sort()).toEqual(['s-1', 's-2', 's-3']);
    expect(await q('username=alice')).toEqual(['s-1', 's-2']);
    expect(await q('client_id=app-1')).toEqual(['s-1', 's-3']);
    expect(await q('username=alice&client_id=app-1')).toEqual(['s-1']);
    // What is listed lives (expired rows never are): nothing is inactive.
    expect(await q('active=false')).toEqual([]);
    expect((await q('active=true')).sort()).toEqual(['s-1', 's-2', 's-3']);
    expect(await q('username=nobody')).toEqual([]);
  });

  it("a visitor's session without an account is no session of a user: not listed, counted, read or revoked", async () => {
    await session('s-user', 'alice', ['app-1']);
    await session('s-anon', undefined, []);
    const all = await call('GET', '/api/v1/sessions?include_count=true');
    expect(jtis(all)).toEqual(['s-user']);
    expect(all.json.pagination.total_count).toBe(1);
    expect(jtis(await call('GET', '/api/v1/sessions?active=false'))).toEqual([]);
    expect((await call('GET', '/api/v1/sessions/s-anon')).status).toBe(404);
    expect((await call('DELETE', '/api/v1/sessions/s-anon', revoke)).status).toBe(404);
    const stats = await api(t, 'GET', '/api/v1/stats', { token: await t.token('svc:stats:read') });
    expect(stats.json.data.sessions).toEqual({ total: 1, active: 1 });
  });

  it('pages with cursors and counts on request', async () => {
    const n = now();
    for (let i = 0; i < 5; i++) await session(`p-${i}`, 'pager', ['app'], { iat: n - 100 + i });
    const p1 = await call('GET', '/api/v1/sessions?limit=2&include_count=true');
    expect(jtis(p1)).toEqual(['p-0', 'p-1']);
    expect(p1.json.pagination).toEqual({ has_more: true, next_cursor: expect.any(String), total_count: 5 });
    const p2 = await call('GET', `/api/v1/sessions?limit=2&after=${encodeURIComponent(p1.json.pagination.next_cursor)}`);
    expect(jtis(p2)).toEqual(['p-2', 'p-3']);
    const p3 = await call('GET', `/api/v1/sessions?limit=2&after=${encodeURIComponent(p2.json.pagination.next_cursor)}`);
    expect(jtis(p3)).toEqual(['p-4']);
    expect(p3.json.pagination.has_more).toBe(false);
  });

  it('validates the list query at its limits', async () => {
    const status = async (s: string) => (await call('GET', `/api/v1/sessions?${s}`)).status;
    expect(await status(`username=${'u'.repeat(255)}`)).toBe(200);
    expect(await status(`username=${'u'.repeat(256)}`)).toBe(422);
    expect(await status(`client_id=${'c'.repeat(255)}`)).toBe(200);
    expect(await status(`client_id=${'c'.repeat(256)}`)).toBe(422);
    expect(await status('active=maybe')).toBe(422);
    expect(await status('limit=101')).toBe(422);
    const forged = await call('GET', '/api/v1/sessions?after=eyJ4Ijp9.forged');
    expect(forged.status).toBe(422);
    expect(forged.json.errors).toEqual([{ field: 'after', message: 'Invalid cursor' }]);
  });

  it('gets one session and answers 404 for unknown or expired ones', async () => {
    await session('s-get', 'carol', ['app-9']);
    await session('s-expired', 'carol', ['app-9'], { exp: now() - 5 });
    const res = await call('GET', '/api/v1/sessions/s-get');
    expect(res.status).toBe(200);
    expect(res.json.data).toMatchObject({ jti: 's-get', account_id: 'carol', client_ids: ['app-9'], active: true });
    expect((await call('GET', '/api/v1/sessions/nope')).status).toBe(404);
    expect((await call('GET', '/api/v1/sessions/s-expired')).status).toBe(404);
  });

  it('revokes one session with its grants and tokens, leaving the others alone', async () => {
    await session('s-kill', 'dave', ['app-1', 'app-2']);
    await session('s-keep', 'dave', ['app-1']);
    expect(await tokensAlive('s-kill', 'app-1')).toEqual([true, true, true]);

    expect((await call('DELETE', '/api/v1/sessions/s-kill', read)).status).toBe(403); // needs :revoke
    const res = await call('DELETE', '/api/v1/sessions/s-kill', revoke);
    expect(res.status).toBe(204);
    expect(await alive('Session', 's-kill')).toBe(false);
    expect(await tokensAlive('s-kill', 'app-1')).toEqual([false, false, false]);
    expect(await tokensAlive('s-kill', 'app-2')).toEqual([false, false, false]);
    expect(await alive('Session', 's-keep')).toBe(true);
    expect(await tokensAlive('s-keep', 'app-1')).toEqual([true, true, true]);

    expect((await call('GET', '/api/v1/sessions/s-kill')).status).toBe(404);
    expect((await call('DELETE', '/api/v1/sessions/s-kill', revoke)).status).toBe(404);
    const audit = await t.app.ctx.storage.audit.list(T, { type: 'session.revoked', user_id: 'dave' }, { limit: 10, include_count: false });
    expect(audit.items[0]).toMatchObject({ client_id: 'bootstrap-admin', details: { jti: 's-kill', account_id: 'dave', client_ids: ['app-1', 'app-2'] } });
  });

  it('concurrent revocations of one session: one 204 and one session.revoked entry, the rest 404', async () => {
    await session('s-race', 'gina', ['app-1']);
    const statuses = (await Promise.all([1, 2, 3, 4, 5, 6].map(() => call('DELETE', '/api/v1/sessions/s-race', revoke)))).map((r) => r.status).sort();
    expect(statuses).toEqual([204, 404, 404, 404, 404, 404]);
    const audit = await t.app.ctx.storage.audit.list(T, { type: 'session.revoked', user_id: 'gina' }, { limit: 10, include_count: false });
    expect(audit.items).toHaveLength(1);
  });

  it('checks the scope before looking the session up', async () => {
    const none = await t.token('svc:users:read');
    expect((await call('GET', '/api/v1/sessions/unknown', none)).status).toBe(403);
    expect((await call('DELETE', '/api/v1/sessions/unknown', read)).status).toBe(403);
    expect((await call('DELETE', '/api/v1/sessions?username=x', read)).status).toBe(403);
  });

  describe('bulk revoke', () => {
    beforeEach(async () => {
      await session('b-1', 'erin', ['app-1']);
      await session('b-2', 'erin', ['app-2']);
      await session('b-3', 'frank', ['app-1']);
      await session('b-4', 'frank', ['app-3']);
    });
    const remaining = async () => (await oidc().listByModel(T, 'Session')).map((s) => s.id).sort();

    it('refuses to run without a filter (422) and revokes nothing', async () => {
      const res = await call('DELETE', '/api/v1/sessions', revoke);
      expect(res.status).toBe(422);
      expect(res.json).toMatchObject({ type: 'urn:svc:error:validation', status: 422 });
      expect(res.json.errors.map((e: { field: string }) => e.field)).toEqual(['username', 'client_id']);
      expect(await remaining()).toEqual(['b-1', 'b-2', 'b-3', 'b-4']);
      expect((await call('DELETE', `/api/v1/sessions?username=${'u'.repeat(256)}`, revoke)).status).toBe(422);
    });

    it('revokes by account', async () => {
      const res = await call('DELETE', '/api/v1/sessions?username=erin', revoke);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ data: { revoked_count: 2 } });
      expect(await remaining()).toEqual(['b-3', 'b-4']);
      expect(await tokensAlive('b-1', 'app-1')).toEqual([false, false, false]);
      expect(await tokensAlive('b-3', 'app-1')).toEqual([true, true, true]);
    });

    it('concurrent bulk revocations count and audit each session once', async () => {
      const entries = async () => (await t.app.ctx.storage.audit.list(T, { type: 'session.revoked', user_id: 'erin' }, { limit: 100, include_count: false })).items.length;
      const before = await entries();
      const answers = await Promise.all([1, 2, 3, 4].map(() => call('DELETE', '/api/v1/sessions?username=erin', revoke)));
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      expect(answers.reduce((n, r) => n + r.json.data.revoked_count, 0)).toBe(2);
      expect((await entries()) - before).toBe(2);
    });

    it('revokes by client, and by account and client together', async () => {
      expect((await call('DELETE', '/api/v1/sessions?client_id=app-1', revoke)).json).toEqual({ data: { revoked_count: 2 } });
      expect(await remaining()).toEqual(['b-2', 'b-4']);
      expect((await call('DELETE', '/api/v1/sessions?username=frank&client_id=app-2', revoke)).json).toEqual({ data: { revoked_count: 0 } });
      expect((await call('DELETE', '/api/v1/sessions?username=frank&client_id=app-3', revoke)).json).toEqual({ data: { revoked_count: 1 } });
      expect(await remaining()).toEqual(['b-2']);
    });
  });

  describe('with a real sign-in (Chromium)', () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchBrowser();
    });
    afterAll(async () => browser?.close());

    it('shows the session oidc-provider stored, and revoking it kills its refresh token and the login', async () => {
      // Loopback (allowed with NODE_ENV=test); nothing listens there, the page route answers instead.
      const APP = 'http://127.0.0.1:65534';
      const user = await createUser(t);
      const client = await createClient(t, {
        client_name: 'Session RP', application_type: 'web', redirect_uris: [`${APP}/cb`], first_party: true,
        grant_types: ['authorization_code', 'refresh_token'], scope: 'openid offline_access',
      });
      const config = await oidcClient.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidcClient.allowInsecureRequests] });
      const page = await (await browser.newContext()).newPage();
      await page.route(`${APP}/**`, (route) => route.fulfill({ status: 200, body: 'rp' }));
      const authorize = async (extra: Record<string, string> = {}) => {
        const verifier = oidcClient.randomPKCECodeVerifier();
        const state = oidcClient.randomState();
        const url = oidcClient.buildAuthorizationUrl(config, {
          redirect_uri: `${APP}/cb`, scope: 'openid offline_access', state,
          code_challenge: await oidcClient.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra,
        });
        await page.goto(url.href);
        return { verifier, state };
      };

      const first = await authorize();
      await page.getByLabel('E-mail').fill(user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${APP}/cb**`); // first-party: no consent page
      const tokens = await oidcClient.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: first.verifier, expectedState: first.state });
      // The refresh token works while the session lives (rotation hands out a new one).
      const refreshed = await oidcClient.refreshTokenGrant(config, tokens.refresh_token!);
      expect(refreshed.refresh_token).toBeTruthy();

      const listed = await call('GET', `/api/v1/sessions?username=${user.id}`);
      expect(listed.json.data).toHaveLength(1);
      const s = listed.json.data[0];
      expect(s).toMatchObject({ account_id: user.id, client_ids: [client.client_id], active: true });
      expect(Date.parse(s.expires_at) - Date.now()).toBeGreaterThan((TTL - 120) * 1000);
      expect((await call('GET', `/api/v1/users/${user.id}/sessions`, await t.token('svc:sessions:read'))).json.data.map((x: { jti: string }) => x.jti)).toEqual([s.jti]);

      // A silent authorization request with the browser's cookies: answered with a code while the
      // session lives. (Sent with fetch: Playwright routes do not see the redirect of a page.goto.)
      const silent = async () => {
        const cookies = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
        const url = oidcClient.buildAuthorizationUrl(config, {
          redirect_uri: `${APP}/cb`, scope: 'openid', state: 'silent', prompt: 'none',
          code_challenge: await oidcClient.calculatePKCECodeChallenge(oidcClient.randomPKCECodeVerifier()), code_challenge_method: 'S256',
        });
        const res = await fetch(url.href.replace(/^http:\/\/localhost:/, 'http://127.0.0.1:'), { redirect: 'manual', headers: { cookie: cookies } });
        expect(res.status).toBe(303);
        return new URL(res.headers.get('location')!).searchParams;
      };
      expect((await silent()).get('code')).toBeTruthy();

      expect((await call('DELETE', `/api/v1/sessions/${s.jti}`, revoke)).status).toBe(204);
      await expect(oidcClient.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
      const after = await silent();
      expect(after.get('error')).toBe('login_required');
      expect(after.get('state')).toBe('silent');
      await page.context().close();
    });
  });
});

