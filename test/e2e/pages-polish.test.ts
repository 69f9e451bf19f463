/**
 * Issue 18, item 17: what an outside walkthrough of the end-user pages found, each checked in
 * headless Chromium on the real pages with axe-core: the focus after a wrong password, the
 * client's logo (https only, CSP img-src naming its origin), a favicon without a /favicon.ico 404,
 * the consent page naming who is signed in, the logout page naming the application, the device
 * code's format hint, and the recovery-code step's wording and link style. (The lockout message
 * with its duration is proven in test/security/lockout-oracle.test.ts.)
 */
import * as oidc from 'openid-client';
import QRCode from 'qrcode';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enableTotp } from '../../src/users/mfa.js';
import { generateTotpSecret } from '../../src/users/totp.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { launchBrowser } from '../helpers/browser.js';
import { REDIRECT, RP, rpConfig } from '../helpers/user-token.js';
import { createClient, createUser, type TestUser } from '../helpers/users.js';

const LOGO_ORIGIN = 'https://logo.shop.test';
const LOGO = `${LOGO_ORIGIN}/logo.png`;
// A 1x1 PNG, served for the logo's address by a page route (no network).
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');

/** The QR code the page shows is the one of the URI it prints (same encoder, same options). */
async function expectQrOfUri(page: Page) {
  const qr = page.getByRole('img', { name: 'QR code to scan with your authenticator app' });
  expect(await qr.locator('svg').count()).toBe(1);
  const uri = (await page.locator('#totp-uri').textContent())!.trim();
  expect(uri).toMatch(/^otpauth:\/\/totp\//);
  const expected = await QRCode.toString(uri, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' });
  const path = (svg: string) => /<path[^>]* d="([^"]+)"[^>]*stroke="#000000"/.exec(svg)?.[1] ?? /<path[^>]*stroke="#000000"[^>]* d="([^"]+)"/.exec(svg)?.[1];
  expect(path(await qr.innerHTML())).toBe(path(expected));
  expect(path(expected)).toBeTruthy();
  expect(await seriousViolations(page)).toEqual([]);
}

describe('end-user pages: issue 18 item 17', () => {
  let t: TestApp;
  let browser: Browser;
  let shop: { client_id: string; client_secret: string };
  let config: oidc.Configuration;
  let user: TestUser;

  beforeAll(async () => {
    t = await startTestApp({ SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000' });
    browser = await launchBrowser();
    user = await createUser(t);
    shop = (await createClient(t, {
      client_name: 'Shop',
      logo_uri: LOGO,
      redirect_uris: [REDIRECT],
      post_logout_redirect_uris: [`${RP}/bye`],
      grant_types: ['authorization_code'],
      scope: 'openid email',
    })) as { client_id: string; client_secret: string };
    config = await rpConfig(t.issuer, shop);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  interface Watched {
    page: Page;
    /** Responses of 400 and above, and console errors, seen so far. */
    failures: string[];
    requested: string[];
  }

  async function watchedPage(): Promise<Watched> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const failures: string[] = [];
    const requested: string[] = [];
    await context.route(`${LOGO_ORIGIN}/**`, (route) => route.fulfill({ status: 200, contentType: 'image/png', body: PNG }));
    await context.route(`${RP}/**`, (route) => route.fulfill({ status: 200, contentType: 'text/plain', body: 'rp' }));
    page.on('request', (r) => requested.push(r.url()));
    page.on('response', (r) => {
      if (r.status() >= 400 && !/\/interaction\/[^/]+\/login$/.test(new URL(r.url()).pathname)) failures.push(`${r.status()} ${r.url()}`);
    });
    page.on('console', (m) => {
      if (m.type() === 'error') failures.push(`console: ${m.text()}`);
    });
    return { page, failures, requested };
  }

  async function startAuthorization(page: Page, c: { client_id: string } = shop, scope = 'openid email') {
    const cfg = c === shop ? config : await rpConfig(t.issuer, c as { client_id: string; client_secret: string });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(cfg, {
      redirect_uri: REDIRECT,
      scope,
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    const res = await page.goto(url.href);
    return { verifier, state, csp: res?.headers()['content-security-policy'] ?? '' };
  }

  async function lastCsp(page: Page): Promise<string> {
    const res = await page.request.get(page.url());
    return res.headers()['content-security-policy'] ?? '';
  }

  async function signIn(page: Page, who: TestUser, password = who.password) {
    await page.getByLabel('E-mail').fill(who.email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForLoadState();
  }

  it("sign-in page: the client's logo with alt text and CSP, a favicon, no 404 or console error", async () => {
    const { page, failures, requested } = await watchedPage();
    const { csp } = await startAuthorization(page);
    const logo = page.getByRole('img', { name: 'Logo of Shop' });
    await expect(logo.getAttribute('src')).resolves.toBe(LOGO);
    // Loaded: the page's CSP img-src allows it, naming the logo's origin.
    expect(await logo.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(1);
    expect(csp).toMatch(/img-src [^;]*https:\/\/logo\.shop\.test;/);
    // A favicon is declared and no request goes to /favicon.ico.
    expect(await page.locator('link[rel=icon]').getAttribute('href')).toMatch(/^data:image\/svg\+xml,/);
    await page.waitForTimeout(300); // let the browser ask for an icon if it were going to
    expect(requested.filter((u) => u.endsWith('/favicon.ico'))).toEqual([]);
    expect(failures).toEqual([]);
    expect(await seriousViolations(page)).toEqual([]);
    await page.context().close();
  });

  it('after a wrong password the e-mail is kept and the focus is on the password field', async () => {
    const { page } = await watchedPage();
    await startAuthorization(page);
    await signIn(page, user, 'Not-The-Password-1');
    await expect(page.locator('[role=alert]').textContent()).resolves.toBeTruthy();
    expect(await page.getByLabel('E-mail').inputValue()).toBe(user.email);
    // Chromium applies autofocus in a rendering step that can come after the load event.
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('password');
    expect(await page.getByLabel('Password').getAttribute('aria-describedby')).toBe('form-error');
    expect(await seriousViolations(page)).toEqual([]);
    // The first visit (no error) still starts on the e-mail field.
    await startAuthorization(page);
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('email');
    await page.context().close();
  });

  it('consent says who is signed in and shows the logo; the logout page names the application', async () => {
    const { page, failures } = await watchedPage();
    const flow = await startAuthorization(page);
    await signIn(page, user);
    await expect(page.getByRole('heading', { name: 'Allow access?' }).count()).resolves.toBe(1);
    expect(await page.locator('main').innerText()).toContain(`Signed in as ${user.email}`);
    expect(await page.getByRole('img', { name: 'Logo of Shop' }).evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(1);
    expect(await lastCsp(page)).toMatch(new RegExp(`img-src [^;]*${LOGO_ORIGIN.replaceAll('.', '\\.')};`));
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${REDIRECT}**`);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: flow.verifier, expectedState: flow.state });

    const logout = oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: `${RP}/bye` });
    await page.goto(logout.href);
    const text = await page.locator('main').innerText();
    expect(text).toContain('Do you want to sign out of Shop?');
    expect(text).not.toContain(new URL(t.issuer).host);
    expect(await seriousViolations(page)).toEqual([]);
    // Without a client in the request: a plain question, still no host name.
    await page.goto(`${t.issuer}/session/end`);
    const plain = await page.locator('main').innerText();
    expect(plain).toContain('Do you want to sign out?');
    expect(plain).not.toContain(new URL(t.issuer).host);
    await page.goto(logout.href);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${RP}/bye**`);
    expect(failures).toEqual([]);
    await page.context().close();
  });

  it('XSS in client_name stays text in the logo alt and the logout question; an http logo is not shown', async () => {
    const evil = (await createClient(t, {
      client_name: '<img src=x onerror=alert(1)>"',
      logo_uri: 'http://logo.shop.test/plain.png',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code'],
      scope: 'openid',
    })) as { client_id: string; client_secret: string };
    const { page } = await watchedPage();
    let dialogs = 0;
    page.on('dialog', (d) => {
      dialogs++;
      void d.dismiss();
    });
    await startAuthorization(page, evil, 'openid');
    expect(await page.locator('main img').count()).toBe(0);
    expect(await lastCsp(page)).not.toContain('logo.shop.test');
    expect(await page.locator('main strong').first().innerText()).toBe('<img src=x onerror=alert(1)>"');
    // A signed-in session (the consent step follows), so the logout page asks its question.
    await signIn(page, user);
    await page.goto(`${t.issuer}/session/end?client_id=${encodeURIComponent(evil.client_id)}`);
    expect(await page.locator('main').innerText()).toContain('Do you want to sign out of <img src=x onerror=alert(1)>"?');
    expect(dialogs).toBe(0);
    await page.context().close();
  });

  it('the device-code field has a format hint tied to it by aria-describedby', async () => {
    const { page, failures } = await watchedPage();
    await page.goto(`${t.issuer}/device`);
    const field = page.getByLabel('Device code');
    const described = await field.getAttribute('aria-describedby');
    expect(described).toBe('user_code-hint');
    expect(await page.locator(`#${described}`).innerText()).toContain('XXXX-XXXX');
    expect(await seriousViolations(page)).toEqual([]);
    expect(failures).toEqual([]);
    await field.fill('BCDF-GHJK');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForLoadState();
    // After a wrong code the field is described by the hint and the error.
    expect(await page.getByLabel('Device code').getAttribute('aria-describedby')).toBe('user_code-hint form-error');
    await page.context().close();
  });

  it('the self-service enrolment (from the account page; {issuer}/account/mfa redirects there) shows the QR code of its otpauth URI', async () => {
    const firstParty = (await createClient(t, { client_name: 'Own app', redirect_uris: [REDIRECT], grant_types: ['authorization_code'], scope: 'openid', first_party: true })) as { client_id: string; client_secret: string };
    const who = await createUser(t);
    const { page } = await watchedPage();
    await startAuthorization(page, firstParty, 'openid');
    await signIn(page, who);
    await page.waitForURL(`${REDIRECT}**`);
    await page.goto(`${t.issuer}/account/mfa`);
    expect(page.url()).toBe(`${new URL(t.issuer).origin}/account`);
    await page.getByRole('button', { name: 'Set up two-step verification' }).click();
    await expectQrOfUri(page);
    await page.context().close();
  });

  it('the recovery-code step reads correctly and its link is styled like the other secondary links', async () => {
    const enrolled = await createUser(t);
    await enableTotp(t.app.ctx, 'default', enrolled.id, generateTotpSecret());
    const { page } = await watchedPage();
    await startAuthorization(page);
    await signIn(page, enrolled);
    const link = page.getByRole('link', { name: 'Use a recovery code instead' });
    const style = await link.evaluate((a) => {
      const s = getComputedStyle(a);
      const p = getComputedStyle(a.parentElement!);
      return { color: s.color, size: p.fontSize, margin: p.marginTop };
    });
    // The accent colour of the stylesheet (not the browser's default link blue), the aside size.
    expect(style).toEqual({ color: 'rgb(36, 86, 211)', size: '15px', margin: '8px' });
    await link.click();
    await page.waitForLoadState();
    expect(await page.locator('main').innerText()).toContain('Enter one of the recovery codes you saved when you set up two-step verification to continue to Shop.');
    expect(await seriousViolations(page)).toEqual([]);
    await page.context().close();
  });
});

describe('TOTP enrolment at sign-in shows the otpauth URI as an inline SVG QR code', () => {
  let t: TestApp;
  let browser: Browser;
  let app: { client_id: string; client_secret: string };

  beforeAll(async () => {
    // MFA required: the sign-in itself asks to enrol (the other enrolment page of the product).
    t = await startTestApp({ SECURITY_MFA_REQUIRED: 'true', SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000' });
    browser = await launchBrowser();
    app = (await createClient(t, { client_name: 'Shop', redirect_uris: [REDIRECT], grant_types: ['authorization_code'], scope: 'openid', first_party: true })) as { client_id: string; client_secret: string };
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('at sign-in when security.mfa.required asks to enrol', async () => {
    const user = await createUser(t);
    const page = await (await browser.newContext()).newPage();
    await page.context().route(`${RP}/**`, (route) => route.fulfill({ status: 200, body: 'rp' }));
    const cfg = await rpConfig(t.issuer, app);
    const url = oidc.buildAuthorizationUrl(cfg, { redirect_uri: REDIRECT, scope: 'openid', state: oidc.randomState(), code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256' });
    await page.goto(url.href);
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForLoadState();
    await expectQrOfUri(page);
    await page.context().close();
  });
});
