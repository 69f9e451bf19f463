/**
 * RP-initiated logout's pages, in headless Chromium with openid-client as the relying party (fifth
 * session of 2026-12-01):
 * - a logout that finds no session (ended through the Management API, a fresh browser) still ends
 *   at the registered post_logout_redirect_uri with the state: oidc-provider's auto-submitting form
 *   is answered by a 303 to the RP, which Chromium checks against the page's CSP form-action;
 *   only that validated origin is added, never one the request names unvalidated;
 * - the language ui_locales asked for holds on the "Signed out" / "Still signed in" page, with and
 *   without a session, and is not kept for anything after it;
 * - a refused sign-out is explained as a sign-out (never "sign-in cannot continue"), in en/de/es/fr.
 */
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { launchBrowser } from '../helpers/browser.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { createClient, createUser, type TestUser } from '../helpers/users.js';
import { signInToAccountPage } from '../helpers/account-page.js';

describe('logout pages', () => {
  let t: TestApp;
  let browser: Browser;
  let rp: RpServer;
  let user: TestUser;
  let clientId: string;
  let config: oidc.Configuration;
  let origin: string;

  beforeAll(async () => {
    rp = await startRpServer();
    t = await startTestApp({ SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000' });
    origin = new URL(t.issuer).origin;
    browser = await launchBrowser();
    user = await createUser(t);
    const client = await createClient(t, {
      client_name: 'Logout App',
      redirect_uris: [`${rp.origin}/cb`],
      post_logout_redirect_uris: [`${rp.origin}/bye`],
      first_party: true,
      scope: 'openid',
    });
    clientId = client.client_id;
    config = await oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rp?.close();
  });

  /** Signs `user` in to the RP in `page` and redeems the code: the RP's ID token. */
  async function rpSignIn(page: Page): Promise<string> {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: `${rp.origin}/cb`, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state });
    await page.goto(url.href);
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${rp.origin}/cb**`);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state });
    return tokens.id_token!;
  }

  /** Opens an end-session URL: the CSP of the end-session answer (the page the browser got first). */
  async function openEndSession(page: Page, url: string): Promise<string> {
    const endSessionPath = `${new URL(t.issuer).pathname}/session/end`;
    const answer = page.waitForResponse((r) => new URL(r.url()).pathname === endSessionPath);
    // Not waiting for the load: an auto-submitting page navigates on by itself (or, refused, hangs).
    await page.goto(url, { waitUntil: 'commit' });
    return (await answer).headers()['content-security-policy'] ?? '';
  }

  const formAction = (csp: string) => /form-action ([^;]*)/.exec(csp)?.[1]?.split(' ') ?? [];

  it('without a session (ended through the API, a fresh browser) the logout still ends at the registered URI with the state', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const idToken = await rpSignIn(page);
    // The session ends behind the browser's back (DELETE /api/v1/sessions, as an administrator would;
    // `username` there is the account id).
    const revoked = await api(t, 'DELETE', `/api/v1/sessions?username=${user.id}`, { token: await t.token('svc:sessions:revoke') });
    expect(revoked.json).toEqual({ data: { revoked_count: 1 } });

    const end = oidc.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: `${rp.origin}/bye`, state: 'after-api' });
    const csp = await openEndSession(page, end.href);
    // The validated post_logout_redirect_uri's origin, besides the form's own target.
    expect(formAction(csp)).toEqual(["'self'", origin, rp.origin]);
    await page.waitForURL(`${rp.origin}/bye**`, { timeout: 10000 });
    expect(new URL(page.url()).searchParams.get('state')).toBe('after-api');
    await context.close();

    // A browser that never had a session with the OP (the RP's logout after the user cleared cookies).
    const fresh = await (await browser.newContext()).newPage();
    await openEndSession(fresh, oidc.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: `${rp.origin}/bye`, state: 'fresh' }).href);
    await fresh.waitForURL(`${rp.origin}/bye**`, { timeout: 10000 });
    expect(new URL(fresh.url()).searchParams.get('state')).toBe('fresh');

    // Without post_logout_redirect_uri: the OP's own "Signed out" page, nothing else allowed.
    const plainCsp = await openEndSession(fresh, oidc.buildEndSessionUrl(config, { id_token_hint: idToken }).href);
    expect(formAction(plainCsp)).toEqual(["'self'", origin]);
    await fresh.waitForURL(`${t.issuer}/session/end/success**`, { timeout: 10000 });
    await expect(fresh.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Signed out');
    await fresh.context().close();
  });

  it('an unvalidated post_logout_redirect_uri never widens the CSP', async () => {
    const page = await (await browser.newContext()).newPage();
    const evil = 'http://evil.localhost:9/bye';
    // No client in the request: oidc-provider drops the URI; the user ends on the OP's page.
    const unnamed = await openEndSession(page, `${t.issuer}/session/end?post_logout_redirect_uri=${encodeURIComponent(evil)}&state=s`);
    expect(formAction(unnamed)).toEqual(["'self'", origin]);
    await page.waitForURL(`${t.issuer}/session/end/success**`, { timeout: 10000 });
    // A client that did not register it: refused, and the error page allows nothing either.
    const res = await page.goto(`${t.issuer}/session/end?client_id=${clientId}&post_logout_redirect_uri=${encodeURIComponent(evil)}`);
    expect(res!.status()).toBe(400);
    expect(res!.headers()['content-security-policy']).not.toContain('evil');
    await page.context().close();
  });

  it('ui_locales holds on the page after the logout, with and without a session, and is not kept after it', async () => {
    // With a session: the question in French, then "Signed out" in French (the browser speaks English).
    const context = await browser.newContext({ locale: 'en-US' });
    const page = await signInToAccountPage(await context.newPage(), origin, user);
    await page.goto(`${t.issuer}/session/end?ui_locales=fr`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Se déconnecter ?');
    await page.getByRole('button', { name: 'Se déconnecter' }).click();
    await page.waitForURL(`${t.issuer}/session/end/success**`);
    expect(await page.locator('html').getAttribute('lang')).toBe('fr');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Déconnecté');
    expect(await seriousViolations(page)).toEqual([]);
    // Nothing the user never chose is remembered: the next page follows the browser again.
    expect((await context.cookies()).map((c) => c.name)).not.toContain('svc_lang');
    await page.goto(`${t.issuer}/session/end/success`);
    expect(await page.locator('html').getAttribute('lang')).toBe('en');

    // "Stay signed in" in German.
    await signInToAccountPage(page, origin, user);
    await page.goto(`${t.issuer}/session/end?ui_locales=de`);
    await page.getByRole('button', { name: 'Angemeldet bleiben' }).click();
    await page.waitForURL(`${t.issuer}/session/end/success**`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Weiterhin angemeldet');
    await context.close();

    // Without a session: nobody is asked, the "Signed out" page is in German all the same.
    const fresh = await (await browser.newContext({ locale: 'en-US' })).newPage();
    await fresh.goto(`${t.issuer}/session/end?ui_locales=de`);
    await fresh.waitForURL(`${t.issuer}/session/end/success**`, { timeout: 10000 });
    expect(await fresh.locator('html').getAttribute('lang')).toBe('de');
    await expect(fresh.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Abgemeldet');
    // A later logout without ui_locales follows the browser: the carried language is gone.
    await fresh.goto(`${t.issuer}/session/end`);
    await fresh.waitForURL(`${t.issuer}/session/end/success**`, { timeout: 10000 });
    await expect(fresh.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Signed out');
    await fresh.context().close();
  });

  it('a refused sign-out is explained as a sign-out, in the page language', async () => {
    const cases = [
      { lang: 'en', says: 'so the sign-out did not take place', never: 'sign-in cannot continue' },
      { lang: 'de', says: 'Die Abmeldung wurde daher nicht durchgeführt', never: 'Die Anmeldung kann nicht fortgesetzt werden' },
      { lang: 'es', says: 'así que no se ha cerrado la sesión', never: 'el inicio de sesión no puede continuar' },
      { lang: 'fr', says: 'donc pas eu lieu', never: 'la connexion ne peut pas continuer' },
    ];
    const evil = encodeURIComponent(`${rp.origin}/elsewhere`);
    for (const c of cases) {
      const res = await fetch(`${t.issuer}/session/end?client_id=${clientId}&post_logout_redirect_uri=${evil}`, { headers: { accept: 'text/html', 'accept-language': c.lang } });
      expect(res.status).toBe(400);
      const body = await res.text();
      expect(body, c.lang).toContain(`<html lang="${c.lang}">`);
      expect(body, c.lang).toContain(c.says);
      expect(body, c.lang).not.toContain(c.never);
    }
    // A confirmation whose logout state is gone (submitted twice, replaced in another tab).
    const stale = await fetch(`${t.issuer}/session/end/confirm`, { method: 'POST', headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded', origin }, body: 'xsrf=gone&logout=yes' });
    expect(stale.status).toBe(400);
    expect(await stale.text()).toContain('This sign-out page has expired or has already been used.');
    // In the language the end-session request asked for, carried to the confirmation.
    const carried = await fetch(`${t.issuer}/session/end/confirm`, { method: 'POST', headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded', origin, cookie: 'svc_logout_lang=es' }, body: 'xsrf=gone&logout=yes' });
    expect(await carried.text()).toContain('Esta página de cierre de sesión ha caducado');
  });
});
