/**
 * The account page at /account, in headless Chromium: it signs in through the tenant's own
 * authorization endpoint as the first-party client svc-account, then the user edits the profile,
 * changes the password (current one required; audited; alert mail), asks for an e-mail change
 * (confirmed from the mail the SMTP sink received), enrols TOTP from the inline-SVG QR code page
 * and gets recovery codes, regenerates them, turns it off, lists and ends sessions. Hostile: CSRF,
 * another user's session id, HTML in names, a wrong current password. Every page passes axe-core.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { base32Decode, hotp, totpStep } from '../../src/users/totp.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { launchBrowser } from '../helpers/browser.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { createUser, type TestUser } from '../helpers/users.js';

describe('account page', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let browser: Browser;
  let user: TestUser;
  let page: Page;
  let origin: string;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await startTestApp(sink.env());
    origin = new URL(t.issuer).origin;
    browser = await launchBrowser();
    user = await createUser(t, { email_verified: true, given_name: 'Ada', name: '<script>alert(1)</script>' });
    page = await (await browser.newContext()).newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await sink?.close();
  });

  const signIn = async (p: Page, password = user.password) => {
    await p.getByLabel('E-mail').fill(user.email);
    await p.getByLabel('Password').fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
  };

  it('signs in through the tenant’s authorization endpoint as svc-account and shows the page, no-store, no script but the passkey ceremony\'s own', async () => {
    await page.goto(`${origin}/account`);
    expect(page.url()).toContain('/oidc/v1/interaction/');
    await signIn(page);
    await page.waitForURL(`${origin}/account`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Your account');
    // The name is text: no script element came from it.
    // The one script is the passkey ceremony's, from the service's own path (CSP script-src 'self').
    await expect(page.locator('script:not([src$="/oidc/v1/assets/passkey.js"])').count()).resolves.toBe(0);
    await expect(page.getByLabel('Display name').inputValue()).resolves.toBe('<script>alert(1)</script>');
    const res = await page.request.get(`${origin}/account`);
    expect(res.headers()['cache-control']).toBe('no-store');
    expect(res.headers()['content-security-policy']).toContain("default-src 'none'");
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('edits the profile', async () => {
    await page.getByLabel('First name').fill('Augusta');
    await page.getByLabel('Username').fill('augusta');
    await page.getByRole('button', { name: 'Save profile' }).click();
    await expect(page.locator('p.notice[role=status]').textContent()).resolves.toBe('Your changes have been saved.');
    const got = await api(t, 'GET', `/api/v1/users/${user.id}`, { token: await t.token('svc:users:read') });
    expect(got.json.data).toMatchObject({ given_name: 'Augusta', username: 'augusta' });
  });

  it('changes the password only with the current one, under the policy; audited; alert mail', async () => {
    await page.getByLabel('Current password').fill('not-my-password');
    await page.getByLabel('New password').fill('Fresh-password-77');
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toBe('The current password is wrong.');
    await page.getByLabel('Current password').fill(user.password);
    await page.getByLabel('New password').fill('short');
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Use at least 8 characters.');
    await page.getByLabel('Current password').fill(user.password);
    await page.getByLabel('New password').fill('Fresh-password-77');
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect(page.locator('p.notice[role=status]').textContent()).resolves.toBe('Your password has been changed.');
    user.password = 'Fresh-password-77';
    // This device stays signed in (other devices are signed out: see the sessions test).
    await page.goto(`${origin}/account`);
    expect(page.url()).toBe(`${origin}/account`);
    const audit = await api(t, 'GET', '/api/v1/audit?type=password_changed', { token: await t.token('svc:audit:read') });
    expect(audit.json.data).toEqual([expect.objectContaining({ user_id: user.id })]);
    const [alert] = await sink.waitFor(user.email);
    expect(alert!.subject).toBe('Your password was changed');
    expect(alert!.links).toEqual([`${origin}/account`]);
  });

  let secret: string;

  it('enrols TOTP from the page with an inline SVG QR code, then shows recovery codes once', async () => {
    await page.getByRole('button', { name: 'Set up two-step verification' }).click();
    const qr = page.getByRole('img', { name: /QR code/ });
    await expect(qr.locator('svg').count()).resolves.toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    secret = ((await page.locator('#totp-secret').textContent()) ?? '').replace(/\s/g, '');
    const code = hotp(base32Decode(secret), totpStep(Date.now()));
    await page.getByLabel('Authentication code').fill(code);
    await page.getByRole('button', { name: 'Turn on' }).click();
    await expect(page.locator('#recovery-codes li').count()).resolves.toBe(10);
    await page.getByRole('link', { name: 'Back to your account' }).click();
    await expect(page.getByText('Two-step verification is on (authenticator app).').isVisible()).resolves.toBe(true);
    const got = await api(t, 'GET', `/api/v1/users/${user.id}`, { token: await t.token('svc:users:read') });
    expect(got.json.data.mfa).toEqual({ enabled: true, methods: ['totp'] });
  });

  it('regenerates recovery codes (a recent sign-in: one click) and turns TOTP off with the password', async () => {
    await page.getByRole('button', { name: 'Regenerate recovery codes' }).click();
    await expect(page.locator('#recovery-codes li').count()).resolves.toBe(10);
    await page.getByRole('link', { name: 'Back to your account' }).click();
    await page.getByLabel('Password (to confirm)').fill(user.password);
    await page.getByRole('button', { name: 'Turn off two-step verification' }).click();
    await expect(page.locator('p.notice[role=status]').textContent()).resolves.toContain('Two-step verification is off');
    const audit = await api(t, 'GET', '/api/v1/audit?type=mfa_disabled', { token: await t.token('svc:audit:read') });
    expect(audit.json.data[0]).toMatchObject({ user_id: user.id, details: expect.objectContaining({ method: 'totp' }) });
  });

  it('changes the e-mail address after confirmation from the new address', async () => {
    await page.getByLabel('New e-mail address').fill('ada.new@example.com');
    await page.getByLabel('Your password').fill(user.password);
    await page.getByRole('button', { name: 'Change e-mail address' }).click();
    await expect(page.locator('p.notice[role=status]').textContent()).resolves.toContain('ada.new@example.com');
    const [mail] = await sink.waitFor('ada.new@example.com');
    expect(mail!.links).toHaveLength(1);
    const other = await (await browser.newContext()).newPage();
    await other.goto(mail!.links[0]!);
    await expect(other.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('E-mail address confirmed');
    await other.context().close();
    const got = await api(t, 'GET', `/api/v1/users/${user.id}`, { token: await t.token('svc:users:read') });
    expect(got.json.data).toMatchObject({ email: 'ada.new@example.com', email_verified: true });
    user.email = 'ada.new@example.com';
  });

  it('lists the user’s sessions and ends another device’s one', async () => {
    const second = await (await browser.newContext()).newPage();
    await second.goto(`${origin}/account`);
    await signIn(second);
    await second.waitForURL(`${origin}/account`);
    await page.reload();
    const sessions = page.getByRole('region', { name: 'Your sessions' }).getByRole('listitem');
    await expect(sessions.count()).resolves.toBe(2);
    // Each session names its applications as the user knows them, not by client id.
    await expect(sessions.first().textContent()).resolves.toContain('Applications: Account page');
    await expect(sessions.first().textContent()).resolves.not.toContain('svc-account');
    const otherOne = sessions.filter({ hasNotText: 'This device' });
    await otherOne.getByRole('button', { name: 'End this session' }).click();
    await expect(page.locator('p.notice[role=status]').textContent()).resolves.toBe('The session has ended.');
    // The other browser is signed out: its account page asks to sign in again.
    await second.goto(`${origin}/account`);
    expect(second.url()).toContain('/oidc/v1/interaction/');
    await second.context().close();
  });

  it('hostile: a form without the CSRF token, and another user’s session id, change nothing', async () => {
    const forged = await page.request.post(`${origin}/account`, { form: { action: 'profile.save', given_name: 'Mallory' } });
    expect(forged.status()).toBe(403);
    const victim = await createUser(t, { email_verified: true });
    const vp = await (await browser.newContext()).newPage();
    await vp.goto(`${origin}/account`);
    await vp.getByLabel('E-mail').fill(victim.email);
    await vp.getByLabel('Password').fill(victim.password);
    await vp.getByRole('button', { name: 'Sign in' }).click();
    await vp.waitForURL(`${origin}/account`);
    const list = await api(t, 'GET', `/api/v1/sessions?username=${victim.id}`, { token: await t.token('svc:sessions:read') });
    const victimSession = list.json.data[0].jti as string;
    const csrf = await page.locator('input[name="csrf_token"]').first().getAttribute('value');
    const res = await page.request.post(`${origin}/account`, { form: { csrf_token: csrf!, action: 'sessions.end', session: victimSession } });
    expect(res.status()).toBe(404);
    const after = await api(t, 'GET', `/api/v1/sessions?username=${victim.id}`, { token: await t.token('svc:sessions:read') });
    expect(after.json.data.filter((s: { active: boolean }) => s.active)).toHaveLength(1);
    await vp.context().close();
  });

  it('signs out from the page: the end-session confirmation, then back to a new sign-in', async () => {
    await page.goto(`${origin}/account`);
    await page.getByRole('link', { name: 'Sign out' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Sign out?');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((u) => u.pathname.includes('/oidc/v1/interaction/'));
    const list = await api(t, 'GET', `/api/v1/sessions?username=${user.id}`, { token: await t.token('svc:sessions:read') });
    expect(list.json.data).toEqual([]);
  });
});
