/**
 * Features that need e-mail when no SMTP server is configured (CONTRACT.md, issue 13): in staging or
 * production they are not offered (no reset link and the reset form answers 404; sign-up goes on
 * without a verification step nobody could finish); in development every message is written to the
 * log with its link, so the flows still work on a laptop. Headless Chromium, openid-client as the RP.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { launchBrowser } from '../helpers/browser.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { createClient, createUser } from '../helpers/users.js';

const SIGNUP_LINK = /sign up|create( an)? account|register/i;
const FORGOT_LINK = /forgot|reset/i;

async function rpFor(t: TestApp, redirect: string): Promise<oidc.Configuration> {
  const client = await createClient(t, { client_name: 'No-mail RP', application_type: 'web', redirect_uris: [redirect], grant_types: ['authorization_code'], scope: 'openid profile email' });
  return oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
}

async function authorize(browser: Browser, config: oidc.Configuration, redirect: string) {
  const context = await browser.newContext();
  // Outside development redirect URIs must be https: the RP's callback is answered in the browser.
  if (redirect.startsWith('https://')) await context.route(`${redirect}**`, (route) => route.fulfill({ status: 200, contentType: 'text/plain', body: 'RP callback' }));
  const page = await context.newPage();
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, { redirect_uri: redirect, scope: 'openid profile email', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state });
  await page.goto(url.href);
  return { page, verifier, state };
}

async function fillSignup(page: Page, email: string, password: string) {
  await page.locator('input[type="email"][name="email"]').fill(email);
  await page.locator('input[type="password"][autocomplete="new-password"]').fill(password);
  await page.getByRole('button', { name: /create account/i }).click();
}

describe.each(['production', 'staging'] as const)('no SMTP server in %s', (env) => {
  let t: TestApp;
  let browser: Browser;
  const redirect = 'https://rp.example/cb';
  let config: oidc.Configuration;

  beforeAll(async () => {
    // Verification asked for explicitly: without mail it cannot be offered, so sign-up goes on without it.
    t = await startTestApp({ NODE_ENV: env, SECURITY_SIGNUP_ENABLED: 'true', SECURITY_SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'true' });
    browser = await launchBrowser();
    config = await rpFor(t, redirect);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('offers no password reset: no link on the sign-in page, and the forms answer 404', async () => {
    const { page } = await authorize(browser, config, redirect);
    await page.getByLabel('Password').waitFor();
    expect(await page.getByRole('link', { name: SIGNUP_LINK }).count()).toBe(1);
    expect(await page.getByRole('link', { name: FORGOT_LINK }).count()).toBe(0);
    expect(await page.locator('a[href*="/account/password/forgot"]').count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
    const forgot = await page.goto(`${t.url}/account/password/forgot`);
    expect(forgot?.status()).toBe(404);
    expect(await page.locator('main').textContent()).not.toMatch(/stack|Error:/);
    await page.context().close();
  });

  it('signs up without a verification step: the RP gets its code at once and no token is issued for a mail that cannot go', async () => {
    const { page, verifier, state } = await authorize(browser, config, redirect);
    await page.getByRole('link', { name: SIGNUP_LINK }).click();
    const email = `new-${env}@example.com`;
    await fillSignup(page, email, 'Brand-new-pass-1');
    // Not a first-party client: the consent page, then the RP.
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${redirect}**`);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state });
    const info = await oidc.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub);
    expect(info).toMatchObject({ email, email_verified: false });
    expect(await t.sql('SELECT token_hash FROM account_tokens')).toEqual([]);
    await page.context().close();
  });
});

describe('no SMTP server in development', () => {
  let t: TestApp;
  let browser: Browser;
  let rp: RpServer;
  let redirect: string;
  let config: oidc.Configuration;
  let logs: string;

  beforeAll(async () => {
    rp = await startRpServer();
    redirect = `${rp.origin}/cb`;
    logs = mkdtempSync(join(tmpdir(), 'svc-mail-log-'));
    t = await startTestApp({
      NODE_ENV: 'development',
      SECURITY_SIGNUP_ENABLED: 'true',
      // Unset it defaults to "when SMTP is configured"; asked for, development offers it through the log.
      SECURITY_SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'true',
      SECURITY_LOGGING_LEVEL: 'info',
      SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'true',
      SECURITY_LOGGING_FILE_LOGGING_DIRECTORY: logs,
    });
    browser = await launchBrowser();
    config = await rpFor(t, redirect);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rp?.close();
    rmSync(logs, { recursive: true, force: true });
  });

  /** The logged mail to that address (the file is written by a logger thread: read until it is there, bounded). */
  async function loggedMail(to: string): Promise<{ subject: string; text: string; link: string }> {
    const file = join(logs, 'svc.log');
    for (let i = 0; i < 100; i++) {
      const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
      for (const line of lines) {
        const entry = JSON.parse(line) as { msg?: string; to?: string; subject?: string; text?: string };
        if (entry.msg === 'mail (no SMTP server configured: logged, not sent)' && entry.to === to) {
          const link = /https?:\/\/\S+/.exec(entry.text ?? '')?.[0];
          expect(link, entry.text).toBeDefined();
          return { subject: entry.subject!, text: entry.text!, link: link! };
        }
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no logged mail to ${to} in ${file}`);
  }

  it('logs the password-reset mail with its link, and the link sets a new password', async () => {
    const user = await createUser(t, { email: 'dev-reset@example.com', email_verified: true });
    const { page } = await authorize(browser, config, redirect);
    await page.getByRole('link', { name: FORGOT_LINK }).click();
    await page.locator('input[type="email"][name="email"]').fill(user.email);
    await page.getByRole('button', { name: /send/i }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Check your e-mail');
    const mail = await loggedMail(user.email);
    expect(mail.subject).toBe('Reset your password');
    expect(mail.link).toMatch(/\/account\/password\/reset\?token=[A-Za-z0-9_-]{43}$/);
    const reset = await page.goto(mail.link);
    expect(reset?.status()).toBe(200);
    expect(await page.locator('input[type="password"][autocomplete="new-password"]').count()).toBeGreaterThan(0);
    await page.context().close();
  });

  it('logs the sign-up verification mail with its link, which verifies the address and continues to the RP', async () => {
    const { page } = await authorize(browser, config, redirect);
    await page.getByRole('link', { name: SIGNUP_LINK }).click();
    await fillSignup(page, 'dev-signup@example.com', 'Dev-signup-pass-1');
    const mail = await loggedMail('dev-signup@example.com');
    expect(mail.link).toContain('/account/verify');
    await page.goto(mail.link);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('E-mail address confirmed');
    await page.getByRole('link', { name: 'Continue' }).click();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${redirect}**`);
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    await page.context().close();
  });
});
