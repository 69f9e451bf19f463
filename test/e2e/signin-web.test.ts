/**
 * Authorization code + PKCE for a confidential web client, end to end: openid-client as the
 * relying party, headless Chromium as the user (login page, consent page).
 */
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { createClient, createUser, type TestUser } from '../helpers/users.js';


describe('web client: authorization code + PKCE', () => {
  let t: TestApp;
  let browser: Browser;
  let user: TestUser;
  let client: Record<string, any>;
  let config: oidc.Configuration;
  let rp: RpServer;
  let REDIRECT: string;

  beforeAll(async () => {
    rp = await startRpServer();
    REDIRECT = `${rp.origin}/cb`;
    t = await startTestApp();
    browser = await launchBrowser();
    user = await createUser(t, { email_verified: true });
    client = await createClient(t, {
      client_name: 'Web App',
      application_type: 'web',
      redirect_uris: [REDIRECT],
      post_logout_redirect_uris: [`${rp.origin}/bye`],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid profile email offline_access',
    });
    config = await oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rp?.close();
  });

  async function newPage(): Promise<Page> {
    const context = await browser.newContext();
    return context.newPage();
  }

  async function authorize(page: Page, extra: Record<string, string> = {}) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid profile email offline_access',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
      ...extra,
    });
    await page.goto(url.href);
    return { verifier, state, nonce };
  }

  async function signIn(page: Page, email: string, password: string) {
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  it('signs in through the login and consent pages and returns tokens bound to nonce and PKCE', async () => {
    const page = await newPage();
    const { verifier, state, nonce } = await authorize(page);

    // The sign-in page follows the password-manager conventions of CONTRACT.md.
    expect(await page.locator('input[type=email][name=email][autocomplete=username]').count()).toBe(1);
    expect(await page.locator('input[type=password][name=password][autocomplete=current-password]').count()).toBe(1);
    const response = await page.reload();
    const headers = response!.headers();
    expect(headers['cache-control']).toBe('no-store');
    expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(headers['content-security-policy']).toContain("default-src 'none'");

    await signIn(page, user.email, user.password);
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${REDIRECT}**`);

    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    const claims = tokens.claims()!;
    expect(claims.sub).toBe(user.id);
    expect(claims.nonce).toBe(nonce);
    expect(claims.iss).toBe(t.issuer);
    expect(tokens.refresh_token).toBeTruthy();

    const info = await oidc.fetchUserInfo(config, tokens.access_token, user.id);
    expect(info.email).toBe(user.email);
    expect(info.email_verified).toBe(true);
    expect(info.name).toBe('Ada Lovelace');
    expect(info.preferred_username).toMatch(/^ada/);

    // Refresh rotation: the new refresh token works, the old one is refused afterwards.
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(refreshed.refresh_token).toBeTruthy();
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });

    // The login was audited.
    const audit = await t.app.ctx.storage.audit.list('default', { type: 'login', user_id: user.id }, { limit: 5, include_count: true });
    expect(audit.total_count).toBeGreaterThanOrEqual(1);
    await page.context().close();
  });

  it('a replayed authorization code is refused and revokes the tokens it issued', async () => {
    const page = await newPage();
    const { verifier, state, nonce } = await authorize(page, { scope: 'openid profile' });
    await signIn(page, user.email, user.password);
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${REDIRECT}**`);
    const callback = new URL(page.url());
    const first = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
    await expect(oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce })).rejects.toMatchObject({ error: 'invalid_grant' });
    const introspection = await oidc.tokenIntrospection(config, first.access_token);
    expect(introspection.active).toBe(false);
    await page.context().close();
  });

  it('refuses a wrong password without saying whether the account exists', async () => {
    const page = await newPage();
    await authorize(page);
    await signIn(page, user.email, 'not-the-password');
    const wrong = await page.locator('[role=alert]').textContent();
    await signIn(page, 'nobody-here@example.com', 'whatever-password');
    const unknown = await page.locator('[role=alert]').textContent();
    expect(wrong).toBe('Invalid e-mail or password.');
    expect(unknown).toBe(wrong);
    const failed = await t.app.ctx.storage.audit.list('default', { type: 'failed_login' }, { limit: 10, include_count: true });
    expect(failed.total_count).toBeGreaterThanOrEqual(2);
    await page.context().close();
  });

  it('refuses a form without its CSRF token', async () => {
    const page = await newPage();
    await authorize(page);
    const action = await page.locator('form').getAttribute('action');
    const res = await page.request.post(new URL(action!, t.issuer).href, { form: { email: user.email, password: user.password } });
    expect(res.status()).toBe(403);
    await page.context().close();
  });

  it('rejects an unregistered redirect_uri without redirecting to it', async () => {
    const res = await fetch(
      `${t.url}/oidc/v1/auth?` +
        new URLSearchParams({ client_id: client.client_id, response_type: 'code', scope: 'openid', redirect_uri: `${rp.origin}/evil`, code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' }),
      { redirect: 'manual' },
    );
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain('redirect_uri');
  });

  it('rejects plain PKCE and a missing code challenge', async () => {
    for (const extra of [{ code_challenge: 'x'.repeat(43), code_challenge_method: 'plain' }, {}]) {
      const res = await fetch(
        `${t.url}/oidc/v1/auth?` + new URLSearchParams({ client_id: client.client_id, response_type: 'code', scope: 'openid', redirect_uri: REDIRECT, state: 's1', ...extra }),
        { redirect: 'manual' },
      );
      expect(res.status).toBe(303);
      const location = new URL(res.headers.get('location')!);
      expect(location.searchParams.get('error')).toBe('invalid_request');
      expect(location.searchParams.get('state')).toBe('s1');
    }
  });

  it('locks an account after 5 failed attempts and refuses the correct password while locked', async () => {
    const victim = await createUser(t);
    const page = await newPage();
    await authorize(page);
    for (let i = 0; i < 5; i++) await signIn(page, victim.email, 'bad-password-123');
    await signIn(page, victim.email, victim.password);
    expect(await page.locator('[role=alert]').textContent()).toContain('cannot sign in');
    const token = await t.token('svc:users:read');
    const got = await api(t, 'GET', `/api/v1/users/${victim.id}`, { token });
    expect(got.json.data.locked).toBe(true);
    const locked = await t.app.ctx.storage.audit.list('default', { type: 'account_locked', user_id: victim.id }, { limit: 5, include_count: true });
    expect(locked.total_count).toBe(1);
    await page.context().close();
  });
});
