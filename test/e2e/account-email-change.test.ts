/**
 * The account page's e-mail change against the rules sign-up and the password reset keep (third
 * audit of 2026-11-30), in headless Chromium with the SMTP sink: an address outside
 * `security.signup.allowed_email_domains` is refused with sign-up's message in the page language;
 * one target address gets at most three confirmation mails an hour (however it is spelt); and the
 * answer does not wait for the lookup, token or mail, so it takes the same time whether the address
 * is free or someone else's (and says the same either way). Runs on both backends: the limit counts
 * in memory on SQLite and in Redis on the production one.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { signInToAccountPage } from '../helpers/account-page.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { createUser, type TestUser } from '../helpers/users.js';

const TENANT = 'default';

describe('account page: e-mail change', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let browser: Browser;
  let origin: string;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await startTestApp({ ...sink.env(), SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000', SECURITY_SIGNUP_ALLOWED_EMAIL_DOMAINS: 'example.com,example.org' });
    origin = new URL(t.issuer).origin;
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await sink?.close();
  });

  const audits = async (userId: string) => (await t.app.ctx.storage.audit.list(TENANT, { type: 'email_change_requested', user_id: userId }, { limit: 100, include_count: false })).items;

  /** Posts an e-mail change from the signed-in page (its CSRF token), returning status, notice or error, and time taken. */
  async function change(page: Page, email: string, password: string): Promise<{ status: number; text: string; ms: number }> {
    const csrf = (await page.locator('input[name="csrf_token"]').first().getAttribute('value'))!;
    const started = performance.now();
    const res = await page.request.post(`${origin}/account`, { form: { csrf_token: csrf, action: 'email.change', email, current_password: password } });
    const ms = performance.now() - started;
    const body = await res.text();
    const text = /<p class="notice" role="status">([^<]*)<\/p>/.exec(body)?.[1] ?? /role="alert"[^>]*>(?:<p>)?([^<]*)/.exec(body)?.[1] ?? '';
    return { status: res.status(), text, ms };
  }

  it('an address outside the allowed domains is refused with sign-up’s message, in the page language; no mail', async () => {
    const user = await createUser(t, { email_verified: true });
    const page = await signInToAccountPage(await (await browser.newContext()).newPage(), origin, user);
    await page.getByLabel('New e-mail address').fill('someone@gmail.com');
    await page.getByLabel('Your password').fill(user.password);
    await page.getByRole('button', { name: 'Change e-mail address' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('Sign-up is not open to addresses at gmail.com.');

    await page.goto(`${origin}/account?lang=fr`);
    await page.getByLabel('Nouvelle adresse e-mail').fill('Someone@GMAIL.com');
    await page.getByLabel('Votre mot de passe').fill(user.password);
    await page.getByRole('button', { name: "Changer d'adresse e-mail" }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain("L'inscription n'est pas ouverte aux adresses du domaine gmail.com.");

    // An allowed domain, in any case, goes through.
    await page.getByLabel('Nouvelle adresse e-mail').fill(`moved-${Date.now()}@Example.ORG`);
    await page.getByLabel('Votre mot de passe').fill(user.password);
    await page.getByRole('button', { name: "Changer d'adresse e-mail" }).click();
    await expect(page.locator('p.notice[role=status]').count()).resolves.toBe(1);
    await t.app.ctx.mailer.drain();
    expect(sink.messages.filter((m) => m.to.some((to) => to.endsWith('@gmail.com')))).toEqual([]);
    await page.context().close();
  });

  it('hostile: at most three confirmation mails an hour to one address, however it is spelt; the answer is the same', async () => {
    const user = await createUser(t, { email_verified: true });
    const page = await signInToAccountPage(await (await browser.newContext()).newPage(), origin, user);
    const victim = `victim-${Date.now()}@example.org`;
    const spellings = [victim, victim.toUpperCase(), victim, `  ${victim}`, victim.replace('victim', 'VICTIM')];
    const answers = [];
    for (const email of spellings) answers.push(await change(page, email, user.password));
    for (const a of answers) expect(a).toMatchObject({ status: 200, text: expect.stringContaining('We sent a confirmation link to') });
    await expect.poll(async () => (await audits(user.id)).length).toBe(5);
    await t.app.ctx.mailer.drain();
    expect(sink.messages.filter((m) => m.to.includes(victim))).toHaveLength(3);
    const entries = await audits(user.id);
    expect(entries.filter((e) => e.details.mail_sent === true)).toHaveLength(3);
    expect(entries.filter((e) => e.details.reason === 'address_limit')).toHaveLength(2);
    await page.context().close();
  });

  it('the answer neither waits for the lookup, token and mail nor differs when the address is someone else’s', async () => {
    const user = await createUser(t, { email_verified: true });
    const other: TestUser = await createUser(t, { email_verified: true });
    const free = `free-${Date.now()}@example.com`;
    const page = await signInToAccountPage(await (await browser.newContext()).newPage(), origin, user);
    // Slow storage for the two addresses: an answer that waited for the lookup (or the token after
    // it) would take the delay (3 s, 6 s for both); one decided before that work does not. The bound
    // leaves room for the password check and the page on a loaded CI machine (1.3 s seen once).
    const users = t.app.ctx.storage.users;
    const tokens = t.app.ctx.storage.accountTokens;
    const findByEmail = users.findByEmail.bind(users);
    const create = tokens.create.bind(tokens);
    const slow = (email: string) => [free, other.email].includes(email.toLowerCase());
    const pause = () => new Promise((r) => setTimeout(r, 3000));
    users.findByEmail = async (tenant, email) => {
      if (slow(email)) await pause();
      return findByEmail(tenant, email);
    };
    tokens.create = async (tenant, record) => {
      if (slow(record.email)) await pause();
      return create(tenant, record);
    };
    try {
      const mine = await change(page, free, user.password);
      const theirs = await change(page, other.email, user.password);
      expect(mine.status).toBe(200);
      expect(theirs.status).toBe(200);
      expect(mine.ms).toBeLessThan(2500);
      expect(theirs.ms).toBeLessThan(2500);
      // The same words either way, but the address.
      expect(theirs.text.replace(other.email, 'X')).toBe(mine.text.replace(free, 'X'));
      // The work still happens, after the answer: one confirmation mail, to the free address only.
      const [mail] = await sink.waitFor(free);
      expect(mail!.subject).toBe('Confirm your e-mail address');
      await expect.poll(async () => (await audits(user.id)).map((e) => e.details.reason ?? 'sent').sort()).toEqual(['email_taken', 'sent']);
      await t.app.ctx.mailer.drain();
      expect(sink.messages.filter((m) => m.to.includes(other.email.toLowerCase()))).toEqual([]);
    } finally {
      users.findByEmail = findByEmail;
      tokens.create = create;
    }
    await page.context().close();
  });
});
