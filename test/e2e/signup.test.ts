/**
 * Sign-up end to end in headless Chromium with openid-client as the relying party: from the RP's
 * authorization request, through the sign-up link of the sign-in page, the verification mail
 * (opened from the SMTP sink), back to the RP with a code and tokens. Hostile cases: a disallowed
 * domain, a taken address (same page, a mail to the owner instead), HTML in the name (kept out of
 * the verification mail), the resend limit, sign-up off (no link, 404). Without required
 * verification the RP gets its code at once.
 */
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { launchBrowser } from '../helpers/browser.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { createClient, createUser } from '../helpers/users.js';
import { awayFromWindowEdge } from '../helpers/fixed-window.js';

const SIGNUP_LINK = /sign up|create( an)? account|register/i;

async function rpFor(t: TestApp, redirect: string): Promise<oidc.Configuration> {
  const client = await createClient(t, { client_name: 'Shop <RP>', application_type: 'web', redirect_uris: [redirect], grant_types: ['authorization_code'], scope: 'openid profile email' });
  return oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
}

async function authorize(browser: Browser, config: oidc.Configuration, redirect: string) {
  const page = await (await browser.newContext()).newPage();
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, { redirect_uri: redirect, scope: 'openid profile email', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state });
  await page.goto(url.href);
  return { page, verifier, state };
}

async function fillSignup(page: Page, fields: { name?: string; email: string; password: string }) {
  if (fields.name !== undefined) await page.getByLabel('Name').fill(fields.name);
  await page.locator('input[type="email"][name="email"]').fill(fields.email);
  await page.locator('input[type="password"][autocomplete="new-password"]').fill(fields.password);
  await page.getByRole('button', { name: /create account/i }).click();
}

describe('sign-up with e-mail verification', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let browser: Browser;
  let rp: RpServer;
  let redirect: string;
  let config: oidc.Configuration;

  beforeAll(async () => {
    sink = await startSmtpSink();
    rp = await startRpServer();
    redirect = `${rp.origin}/cb`;
    t = await startTestApp({ ...sink.env(), SECURITY_SIGNUP_ENABLED: 'true', SECURITY_SIGNUP_ALLOWED_EMAIL_DOMAINS: 'example.com,example.org' });
    browser = await launchBrowser();
    config = await rpFor(t, redirect);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rp?.close();
    await sink?.close();
  });

  it('signs up from the RP’s request, confirms the address from the mail, and the RP gets its code and tokens', async () => {
    const { page, verifier, state } = await authorize(browser, config, redirect);
    await page.getByRole('link', { name: SIGNUP_LINK }).click();
    expect(await seriousViolations(page)).toEqual([]);
    await fillSignup(page, { name: '<b>Eve</b> & co', email: 'eve@example.com', password: 'short' });
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Use at least 8 characters.');
    await fillSignup(page, { email: 'eve@example.com', password: 'eve@example.com' });
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Do not use your e-mail address as your password.');
    await fillSignup(page, { name: '<b>Eve</b> & co', email: 'eve@example.com', password: 'Eve-strong-pass-1' });
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Check your e-mail');
    expect(await seriousViolations(page)).toEqual([]);

    const users = await api(t, 'GET', '/api/v1/users?q=eve%40example.com', { token: await t.token('svc:users:read') });
    expect(users.json.data).toEqual([expect.objectContaining({ email: 'eve@example.com', email_verified: false, name: '<b>Eve</b> & co' })]);

    const [mail] = await sink.waitFor('eve@example.com');
    expect(mail!.subject).toBe('Confirm your e-mail address');
    expect(mail!.links).toHaveLength(1);
    // The typed name stays out of a mail to an address nobody has confirmed (neutral greeting).
    expect(mail!.text).toContain('Hello,');
    expect(mail!.html).not.toContain('Eve');
    await page.goto(mail!.links[0]!);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('E-mail address confirmed');
    await page.getByRole('link', { name: 'Continue' }).click();
    // Not a first-party client: the consent page, then the RP.
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${redirect}**`);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state });
    const claims = tokens.claims()!;
    expect(claims.sub).toBe(users.json.data[0].id);
    const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
    expect(info).toMatchObject({ email: 'eve@example.com', email_verified: true });

    const audit = await t.token('svc:audit:read');
    const signup = await api(t, 'GET', '/api/v1/audit?type=signup', { token: audit });
    // One entry for the account: `signup` (not also user.created), naming the client whose request it continued.
    expect(signup.json.data).toEqual([expect.objectContaining({ status: 'success', user_id: claims.sub, client_id: config.clientMetadata().client_id })]);
    const created = await api(t, 'GET', '/api/v1/audit?type=user.created', { token: audit });
    expect(created.json.data.filter((e: { details: { user_id?: string } }) => e.details.user_id === claims.sub)).toEqual([]);
    const verified = await api(t, 'GET', '/api/v1/audit?type=email_verified', { token: audit });
    expect(verified.json.data).toEqual([expect.objectContaining({ user_id: claims.sub })]);
    // The link works once.
    const again = await page.goto(mail!.links[0]!);
    expect(again?.status()).toBe(400);
    await page.context().close();
  });

  it('an account an administrator created unverified signs in at once; a self sign-up back unconfirmed waits, with a fresh link mailed', async () => {
    const signIn = async (page: Page, email: string, password: string) => {
      await page.getByLabel('E-mail').fill(email);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Sign in' }).click();
    };
    // CONTRACT: users created through the API can sign in at once (verification is a sign-up rule).
    const made = await createUser(t, { email: 'made@example.com', email_verified: false, password: 'Made-by-admin-1' });
    const first = await authorize(browser, config, redirect);
    await signIn(first.page, made.email, made.password);
    await first.page.getByRole('button', { name: 'Allow' }).click();
    await first.page.waitForURL(`${redirect}**`);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(first.page.url()), { pkceCodeVerifier: first.verifier, expectedState: first.state });
    expect(tokens.claims()!.sub).toBe(made.id);
    await first.page.context().close();

    // A self sign-up left unconfirmed: signing in later waits on the page, which now tells the truth.
    const signup = await authorize(browser, config, redirect);
    await signup.page.getByRole('link', { name: SIGNUP_LINK }).click();
    await fillSignup(signup.page, { email: 'later@example.com', password: 'Later-strong-pass-1' });
    await expect(signup.page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Check your e-mail');
    await sink.waitFor('later@example.com', 1);
    await signup.page.context().close();
    const back = await authorize(browser, config, redirect);
    await signIn(back.page, 'later@example.com', 'Later-strong-pass-1');
    await expect(back.page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Check your e-mail');
    const mails = await sink.waitFor('later@example.com', 2);
    await back.page.goto(mails[1]!.links[0]!);
    await expect(back.page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('E-mail address confirmed');
    await back.page.context().close();
  });

  it('refuses a domain outside allowed_email_domains with a clear message', async () => {
    const { page } = await authorize(browser, config, redirect);
    await page.getByRole('link', { name: SIGNUP_LINK }).click();
    await fillSignup(page, { email: 'mallory@evil.example', password: 'Mallory-pass-1' });
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Sign-up is not open to addresses at evil.example.');
    await page.context().close();
  });

  it('hostile: refuses an address the Management API refuses (non-ASCII local part), so no spelling of it can sign up twice', async () => {
    const { page } = await authorize(browser, config, redirect);
    await page.getByRole('link', { name: SIGNUP_LINK }).click();
    for (const email of ['zoë@example.com', 'ZOË@example.com']) {
      await fillSignup(page, { email, password: 'Zoe-signup-pass-1' });
      await expect(page.getByRole('alert').textContent()).resolves.toBe('Enter a valid e-mail address.');
    }
    expect(await t.sql("SELECT id FROM users WHERE email LIKE 'zo%@example.com'")).toEqual([]);
    await page.context().close();
  });

  it('a taken address gets the same page; its owner gets a mail, the visitor learns nothing', async () => {
    const owner = await createUser(t, { email: 'owner@example.org', email_verified: true, password: 'Owner-pass-123' });
    const fresh = await authorize(browser, config, redirect);
    await fresh.page.getByRole('link', { name: SIGNUP_LINK }).click();
    await fillSignup(fresh.page, { email: 'brand-new@example.org', password: 'Brand-new-pass-1' });
    const newBody = await fresh.page.locator('main').innerHTML();

    const { page } = await authorize(browser, config, redirect);
    await page.getByRole('link', { name: SIGNUP_LINK }).click();
    // The taken address costs the Argon2 run a new account costs, so the answer's time tells nothing.
    const passwords = t.app.ctx.passwords;
    const hash = passwords.hash.bind(passwords);
    let hashed = 0;
    passwords.hash = (p: string) => {
      hashed++;
      return hash(p);
    };
    try {
      await fillSignup(page, { email: owner.email, password: 'Attacker-pass-1' });
    } finally {
      passwords.hash = hash;
    }
    expect(hashed).toBe(1);
    const takenBody = await page.locator('main').innerHTML();
    const normalise = (s: string) => s.replace(/brand-new@example\.org|owner@example\.org/g, 'X').replace(/value="[^"]+"/g, '').replace(/interaction\/[A-Za-z0-9_-]+/g, 'interaction/U');
    expect(normalise(takenBody)).toBe(normalise(newBody));
    const [mail] = await sink.waitFor(owner.email);
    expect(mail!.subject).toBe('Sign-up attempt with your e-mail address');
    // Continue does not sign anyone in.
    await page.getByRole('button', { name: 'Continue' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('Confirm your e-mail address first');
    const audit = await api(t, 'GET', '/api/v1/audit?type=signup&status=failed', { token: await t.token('svc:audit:read') });
    expect(audit.json.data.some((e: { user_id: string }) => e.user_id === owner.id)).toBe(true);
    await page.context().close();
    await fresh.page.context().close();
  });

  it('resends the verification mail, at most three times an hour', { timeout: 60_000 }, async () => {
    const { page } = await authorize(browser, config, redirect);
    await page.getByRole('link', { name: SIGNUP_LINK }).click();
    await fillSignup(page, { email: 'resend@example.com', password: 'Resend-pass-12' });
    await sink.waitFor('resend@example.com', 1);
    await awayFromWindowEdge(3600, 15_000); // three resends an hour, fixed windows (src/ui/account/limiter.ts)
    for (let i = 0; i < 3; i++) {
      await page.getByRole('button', { name: /send the e-mail again/i }).click();
      await expect(page.getByRole('status').textContent()).resolves.toContain('a new e-mail is on its way');
    }
    await page.getByRole('button', { name: /send the e-mail again/i }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('Too many e-mails');
    await t.app.ctx.mailer.drain();
    expect(sink.messages.filter((m) => m.to.includes('resend@example.com'))).toHaveLength(4);
    await page.context().close();
  });
});

describe('sign-up without required verification, and sign-up off', () => {
  let on: TestApp;
  let off: TestApp;
  let browser: Browser;
  let rp: RpServer;
  let redirect: string;

  beforeAll(async () => {
    rp = await startRpServer();
    redirect = `${rp.origin}/cb`;
    on = await startTestApp({ SECURITY_SIGNUP_ENABLED: 'true', SECURITY_SIGNUP_REQUIRE_EMAIL_VERIFICATION: 'false' });
    off = await startTestApp();
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await on?.close();
    await off?.close();
    await rp?.close();
  });

  it('without required verification the sign-up continues straight to the RP', async () => {
    const config = await rpFor(on, redirect);
    const { page, verifier, state } = await authorize(browser, config, redirect);
    await page.getByRole('link', { name: SIGNUP_LINK }).click();
    await fillSignup(page, { email: 'quick@example.net', password: 'Quick-pass-123' });
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${redirect}**`);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state });
    const info = await oidc.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub);
    expect(info).toMatchObject({ email: 'quick@example.net', email_verified: false });
    await page.context().close();
  });

  it('with sign-up off the sign-in page has no link and the page answers 404', async () => {
    const config = await rpFor(off, redirect);
    const { page } = await authorize(browser, config, redirect);
    await expect(page.getByRole('link', { name: SIGNUP_LINK }).count()).resolves.toBe(0);
    const res = await page.goto(`${page.url()}/signup`);
    expect(res?.status()).toBe(404);
    await page.context().close();
  });
});
