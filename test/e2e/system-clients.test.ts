/**
 * The tenant's built-in first-party clients (src/clients/system-clients.ts): `svc-account` signs a
 * user in through the tenant's own authorization endpoint with code + PKCE and no consent page,
 * its redirect is the tenant's own `/account/callback`, and neither built-in client can be read,
 * listed or changed through the Management API.
 */
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT_CLIENT_ID, ADMIN_CLIENT_ID } from '../../src/clients/system-clients.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { createUser, type TestUser } from '../helpers/users.js';

describe('built-in first-party clients', () => {
  let t: TestApp;
  let browser: Browser;
  let user: TestUser;

  beforeAll(async () => {
    t = await startTestApp();
    browser = await launchBrowser();
    user = await createUser(t);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('svc-account signs a user in with code + PKCE, no consent page, redirecting to the tenant origin', async () => {
    const config = await oidc.discovery(new URL(t.issuer), ACCOUNT_CLIENT_ID, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
    const redirect = `${new URL(t.issuer).origin}/account/callback`;
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirect,
      scope: 'openid profile email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const context = await browser.newContext();
    const page = await context.newPage();
    // Follow the sign-in POST's redirects ourselves (the page's request context shares its cookies)
    // and stop before the authorization response reaches the tenant's own callback handler, so the
    // code is still unused when the test redeems it.
    let callback: string | undefined;
    await page.route('**/interaction/*/login', async (route) => {
      let res = await route.fetch({ maxRedirects: 0 });
      let location = res.headers().location;
      while (location && !location.startsWith(redirect)) {
        res = await page.request.get(new URL(location, t.issuer).href, { maxRedirects: 0 });
        location = res.headers().location;
      }
      callback = location;
      await route.fulfill({ status: 200, contentType: 'text/plain', body: 'signed in' });
    });
    await page.goto(url.href);
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('signed in').waitFor();
    expect(callback).toBeDefined();
    const tokens = await oidc.authorizationCodeGrant(config, new URL(callback!), { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.claims()?.sub).toBe(user.id);
    expect(tokens.claims()?.aud).toBe(ACCOUNT_CLIENT_ID);
    await context.close();
  });

  it('refuses a redirect URI other than the tenant origin callback', async () => {
    const res = await fetch(`${t.url}/oidc/v1/auth?client_id=${ACCOUNT_CLIENT_ID}&response_type=code&scope=openid&redirect_uri=${encodeURIComponent('https://evil.example/account/callback')}&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/redirect_uri/);
  });

  it('is invisible to and untouchable through the Management API', async () => {
    const token = await t.token('svc:clients:read svc:clients:write svc:clients:delete');
    for (const id of [ACCOUNT_CLIENT_ID, ADMIN_CLIENT_ID]) {
      expect((await api(t, 'GET', `/api/v1/clients/${id}`, { token })).status).toBe(404);
      expect((await api(t, 'PATCH', `/api/v1/clients/${id}`, { token, body: { client_name: 'x' } })).status).toBe(404);
      expect((await api(t, 'DELETE', `/api/v1/clients/${id}`, { token })).status).toBe(404);
      expect((await api(t, 'POST', `/api/v1/clients/${id}/secret`, { token })).status).toBe(404);
    }
    const list = await api(t, 'GET', '/api/v1/clients?limit=100', { token });
    expect(list.json.data.map((c: { client_id: string }) => c.client_id)).not.toContain(ACCOUNT_CLIENT_ID);
  });
});
