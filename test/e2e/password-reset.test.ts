/**
 * Forgotten password end to end: headless Chromium follows the link on the sign-in page, asks for
 * a reset, opens the link from the mail the SMTP sink received, meets the password policy, sets a
 * new password; the old password stops working, the new one works, the user's refresh token and
 * sessions end. Hostile cases: reused and expired links, unknown addresses (same answer, no mail),
 * header injection in the e-mail field, HTML in the user's name, the per-address limit, CSRF.
 */
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { launchBrowser } from '../helpers/browser.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { createClient, createUser, type TestUser } from '../helpers/users.js';

describe('password reset by e-mail', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let browser: Browser;
  let rp: RpServer;
  let config: oidc.Configuration;
  let redirect: string;
  let user: TestUser;

  beforeAll(async () => {
    sink = await startSmtpSink();
    rp = await startRpServer();
    redirect = `${rp.origin}/cb`;
    t = await startTestApp({ ...sink.env(), SECURITY_PASSWORD_POLICY_REQUIRE_DIGIT: 'true' });
    browser = await launchBrowser();
    user = await createUser(t, { email_verified: true, given_name: '<img src=x onerror=alert(1)>' });
    const client = await createClient(t, {
      client_name: 'Reset Test App',
      application_type: 'web',
      redirect_uris: [redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid profile email offline_access',
      first_party: true,
    });
    config = await oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rp?.close();
    await sink?.close();
  });

  /** Opens the RP's authorization request in a fresh browser; returns the page and what the code exchange needs. */
  async function authorize(scope = 'openid offline_access') {
    const page = await (await browser.newContext()).newPage();
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: redirect, scope, prompt: 'consent', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state });
    await page.goto(url.href);
    return { page, verifier, state };
  }

  async function signIn(page: Page, email: string, password: string) {
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  async function requestReset(page: Page, email: string) {
    await page.getByRole('link', { name: /forgot|reset/i }).click();
    await page.locator('input[type="email"][name="email"]').fill(email);
    await page.getByRole('button', { name: /send/i }).click();
  }

  let refreshToken: string;

  it('a signed-in user holds a refresh token before the reset', async () => {
    const { page, verifier, state } = await authorize();
    await signIn(page, user.email, user.password);
    await page.waitForURL(`${redirect}**`);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.refresh_token).toBeTruthy();
    refreshToken = tokens.refresh_token!;
    await page.context().close();
  });

  let resetLink: string;

  it('the sign-in page links to the reset form; the answer says check your e-mail; the mail has one link, text and HTML', async () => {
    const { page } = await authorize();
    await requestReset(page, user.email);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Check your e-mail');
    expect(await seriousViolations(page)).toEqual([]);
    const [mail] = await sink.waitFor(user.email);
    expect(mail!.from).toBe('login@example.com');
    expect(mail!.subject).toBe('Reset your password');
    expect(mail!.text).toContain('Choose a new password');
    expect(mail!.links).toHaveLength(1);
    resetLink = mail!.links[0]!;
    expect(resetLink).toMatch(new RegExp(`^${t.issuer.replace('/oidc/v1', '')}/account/password/reset\\?token=[A-Za-z0-9_-]{43}$`));
    expect(mail!.text).toContain(resetLink);
    // The name is text in the mail, never markup.
    expect(mail!.html).not.toContain('<img src=x');
    expect(mail!.html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    // Only the hash of the token is stored.
    const token = new URL(resetLink).searchParams.get('token')!;
    const rows = await t.sql('SELECT token_hash FROM account_tokens');
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.map((r) => r.token_hash)).not.toContain(token);
    await page.context().close();
  });

  it('an unknown address gets the same answer and no mail', async () => {
    const before = sink.messages.length;
    const { page } = await authorize();
    await requestReset(page, 'nobody-here@example.com');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Check your e-mail');
    await t.app.ctx.mailer.drain();
    expect(sink.messages.length).toBe(before);
    await page.context().close();
  });

  it('the reset page applies the password policy naming the unmet rule, then sets the new password', async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(resetLink);
    const field = page.locator('input[type="password"][autocomplete="new-password"]');
    await expect(field.count()).resolves.toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await field.fill('no-digits-in-here');
    await page.getByRole('button', { name: 'Set new password' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Include a digit.');
    await page.locator('input[type="password"][autocomplete="new-password"]').fill('Brand-new-secret-42');
    await page.getByRole('button', { name: 'Set new password' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Password changed');
    await page.context().close();
  });

  it('the old password fails, the new one works, the refresh token and sessions ended', async () => {
    await expect(oidc.refreshTokenGrant(config, refreshToken)).rejects.toMatchObject({ error: 'invalid_grant' });
    const token = await t.token('svc:sessions:read');
    const sessions = await api(t, 'GET', `/api/v1/sessions?username=${user.id}`, { token });
    expect((sessions.json.data as Array<{ active: boolean }>).filter((s) => s.active)).toEqual([]);

    const { page } = await authorize('openid');
    await signIn(page, user.email, user.password);
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Invalid e-mail or password.');
    await signIn(page, user.email, 'Brand-new-secret-42');
    await page.waitForURL(`${redirect}**`);
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    await page.context().close();
  });

  it('a used link is refused; an expired link is refused', async () => {
    const page = await (await browser.newContext()).newPage();
    const res = await page.goto(resetLink);
    expect(res?.status()).toBe(400);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Link no longer valid');

    await api(t, 'GET', '/healthz');
    const { page: p2 } = await authorize();
    await requestReset(p2, user.email);
    await t.app.ctx.mailer.drain();
    const resets = sink.messages.filter((m) => m.to.includes(user.email.toLowerCase()) && m.subject === 'Reset your password');
    expect(resets).toHaveLength(2);
    const second = resets[1]!.links[0]!;
    await t.sql('UPDATE account_tokens SET expires_at = ? WHERE used_at IS NULL', [new Date(Date.now() - 1000).toISOString()]);
    const expired = await page.goto(second);
    expect(expired?.status()).toBe(400);
    await p2.context().close();
    await page.context().close();
  });

  it('audits the request and the reset', async () => {
    const token = await t.token('svc:audit:read');
    const requested = await api(t, 'GET', '/api/v1/audit?type=password_reset_requested', { token });
    expect(requested.json.data.length).toBeGreaterThanOrEqual(2);
    expect(requested.json.data.some((e: { user_id: string | null }) => e.user_id === user.id)).toBe(true);
    const reset = await api(t, 'GET', '/api/v1/audit?type=password_reset', { token });
    expect(reset.json.data).toEqual([expect.objectContaining({ user_id: user.id, details: expect.objectContaining({ by: 'user' }) })]);
  });

  it('hostile: header injection in the e-mail field is refused and sends nothing', async () => {
    await t.app.ctx.mailer.drain();
    const before = sink.messages.length;
    const { page } = await authorize();
    await page.getByRole('link', { name: /forgot|reset/i }).click();
    // A browser form cannot carry CR/LF in an email input: post the raw form instead.
    const csrf = await page.locator('input[name="csrf_token"]').getAttribute('value');
    const res = await page.request.post(`${new URL(page.url()).origin}/account/password/forgot`, {
      form: { csrf_token: csrf!, email: `${user.email}\r\nBcc: attacker@evil.example` },
    });
    expect(res.status()).toBe(400);
    expect(await res.text()).toContain('Enter a valid e-mail address.');
    await t.app.ctx.mailer.drain();
    expect(sink.messages.length).toBe(before);
    await page.context().close();
  });

  it('hostile: a forged form (no CSRF cookie) is refused', async () => {
    const res = await fetch(`${t.url}/account/password/forgot`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `email=${encodeURIComponent(user.email)}&csrf_token=x` });
    expect(res.status).toBe(403);
  });

  it('hostile: a fourth request for one address within the hour answers the same but sends nothing', async () => {
    const victim = await createUser(t, { email_verified: true, password: 'Victim-pass-123' });
    for (let i = 0; i < 4; i++) {
      const { page } = await authorize();
      await requestReset(page, victim.email);
      await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Check your e-mail');
      await page.context().close();
    }
    await t.app.ctx.mailer.drain();
    expect(sink.messages.filter((m) => m.to.includes(victim.email.toLowerCase()))).toHaveLength(3);
  });

  it('keeps the language the sign-in page was in (ui_locales) on the reset form and in the mail', async () => {
    const spanish = await createUser(t, { email_verified: true });
    const context = await browser.newContext({ locale: 'en-US' });
    const page = await context.newPage();
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: redirect, scope: 'openid', ui_locales: 'es', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state: oidc.randomState() });
    await page.goto(url.href);
    expect(await page.locator('html').getAttribute('lang')).toBe('es');
    await page.getByRole('link', { name: /olvid/i }).click();
    expect(await page.locator('html').getAttribute('lang')).toBe('es');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Restablecer su contraseña');
    await page.locator('input[type="email"][name="email"]').fill(spanish.email);
    await page.getByRole('button', { name: 'Enviar enlace' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Revise su correo');
    const [mail] = await sink.waitFor(spanish.email);
    expect(mail!.html).toContain('lang="es"');
    // Carried by the link and the form, not stored: the user chose no language.
    expect((await context.cookies()).map((c) => c.name)).not.toContain('svc_lang');
    await context.close();
  });

  it('hostile: a return link outside the tenant is never offered', async () => {
    const res = await fetch(`${t.url}/account/password/forgot?return=${encodeURIComponent('https://evil.example/')}`);
    const body = await res.text();
    expect(res.status).toBe(200);
    expect(body).not.toContain('evil.example');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });
});
