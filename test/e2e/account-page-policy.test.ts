/**
 * The account page and the sign-up form against the rules the rest of the service keeps (second
 * audit of 2026-11-30), in headless Chromium: profile fields over the users domain's limits are
 * refused on the form (the Management API answers 422 for them), TOTP is not offered while the
 * tenant has turned authenticator apps off, and two-step verification cannot be turned off while
 * MFA is required. Hostile: the refused POSTs (a stale setup page, a forged disable) change nothing.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { base32Decode, hotp, totpStep } from '../../src/users/totp.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { launchBrowser } from '../helpers/browser.js';
import { createUser, type TestUser } from '../helpers/users.js';
import { pageWithAuthenticator } from '../helpers/webauthn.js';
import { signInToAccountPage } from '../helpers/account-page.js';

describe('account page: limits and the MFA policy', () => {
  let t: TestApp;
  let browser: Browser;
  let origin: string;

  beforeAll(async () => {
    t = await startTestApp({ SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000', SECURITY_SIGNUP_ENABLED: 'true' });
    origin = new URL(t.issuer).origin;
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const setMfa = async (mfa: { required: boolean; totp_enabled: boolean }) => {
    const res = await api(t, 'PUT', '/api/v1/config/security', { token: await t.token('svc:config:write'), body: { mfa } });
    expect(res.status).toBe(200);
  };
  const getUser = async (id: string) => (await api(t, 'GET', `/api/v1/users/${id}`, { token: await t.token('svc:users:read') })).json.data;

  const signedIn = async (user: TestUser): Promise<Page> => signInToAccountPage(await (await browser.newContext()).newPage(), origin, user);

  /** Turns TOTP on from the page and returns to it. */
  async function enrolTotp(page: Page) {
    await page.getByRole('button', { name: 'Set up two-step verification' }).click();
    const secret = ((await page.locator('#totp-secret').textContent()) ?? '').replace(/\s/g, '');
    await page.getByLabel('Authentication code').fill(hotp(base32Decode(secret), totpStep(Date.now())));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await expect(page.locator('#recovery-codes li').count()).resolves.toBe(10);
    await page.getByRole('link', { name: 'Back to your account' }).click();
  }

  it('profile: the inputs carry the users domain’s limits, and over-long values are refused on the form (400), nothing stored', async () => {
    const user = await createUser(t, { given_name: 'Ada', name: 'Ada Lovelace' });
    const page = await signedIn(user);
    const limits = { 'First name': '100', 'Last name': '100', 'Display name': '200', Username: '100' };
    for (const [label, max] of Object.entries(limits)) await expect(page.getByLabel(label).getAttribute('maxlength')).resolves.toBe(max);

    // A client that ignores maxlength (or a crafted POST) is answered on the form.
    await page.locator('#profile-name').evaluate((el) => el.removeAttribute('maxlength'));
    await page.getByLabel('Display name').fill('n'.repeat(201));
    const [res] = await Promise.all([page.waitForResponse((r) => r.url() === `${origin}/account` && r.request().method() === 'POST'), page.getByRole('button', { name: 'Save profile' }).click()]);
    expect(res.status()).toBe(400);
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Display name can have at most 200 characters.');
    expect(await seriousViolations(page)).toEqual([]);

    const csrf = (await page.locator('input[name="csrf_token"]').first().getAttribute('value'))!;
    for (const [field, length] of [['given_name', 101], ['family_name', 101], ['username', 101]] as const) {
      const posted = await page.request.post(`${origin}/account`, { form: { csrf_token: csrf, action: 'profile.save', given_name: 'Augusta', [field]: 'x'.repeat(length) } });
      expect(posted.status()).toBe(400);
    }
    expect(await getUser(user.id)).toMatchObject({ given_name: 'Ada', name: 'Ada Lovelace' });

    // At the limit it is stored.
    const ok = await page.request.post(`${origin}/account`, { form: { csrf_token: csrf, action: 'profile.save', given_name: 'g'.repeat(100), name: 'n'.repeat(200), username: 'u'.repeat(100) } });
    expect(ok.status()).toBe(200);
    expect(await getUser(user.id)).toMatchObject({ given_name: 'g'.repeat(100), name: 'n'.repeat(200), username: 'u'.repeat(100) });
    // Counted in characters as the API counts them: 100 emoji (200 UTF-16 units) are within the limit, 101 are not.
    const emoji = await page.request.post(`${origin}/account`, { form: { csrf_token: csrf, action: 'profile.save', given_name: '😀'.repeat(100) } });
    expect(emoji.status()).toBe(200);
    expect((await getUser(user.id)).given_name).toBe('😀'.repeat(100));
    const over = await page.request.post(`${origin}/account`, { form: { csrf_token: csrf, action: 'profile.save', given_name: '😀'.repeat(101) } });
    expect(over.status()).toBe(400);
    await page.context().close();
  });

  it('profile: a taken username is told in the page language, never in the Management API’s English', async () => {
    const owner = await createUser(t);
    const taken = (await getUser(owner.id)).username as string;
    const user = await createUser(t);
    const page = await (await browser.newContext({ locale: 'de-DE' })).newPage();
    await page.goto(`${origin}/account`);
    await page.getByLabel('E-Mail-Adresse').fill(user.email);
    await page.getByLabel('Passwort').fill(user.password);
    await page.getByRole('button', { name: 'Anmelden', exact: true }).click();
    await page.waitForURL(`${origin}/account`);
    await page.getByLabel('Benutzername').fill(taken.toUpperCase());
    await page.getByLabel('Vorname').fill('Augusta');
    const [res] = await Promise.all([page.waitForResponse((r) => r.url() === `${origin}/account` && r.request().method() === 'POST'), page.getByRole('button', { name: 'Profil speichern' }).click()]);
    expect(res.status()).toBe(400);
    const alert = (await page.getByRole('alert').textContent()) ?? '';
    expect(alert).toBe('Dieser Benutzername ist bereits vergeben. Wählen Sie einen anderen.');
    expect(alert).not.toMatch(/already|exists|username/i);
    expect((await getUser(user.id)).given_name).toBe('Ada');
    await page.context().close();
  });

  it('sign-up: the name input carries the limit, and an over-long name is refused on the form (400), no account created', async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${origin}/account`);
    await page.getByRole('link', { name: /create( an)? account/i }).click();
    await expect(page.getByLabel('Name').getAttribute('maxlength')).resolves.toBe('200');
    await page.getByLabel('Name').evaluate((el) => el.removeAttribute('maxlength'));
    await page.getByLabel('Name').fill('n'.repeat(201));
    await page.locator('input[type="email"][name="email"]').fill('long-name@example.com');
    await page.locator('input[type="password"][autocomplete="new-password"]').fill('Long-name-pass-1');
    const [res] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/signup') && r.request().method() === 'POST'), page.getByRole('button', { name: /create account/i }).click()]);
    expect(res.status()).toBe(400);
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Name can have at most 200 characters.');
    const users = await api(t, 'GET', '/api/v1/users?q=long-name%40example.com', { token: await t.token('svc:users:read') });
    expect(users.json.data).toEqual([]);
    await page.context().close();
  });

  it('TOTP turned off for the tenant: no enrolment offered, and a setup page opened before is refused on submit, nothing stored', async () => {
    const user = await createUser(t);
    const page = await signedIn(user);
    await page.getByRole('button', { name: 'Set up two-step verification' }).click();
    const secret = ((await page.locator('#totp-secret').textContent()) ?? '').replace(/\s/g, '');
    await setMfa({ required: false, totp_enabled: false });
    try {
      await page.getByLabel('Authentication code').fill(hotp(base32Decode(secret), totpStep(Date.now())));
      const [res] = await Promise.all([page.waitForResponse((r) => r.url() === `${origin}/account` && r.request().method() === 'POST'), page.getByRole('button', { name: 'Turn on' }).click()]);
      expect(res.status()).toBe(404);
      await expect(page.getByRole('alert').textContent()).resolves.toBe('Authenticator apps are not available here.');
      expect(await page.locator('main').innerText()).not.toContain('Two-step verification is on');
      expect((await getUser(user.id)).mfa).toEqual({ enabled: false, methods: [] });

      await page.goto(`${origin}/account`);
      await expect(page.getByRole('button', { name: 'Set up two-step verification' }).count()).resolves.toBe(0);
      const csrf = (await page.locator('input[name="csrf_token"]').first().getAttribute('value'))!;
      const setup = await page.request.post(`${origin}/account`, { form: { csrf_token: csrf, action: 'mfa.setup' } });
      expect(setup.status()).toBe(404);
      expect((await getUser(user.id)).mfa).toEqual({ enabled: false, methods: [] });
    } finally {
      await setMfa({ required: false, totp_enabled: true });
    }
    await page.context().close();
  });

  it('TOTP enrolled before the tenant turned it off: the page says its codes are not asked at sign-in, not that it is on', async () => {
    const user = await createUser(t);
    const page = await signedIn(user);
    await enrolTotp(page);
    await setMfa({ required: false, totp_enabled: false });
    try {
      await page.goto(`${origin}/account`);
      const text = await page.locator('main').innerText();
      expect(text).toContain('You have an authenticator app set up, but your organisation does not ask for its codes at sign-in at the moment.');
      expect(text).not.toContain('Two-step verification is on');
    } finally {
      await setMfa({ required: false, totp_enabled: true });
    }
    await page.goto(`${origin}/account`);
    expect(await page.locator('main').innerText()).toContain('Two-step verification is on (authenticator app).');
    await page.context().close();
  });

  it('turning the authenticator app off while a passkey stays says the passkey remains the second step, not "only your password"', async () => {
    const user = await createUser(t);
    const { page, context } = await pageWithAuthenticator(browser);
    await signInToAccountPage(page, origin, user);
    await page.getByLabel(/name of the new passkey/i).fill('Laptop');
    await page.getByRole('button', { name: /add a passkey/i }).click();
    await page.waitForURL(/passkey=added/);
    await page.goto(`${origin}/account`);
    await enrolTotp(page);
    expect((await getUser(user.id)).mfa.methods.sort()).toEqual(['totp', 'webauthn']);
    await page.getByLabel('Password (to confirm)').fill(user.password);
    await page.getByRole('button', { name: 'Turn off two-step verification' }).click();
    const text = await page.locator('main').innerText();
    expect(text).toContain('The authenticator app is removed. Your passkeys remain the second step when you sign in.');
    expect(text).not.toContain('needs only your password');
    expect((await getUser(user.id)).mfa.methods).toEqual(['webauthn']);
    await context.close();
  });

  it('MFA required: turning two-step verification off is not offered and a posted disable is refused, nothing changed; recovery codes still regenerate', async () => {
    const user = await createUser(t);
    const page = await signedIn(user);
    await enrolTotp(page);
    await setMfa({ required: true, totp_enabled: true });
    try {
      await page.goto(`${origin}/account`);
      await expect(page.getByRole('button', { name: 'Turn off two-step verification' }).count()).resolves.toBe(0);
      expect(await page.locator('main').innerText()).toContain('Two-step verification is required for this account, so it cannot be turned off.');
      expect(await seriousViolations(page)).toEqual([]);

      const csrf = (await page.locator('input[name="csrf_token"]').first().getAttribute('value'))!;
      const res = await page.request.post(`${origin}/account`, { form: { csrf_token: csrf, action: 'mfa.disable', password: user.password } });
      expect(res.status()).toBe(403);
      expect(await res.text()).toContain('Two-step verification is required for this account, so it cannot be turned off.');
      expect((await getUser(user.id)).mfa).toEqual({ enabled: true, methods: ['totp'] });
      const audit = await api(t, 'GET', '/api/v1/audit?type=mfa_disabled', { token: await t.token('svc:audit:read') });
      expect(audit.json.data.filter((e: { user_id: string }) => e.user_id === user.id)).toEqual([]);

      await page.getByLabel('Password (to confirm)').fill(user.password);
      await page.getByRole('button', { name: 'Regenerate recovery codes' }).click();
      await expect(page.locator('#recovery-codes li').count()).resolves.toBe(10);
    } finally {
      await setMfa({ required: false, totp_enabled: true });
    }
    // Not required any more: it can be turned off again.
    await page.goto(`${origin}/account`);
    await expect(page.getByRole('button', { name: 'Turn off two-step verification' }).count()).resolves.toBe(1);
    await page.context().close();
  });
});
