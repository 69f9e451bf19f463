/**
 * Security alerts by e-mail (notifications.security_alerts), read from the SMTP sink: a lock after
 * too many failed sign-ins, a sign-in from a new device (security.device_matching on; not the
 * first sign-in, not a returning device), and the user's own choice on the account page turning
 * the password-change alert off.
 */
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { createUser, type TestUser } from '../helpers/users.js';

describe('security alerts', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let browser: Browser;
  let origin: string;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await startTestApp({ ...sink.env(), SECURITY_DEVICE_MATCHING_ENABLED: 'true' });
    origin = new URL(t.issuer).origin;
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await sink?.close();
  });

  async function signInToAccount(context: BrowserContext, user: TestUser, password = user.password) {
    const page = await context.newPage();
    await page.goto(`${origin}/account`);
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    return page;
  }

  const subjects = (user: TestUser) => sink.messages.filter((m) => m.to.includes(user.email.toLowerCase())).map((m) => m.subject);

  it('mails the user when the account gets locked', async () => {
    const user = await createUser(t, { email_verified: true });
    const page = await signInToAccount(await browser.newContext(), user, 'wrong-password-0');
    for (let i = 1; i < 5; i++) {
      await page.getByLabel('Password').fill(`wrong-password-${i}`);
      await page.getByRole('button', { name: 'Sign in' }).click();
    }
    const [mail] = await sink.waitFor(user.email);
    expect(mail!.subject).toBe('Your account was locked');
    expect(mail!.links).toEqual([`${origin}/account`]);
    await page.context().close();
  });

  it('the lock alert is in the language of the sign-in page the failures were made on', async () => {
    const user = await createUser(t, { email_verified: true });
    const context = await browser.newContext({ locale: 'fr-FR' });
    const page = await context.newPage();
    await page.goto(`${origin}/account`);
    expect(await page.locator('html').getAttribute('lang')).toBe('fr');
    for (let i = 0; i < 5; i++) {
      await page.getByLabel('Adresse e-mail').fill(user.email);
      await page.getByLabel('Mot de passe').fill(`wrong-password-${i}`);
      await page.getByRole('button', { name: 'Se connecter' }).click();
      await page.getByRole('alert').waitFor();
    }
    const [mail] = await sink.waitFor(user.email);
    expect(mail!.subject).toBe('Votre compte a été verrouillé');
    expect(mail!.html).toContain('<html lang="fr">');
    await context.close();
  });

  it('mails on a sign-in from a new device, not on the first sign-in nor from a known device', async () => {
    const user = await createUser(t, { email_verified: true });
    const first = await browser.newContext();
    await (await signInToAccount(first, user)).waitForURL(`${origin}/account`);
    await t.app.ctx.mailer.drain();
    expect(subjects(user)).toEqual([]);

    const second = await browser.newContext();
    await (await signInToAccount(second, user)).waitForURL(`${origin}/account`);
    const [mail] = await sink.waitFor(user.email);
    expect(mail!.subject).toBe('New sign-in to your account');

    // The first browser is known: signing in there again (a fresh sign-in) says nothing.
    await first.clearCookies({ name: '_session' });
    await (await signInToAccount(first, user)).waitForURL(`${origin}/account`);
    await t.app.ctx.mailer.drain();
    expect(subjects(user)).toEqual(['New sign-in to your account']);
    await first.close();
    await second.close();
  });

  it('the user turns the password-change alert off on the account page, and no mail comes', async () => {
    const user = await createUser(t, { email_verified: true });
    const context = await browser.newContext();
    const page = await signInToAccount(context, user);
    await page.waitForURL(`${origin}/account`);
    await expect(page.getByLabel('Password changed').isChecked()).resolves.toBe(true);
    await page.getByLabel('Password changed').uncheck();
    await page.getByRole('button', { name: 'Save alert settings' }).click();
    await expect(page.getByLabel('Password changed').isChecked()).resolves.toBe(false);
    await page.getByLabel('Current password').fill(user.password);
    await page.getByLabel('New password').fill('Another-pass-456');
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect(page.locator('p.notice[role=status]').textContent()).resolves.toBe('Your password has been changed.');
    await t.app.ctx.mailer.drain();
    expect(subjects(user)).toEqual([]);
    await context.close();
  });
});
