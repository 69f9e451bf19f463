/**
 * Refused forms of the account page in headless Chromium (fifth session of 2026-12-01,
 * accessibility, WCAG 3.3.1 / 1.3.1), following test/e2e/form-errors-http.test.ts:
 *
 * - a refused passkey rename is told in the Passkeys section and tied to that passkey's own name
 *   field (aria-invalid, aria-describedby, focus), the other passkeys' fields untouched;
 * - a refused profile save, e-mail change or passkey add puts what the user typed back in its
 *   text fields (never a password), so it is corrected rather than typed again;
 * - axe-core finds no serious or critical violation on the page in the refused state.
 *
 * Hostile: a refused value with markup and quotes comes back as text (no element, the attribute
 * whole); another user's passkey id in the rename form is "not found" exactly like an unknown id
 * and marks no field; without the CSRF token nothing is refused back into a field.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { signInToAccountPage } from '../helpers/account-page.js';
import { launchBrowser } from '../helpers/browser.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { createUser, type TestUser } from '../helpers/users.js';
import { pageWithAuthenticator, type AuthenticatorPage } from '../helpers/webauthn.js';

const TENANT = 'default';
/** Markup and both quotes: refilled as text, it neither adds an element nor ends the value attribute. */
const HOSTILE = `"><img src=x onerror="window.pwned=1">'<b>`;

/** The state of a field as the page shows it. */
async function fieldOf(page: Page, id: string) {
  const el = page.locator(`#${id}`);
  return {
    value: await el.inputValue(),
    invalid: await el.getAttribute('aria-invalid'),
    describedBy: await el.getAttribute('aria-describedby'),
  };
}

/** Waits until the element with `id` has the focus (autofocus applies after the page loads). */
async function focusOn(page: Page, id: string): Promise<void> {
  await page.waitForFunction((want) => document.activeElement?.id === want, id, { timeout: 5000 });
}

/** The markup came back as text: no element made from it, no handler run. */
async function noInjection(page: Page): Promise<void> {
  expect(await page.locator('img').count()).toBe(0);
  expect(await page.locator('b').count()).toBe(0);
  expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
}

/**
 * Runs `act` (a form's submission) and waits until the POST's answer is the page shown and loaded:
 * the answer comes to the same URL, so waiting for a load alone could read the page before it.
 */
async function submitted(page: Page, act: () => Promise<unknown>): Promise<number> {
  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/account'),
    page.waitForEvent('framenavigated', (f) => f === page.mainFrame()),
    act(),
  ]);
  await page.waitForLoadState('load');
  return answer.status();
}

/** The section holding the element with `id` is the one headed `heading`, and `id` is an alert there. */
async function alertInSection(page: Page, id: string, heading: string): Promise<string> {
  expect(await page.locator(`#${id}`).count(), `an element #${id}`).toBe(1);
  const section = page.locator('section', { has: page.locator(`#${id}`) });
  expect(await section.getByRole('heading', { level: 2 }).first().textContent()).toBe(heading);
  expect(await page.locator(`#${id}`).getAttribute('role')).toBe('alert');
  return (await page.locator(`#${id}`).textContent()) ?? '';
}

describe('account page: refused forms keep the input and tie the message to the field', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let browser: Browser;
  let origin: string;
  let account: string;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await startTestApp({ ...sink.env(), SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000' });
    origin = new URL(t.issuer).origin;
    account = `${origin}/account`;
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await sink?.close();
  });

  const storedUser = (id: string) => t.app.ctx.storage.users.get(TENANT, id);
  const passkeysOf = (userId: string) => t.app.ctx.storage.webauthn.listCredentials(TENANT, userId);

  /** Registers a passkey named `name` with the page's virtual authenticator, from the account page's button. */
  async function addPasskey(a: AuthenticatorPage, name: string): Promise<void> {
    await a.page.goto(account);
    await a.page.getByLabel(/name of the new passkey/i).fill(name);
    await a.page.getByRole('button', { name: /add a passkey/i }).click();
    await a.page.waitForURL(/passkey=added/);
  }

  it('a refused passkey rename is tied to that passkey\'s field only (aria-invalid, aria-describedby, focus), holding what was typed; axe passes', async () => {
    const user = await createUser(t, { email_verified: true });
    // Two devices, each with its own authenticator: two passkeys on the account (both signed in
    // first: once a passkey is on the account, a password sign-in asks for it).
    const laptop = await pageWithAuthenticator(browser);
    const phone = await pageWithAuthenticator(browser);
    try {
      await signInToAccountPage(laptop.page, origin, user);
      await signInToAccountPage(phone.page, origin, user);
      await addPasskey(laptop, 'Laptop');
      await addPasskey(phone, 'Phone');
      const before = await passkeysOf(user.id);
      expect(before.map((p) => p.name)).toEqual(['Laptop', 'Phone']);

      const page = laptop.page;
      for (const blank of ['   ', '\u200b\u200b']) {
        await page.goto(account);
        await page.getByLabel('New name for Phone').fill(blank);
        expect(await submitted(page, () => page.getByRole('button', { name: 'Rename Phone' }).click())).toBe(400);
        const id = (await page.getByLabel('New name for Phone').getAttribute('id'))!;
        expect(await fieldOf(page, id)).toEqual({ value: blank, invalid: 'true', describedBy: 'passkeys-error' });
        await focusOn(page, id);
        expect(await alertInSection(page, 'passkeys-error', 'Passkeys')).toBe('Enter a name for the passkey.');
        expect(await page.locator('#form-error').count()).toBe(0);
        // The other passkey's field is not the one in error.
        const laptopId = (await page.getByLabel('New name for Laptop').getAttribute('id'))!;
        expect(await fieldOf(page, laptopId)).toEqual({ value: 'Laptop', invalid: null, describedBy: null });
        expect(await page.locator('[aria-invalid]').count()).toBe(1);
        expect(await seriousViolations(page)).toEqual([]);
      }
      expect(await passkeysOf(user.id)).toEqual(before);

      // The user corrects the field and the rename goes through.
      await page.getByLabel('New name for Phone').fill('Work phone');
      await page.getByRole('button', { name: 'Rename Phone' }).click();
      await page.waitForURL(/passkey=renamed/);
      expect((await passkeysOf(user.id)).map((p) => p.name)).toEqual(['Laptop', 'Work phone']);
    } finally {
      await laptop.context.close();
      await phone.context.close();
    }
  }, 60_000);

  it('a refused profile save puts every value typed back, as text (markup and quotes), the focus on the field in error; axe passes', async () => {
    const taken = `taken-${Date.now()}`;
    await createUser(t, { username: taken });
    const user = await createUser(t, { given_name: 'Ada', family_name: 'Lovelace', name: 'Ada Lovelace' });
    const context = await browser.newContext();
    try {
      const page = await signInToAccountPage(await context.newPage(), origin, user);
      const stored = await storedUser(user.id);
      // A username someone else has: the whole save is refused, nothing is stored.
      await page.getByLabel('First name').fill(`Augusta ${HOSTILE}`);
      await page.getByLabel('Last name').fill(`King "Byron" O'Neil`);
      await page.getByLabel('Display name').fill(HOSTILE);
      await page.getByLabel('Username').fill(taken);
      expect(await submitted(page, () => page.getByRole('button', { name: 'Save profile' }).click())).toBe(400);
      expect(await alertInSection(page, 'profile-error', 'Profile')).toBe('That username is already taken. Choose another one.');
      expect(await fieldOf(page, 'profile-username')).toEqual({ value: taken, invalid: 'true', describedBy: 'profile-error' });
      await focusOn(page, 'profile-username');
      expect(await fieldOf(page, 'profile-given_name')).toEqual({ value: `Augusta ${HOSTILE}`, invalid: null, describedBy: null });
      expect(await fieldOf(page, 'profile-family_name')).toEqual({ value: `King "Byron" O'Neil`, invalid: null, describedBy: null });
      expect(await fieldOf(page, 'profile-name')).toEqual({ value: HOSTILE, invalid: null, describedBy: null });
      await noInjection(page);
      expect(await seriousViolations(page)).toEqual([]);
      expect(await storedUser(user.id)).toEqual(stored);

      // A value over the limit (past the field's maxlength, as a script or an old browser may send it) comes back as sent.
      const long = `${'x'.repeat(100)}${HOSTILE}`;
      await page.locator('#profile-given_name').evaluate((el, value) => ((el as HTMLInputElement).value = value), long);
      await page.getByLabel('Username').fill('');
      expect(await submitted(page, () => page.getByRole('button', { name: 'Save profile' }).click())).toBe(400);
      expect(await alertInSection(page, 'profile-error', 'Profile')).toBe('First name can have at most 100 characters.');
      expect(await fieldOf(page, 'profile-given_name')).toEqual({ value: long, invalid: 'true', describedBy: 'profile-error' });
      await focusOn(page, 'profile-given_name');
      expect(await fieldOf(page, 'profile-name')).toEqual({ value: HOSTILE, invalid: null, describedBy: null });
      await noInjection(page);
      expect(await storedUser(user.id)).toEqual(stored);

      // A page opened afresh shows what is stored again.
      await page.goto(account);
      expect((await fieldOf(page, 'profile-given_name')).value).toBe('Ada');
      expect((await fieldOf(page, 'profile-name')).value).toBe('Ada Lovelace');
    } finally {
      await context.close();
    }
  }, 60_000);

  it('a refused e-mail change puts the address typed back (as text), never the password; axe passes', async () => {
    const user = await createUser(t, { email_verified: true });
    const context = await browser.newContext();
    try {
      const page = await signInToAccountPage(await context.newPage(), origin, user);
      const badAddress = `${HOSTILE}@example.com`;
      await page.getByLabel('New e-mail address').fill(badAddress);
      await page.getByLabel('Your password').fill(user.password);
      expect(await submitted(page, () => page.getByRole('button', { name: 'Change e-mail address' }).click())).toBe(400);
      expect(await alertInSection(page, 'email-error', 'E-mail address')).toBe('Enter a valid e-mail address.');
      expect(await fieldOf(page, 'new-email')).toEqual({ value: badAddress, invalid: 'true', describedBy: 'email-error' });
      await focusOn(page, 'new-email');
      expect(await fieldOf(page, 'email-password')).toEqual({ value: '', invalid: null, describedBy: null });
      await noInjection(page);
      expect(await page.content()).not.toContain(user.password);
      expect(await seriousViolations(page)).toEqual([]);

      // A wrong password: the address stays, the password field is empty and in error.
      const address = `new-${Date.now()}@example.org`;
      await page.getByLabel('New e-mail address').fill(address);
      await page.getByLabel('Your password').fill('wrong-Secret-42');
      expect(await submitted(page, () => page.getByRole('button', { name: 'Change e-mail address' }).click())).toBe(401);
      expect(await fieldOf(page, 'new-email')).toEqual({ value: address, invalid: null, describedBy: null });
      expect(await fieldOf(page, 'email-password')).toEqual({ value: '', invalid: 'true', describedBy: 'email-error' });
      await focusOn(page, 'email-password');
      expect(await page.content()).not.toContain('wrong-Secret-42');
      expect((await storedUser(user.id))?.email).toBe(user.email);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('a refused passkey add puts the name typed back, as text', async () => {
    const user = await createUser(t, { email_verified: true });
    const a = await pageWithAuthenticator(browser);
    try {
      const page = await signInToAccountPage(a.page, origin, user);
      await page.getByLabel(/name of the new passkey/i).fill(HOSTILE);
      // A credential the server cannot verify, posted by the add form as the ceremony script posts it.
      const status = await submitted(page, () =>
        page.locator('#passkey-name').evaluate((el) => {
          const form = (el as HTMLInputElement).form!;
          (form.elements.namedItem('credential') as HTMLInputElement).value = '{"id":"forged"}';
          HTMLFormElement.prototype.submit.call(form);
        }),
      );
      expect(status).toBe(400);
      expect((await fieldOf(page, 'passkey-name')).value).toBe(HOSTILE);
      expect(await alertInSection(page, 'passkeys-error', 'Passkeys')).toBe('The passkey could not be verified. Try again.');
      await noInjection(page);
      expect(await passkeysOf(user.id)).toEqual([]);
    } finally {
      await a.context.close();
    }
  }, 60_000);

  it("hostile: another user's passkey id in the rename form is not found, like an unknown id, and marks no field; nothing is refilled without the CSRF token", async () => {
    const victim = await createUser(t, { email_verified: true });
    const attacker = await createUser(t, { email_verified: true, given_name: 'Mallory' });
    const v = await pageWithAuthenticator(browser);
    const m = await pageWithAuthenticator(browser);
    try {
      await signInToAccountPage(v.page, origin, victim);
      await addPasskey(v, 'Victim key');
      const [victimKey] = await passkeysOf(victim.id);
      await signInToAccountPage(m.page, origin, attacker);
      await addPasskey(m, 'Own key');
      const page = m.page;
      const attackerBefore = await storedUser(attacker.id);

      /** The attacker's own rename form, its passkey id swapped for `id`, posted with `name`. */
      const tamperedRename = async (id: string, name: string) => {
        await page.goto(account);
        await page.locator('li.passkey input[name=id]').first().evaluate((el, value) => ((el as HTMLInputElement).value = value), id);
        await page.getByLabel('New name for Own key').fill(name);
        const status = await submitted(page, () => page.getByRole('button', { name: 'Rename Own key' }).click());
        return { status, section: await page.locator('section', { has: page.locator('#passkeys-heading') }).innerHTML() };
      };
      for (const name of ['   ', 'mine now']) {
        const stolen = await tamperedRename(victimKey!.id, name);
        const unknown = await tamperedRename('AAAAAAAAAAAAAAAAAAAAAA', name);
        expect(stolen.status).toBe(404);
        // Word for word the answer to an id that exists nowhere: nothing tells the victim's id apart.
        expect(stolen.section).toBe(unknown.section);
        expect(await alertInSection(page, 'passkeys-error', 'Passkeys')).toBe('That passkey does not exist on your account.');
        expect(await page.locator('[aria-invalid]').count()).toBe(0);
        expect(await page.content()).not.toContain('Victim key');
        // The attacker's own field shows its stored name, not what was typed for another's passkey.
        expect((await fieldOf(page, (await page.getByLabel('New name for Own key').getAttribute('id'))!)).value).toBe('Own key');
      }
      expect(await passkeysOf(victim.id)).toEqual([victimKey]);
      // The victim's page: nothing marked, the passkey as it was.
      await v.page.goto(account);
      expect(await v.page.locator('[aria-invalid], [role=alert]').count()).toBe(0);
      expect(await v.page.getByLabel('New name for Victim key').inputValue()).toBe('Victim key');

      // Without the CSRF token (or with another session's): refused before any action, nothing refilled.
      const victimCsrf = await v.page.locator('input[name=csrf_token]').first().inputValue();
      const [own] = await passkeysOf(attacker.id);
      for (const csrf of [undefined, victimCsrf]) {
        for (const form of [
          { action: 'passkeys.rename', id: own!.id, name: '   ' },
          { action: 'profile.save', given_name: HOSTILE, family_name: '', name: '', username: 'x'.repeat(200) },
          { action: 'email.change', email: HOSTILE, current_password: attacker.password },
        ]) {
          const res = await page.request.post(account, { form: { ...(csrf ? { csrf_token: csrf } : {}), ...form }, maxRedirects: 0 });
          expect(res.status()).toBe(403);
          const body = await res.text();
          expect(body).toContain('Form expired');
          expect(body).not.toContain('aria-invalid');
          expect(body).not.toContain('onerror');
        }
      }
      expect((await passkeysOf(attacker.id))[0]!.name).toBe('Own key');
      expect(await storedUser(attacker.id)).toEqual(attackerBefore);
    } finally {
      await v.context.close();
      await m.context.close();
    }
  }, 60_000);
});
