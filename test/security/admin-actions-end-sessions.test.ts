/**
 * Issue 12, hole 8: an administrator's password reset, MFA reset, lock, disable and delete left the
 * user's sessions and refresh tokens alive (only DELETE ended them): whoever held the old password
 * or a stolen session kept it, and after an unlock or re-enable it worked again. Each action now
 * ends them: the old refresh token is refused (openid-client) and `prompt=none` answers
 * `login_required`, also after the account is unlocked or enabled again.
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { REDIRECT, signInForToken, type SignedIn } from '../helpers/user-token.js';
import { createUser } from '../helpers/users.js';

type Action = [name: string, act: (id: string) => Promise<{ status: number }>, undo?: (id: string) => Promise<{ status: number }>];

describe('hole 8: administrator actions end the user\'s sessions and refresh tokens', () => {
  let t: TestApp;
  let client: { client_id: string; client_secret: string };
  let root: string;

  beforeAll(async () => {
    t = await startTestApp({ SECURITY_RATE_LIMIT_SENSITIVE: '1000', SECURITY_RATE_LIMIT_WRITE: '1000' });
    root = await t.token('svc:users:read svc:users:write svc:users:delete svc:clients:write svc:audit:read');
    const res = await api(t, 'POST', '/api/v1/clients', {
      token: root,
      body: { client_name: 'RP', redirect_uris: [REDIRECT], first_party: true, grant_types: ['authorization_code', 'refresh_token'], scope: 'openid offline_access' },
    });
    expect(res.status, res.text).toBe(201);
    client = res.json.data;
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A silent authorization request with the signed-in session's cookies: the query of the redirect. */
  async function silent(s: SignedIn): Promise<URLSearchParams> {
    const cookies = s.session.cookieHeader();
    const url = oidc.buildAuthorizationUrl(s.config, {
      redirect_uri: REDIRECT, scope: 'openid', state: 'silent', prompt: 'none',
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256',
    });
    const res = await fetch(url.href.replace(/^http:\/\/localhost:/, 'http://127.0.0.1:'), { redirect: 'manual', headers: { cookie: cookies } });
    expect(res.status).toBe(303);
    return new URL(res.headers.get('location')!).searchParams;
  }

  const post = (path: string, body?: unknown) => api(t, 'POST', path, { token: root, body });
  const actions: Action[] = [
    ['password reset', (id) => post(`/api/v1/users/${id}/password-reset`, { new_password: 'A-Brand-New-Passw0rd' })],
    ['MFA reset', (id) => post(`/api/v1/users/${id}/mfa/reset`)],
    ['lock', (id) => post(`/api/v1/users/${id}/lock`), (id) => api(t, 'DELETE', `/api/v1/users/${id}/lock`, { token: root })],
    ['disable', (id) => api(t, 'PATCH', `/api/v1/users/${id}`, { token: root, body: { account_enabled: false } }), (id) => api(t, 'PATCH', `/api/v1/users/${id}`, { token: root, body: { account_enabled: true } })],
    ['delete', (id) => api(t, 'DELETE', `/api/v1/users/${id}`, { token: root })],
  ];

  for (const [name, act, undo] of actions) {
    it(`${name}: the old refresh token is refused and prompt=none answers login_required${undo ? ', also once undone' : ''}`, async () => {
      const user = await createUser(t);
      const s = await signInForToken(t, client, user, { scope: 'openid offline_access', resource: null });
      // Alive before: the refresh token rotates, the session answers silently with a code.
      const refreshed = await oidc.refreshTokenGrant(s.config, s.tokens.refresh_token!);
      expect((await silent(s)).get('code')).toBeTruthy();

      expect([200, 204]).toContain((await act(user.id)).status);
      if (undo) expect((await undo(user.id)).status).toBe(200);

      await expect(oidc.refreshTokenGrant(s.config, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
      const after = await silent(s);
      expect(after.get('error')).toBe('login_required');
      expect(after.get('code')).toBeNull();
      const sessions = await api(t, 'GET', `/api/v1/sessions?username=${user.id}`, { token: await t.token('svc:sessions:read') });
      expect(sessions.json.data).toEqual([]);
    });
  }
});
