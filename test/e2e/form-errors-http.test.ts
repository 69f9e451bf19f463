/**
 * Where a refused form's message goes, over plain HTTP (fourth audit of 2026-12-01, accessibility,
 * WCAG 3.3.1 / 1.3.1): on the account page the message is in the section whose form failed,
 * tied to the field in error (aria-invalid, aria-describedby, autofocus), not at the top of seven
 * forms; on sign-up and the reset form the field the message is about gets it, and the reset form
 * has the focus from the start; the forgotten-password flow keeps its checked way back to sign-in
 * through its POST and the mailed link; an unusable confirmation link offers to sign in.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { AccountHttp } from '../helpers/account-http.js';
import { HttpSession } from '../helpers/code-flow.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { createUser } from '../helpers/users.js';

/** The opening tag of the element with `id`. */
function tag(page: string, id: string): string {
  const found = new RegExp(`<[a-z]+ [^>]*id="${id}"[^>]*>`).exec(page);
  if (!found) throw new Error(`no element with id ${id}`);
  return found[0];
}
const attr = (page: string, id: string, name: string) => new RegExp(`\\s${name}(?:="([^"]*)")?[\\s>]`).exec(tag(page, id))?.[1] ?? (new RegExp(`\\s${name}[\\s>]`).test(tag(page, id)) ? '' : undefined);
/** The page's <section> that holds the element with `id`. */
function sectionOf(page: string, id: string): string {
  return page.split('<section').find((s) => s.includes(`id="${id}"`)) ?? '';
}

describe('form errors where they happen, over HTTP', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let origin: string;
  const back = '/oidc/v1/interaction/abcDEF123_-';

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await startTestApp({ ...sink.env(), SECURITY_SIGNUP_ENABLED: 'true', SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000' });
    origin = new URL(t.issuer).origin;
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  it('account page: a wrong current password is told in the Password section, on its field, which gets the focus', async () => {
    const user = await createUser(t);
    const page = await AccountHttp.signIn(t.issuer, user);
    const answer = await page.act('password.change', { current_password: 'wrong-one-1', new_password: 'Another-Horse-99' });
    expect(answer.status).toBe(401);
    const html = answer.html;
    expect(html).not.toContain('id="form-error"');
    expect(sectionOf(html, 'password-error')).toContain('id="password-heading"');
    expect(tag(html, 'password-error')).toContain('role="alert"');
    expect(attr(html, 'current-password', 'aria-invalid')).toBe('true');
    expect(attr(html, 'current-password', 'aria-describedby')).toBe('password-error');
    expect(attr(html, 'current-password', 'autofocus')).toBe('');
    // The new password was not the problem: only its hint describes it.
    expect(attr(html, 'new-password', 'aria-describedby')).toBe('new-password-hint');
    expect(attr(html, 'new-password', 'aria-invalid')).toBeUndefined();
    // A new password under the rules: the message is on the new password.
    const weak = await page.act('password.change', { current_password: user.password, new_password: 'short' });
    expect(weak.status).toBe(400);
    expect(attr(weak.html, 'new-password', 'aria-describedby')).toBe('new-password-hint password-error');
    expect(attr(weak.html, 'new-password', 'aria-invalid')).toBe('true');
    expect(attr(weak.html, 'current-password', 'aria-invalid')).toBeUndefined();
    // Notices stay as they were.
    const saved = await page.act('alerts.save', {});
    expect(saved.html).toContain('<p class="notice" role="status">');
  });

  it("account page: the e-mail change's wrong password is tied to its own password field; a bad address to the address", async () => {
    const page = await AccountHttp.signIn(t.issuer, await createUser(t));
    const wrong = await page.act('email.change', { email: `new-${Date.now()}@example.org`, current_password: 'wrong-one-1' });
    expect(wrong.status).toBe(401);
    expect(sectionOf(wrong.html, 'email-error')).toContain('id="email-heading"');
    expect(attr(wrong.html, 'email-password', 'aria-invalid')).toBe('true');
    expect(attr(wrong.html, 'email-password', 'aria-describedby')).toBe('email-error');
    expect(attr(wrong.html, 'email-password', 'autofocus')).toBe('');
    expect(attr(wrong.html, 'current-password', 'aria-invalid')).toBeUndefined();
    expect(attr(wrong.html, 'current-password', 'aria-describedby')).toBeUndefined();
    expect(wrong.html).not.toContain('id="password-error"');

    const bad = await page.act('email.change', { email: 'not-an-address', current_password: 'whatever' });
    expect(bad.status).toBe(400);
    expect(attr(bad.html, 'new-email', 'aria-invalid')).toBe('true');
    expect(attr(bad.html, 'new-email', 'aria-describedby')).toBe('email-error');
    expect(attr(bad.html, 'email-password', 'aria-invalid')).toBeUndefined();
  });

  it('account page: a first name over the limit is told in the Profile section, on that field', async () => {
    const page = await AccountHttp.signIn(t.issuer, await createUser(t));
    const answer = await page.act('profile.save', { given_name: 'x'.repeat(1000), family_name: 'Lovelace', name: '', username: '' });
    expect(answer.status).toBe(400);
    expect(sectionOf(answer.html, 'profile-error')).toContain('id="profile-heading"');
    expect(attr(answer.html, 'profile-given_name', 'aria-invalid')).toBe('true');
    expect(attr(answer.html, 'profile-given_name', 'aria-describedby')).toBe('profile-error');
    expect(attr(answer.html, 'profile-given_name', 'autofocus')).toBe('');
    expect(attr(answer.html, 'profile-family_name', 'aria-invalid')).toBeUndefined();
  });

  /** Opens the sign-up form from the account page's sign-in and posts it; the answer's HTML. */
  async function signUp(fields: { email: string; password: string }): Promise<{ status: number; html: string }> {
    const browser = new HttpSession(t.issuer, { email: '', password: '' });
    const signIn = await browser.visit(`${origin}/account`);
    const link = /href="([^"]*\/interaction\/[^"]*\/signup)"/.exec(signIn.html)![1]!;
    const form = await browser.visit(new URL(link, origin).href);
    const csrf = /name="csrf_token" value="([^"]*)"/.exec(form.html)![1]!;
    const answer = await browser.visit(new URL(link, origin).href, new URLSearchParams({ csrf_token: csrf, name: '', email: fields.email, password: fields.password }));
    return { status: answer.status, html: answer.html };
  }

  it('sign-up: a password rule is told on the password field (focus there), a bad address on the address', async () => {
    const weak = await signUp({ email: `weak-${Date.now()}@example.com`, password: 'short' });
    expect(weak.status).toBe(400);
    expect(attr(weak.html, 'password', 'aria-describedby')).toBe('password-hint form-error');
    expect(attr(weak.html, 'password', 'aria-invalid')).toBe('true');
    expect(attr(weak.html, 'password', 'autofocus')).toBe('');
    expect(attr(weak.html, 'email', 'aria-describedby')).toBeUndefined();
    expect(attr(weak.html, 'email', 'aria-invalid')).toBeUndefined();
    expect(attr(weak.html, 'email', 'autofocus')).toBeUndefined();

    const bad = await signUp({ email: 'not-an-address', password: 'Long-enough-pass-1' });
    expect(bad.status).toBe(400);
    expect(attr(bad.html, 'email', 'aria-describedby')).toBe('form-error');
    expect(attr(bad.html, 'email', 'aria-invalid')).toBe('true');
    expect(attr(bad.html, 'email', 'autofocus')).toBe('');
    expect(attr(bad.html, 'password', 'aria-describedby')).toBe('password-hint');
    expect(attr(bad.html, 'password', 'aria-invalid')).toBeUndefined();
  });

  /** Asks for a reset on the forgot form (with `returnTo` in the query, as the sign-in page links it); the answer and the mailed link. */
  async function askReset(email: string, returnTo?: string): Promise<{ answer: string; form: string; link: () => Promise<string> }> {
    const browser = new HttpSession(t.issuer, { email: '', password: '' });
    const query = returnTo ? `?return=${encodeURIComponent(returnTo)}` : '';
    const form = (await browser.visit(`${origin}/account/password/forgot${query}`)).html;
    const csrf = /name="csrf_token" value="([^"]*)"/.exec(form)![1]!;
    const hidden = /name="return" value="([^"]*)"/.exec(form)?.[1];
    const body = new URLSearchParams({ csrf_token: csrf, email, ...(hidden ? { return: hidden } : {}) });
    const answer = (await browser.visit(`${origin}/account/password/forgot`, body)).html;
    return { answer, form, link: async () => (await sink.waitFor(email.toLowerCase()))[0]!.links[0]! };
  }

  async function resetWith(link: string, password: string): Promise<{ first: string; answer: string }> {
    const browser = new HttpSession(t.issuer, { email: '', password: '' });
    const first = (await browser.visit(link)).html;
    const csrf = /name="csrf_token" value="([^"]*)"/.exec(first)![1]!;
    const token = new URL(link).searchParams.get('token')!;
    const answer = (await browser.visit(`${origin}/account/password/reset`, new URLSearchParams({ csrf_token: csrf, token, password }))).html;
    return { first, answer };
  }

  it('reset form: the new password has the focus on the first visit, and after a refused one the message is tied to it', async () => {
    const user = await createUser(t);
    const { link } = await askReset(user.email);
    const { first, answer } = await resetWith(await link(), 'short');
    expect(attr(first, 'new-password', 'autofocus')).toBe('');
    expect(attr(first, 'new-password', 'aria-invalid')).toBeUndefined();
    expect(attr(answer, 'new-password', 'autofocus')).toBe('');
    expect(attr(answer, 'new-password', 'aria-describedby')).toBe('new-password-hint form-error');
    expect(attr(answer, 'new-password', 'aria-invalid')).toBe('true');
  });

  it('forgotten password: "Back to sign in" survives the POST (refused address, "Check your e-mail") and the mailed link ("Password changed")', async () => {
    const user = await createUser(t);
    const hasBack = (page: string) => page.includes(`<a href="${back}">Back to sign in</a>`);

    const refused = await askReset('not-an-address', back);
    expect(hasBack(refused.form)).toBe(true);
    expect(refused.answer).toContain('id="form-error"');
    expect(hasBack(refused.answer)).toBe(true);

    const sent = await askReset(user.email, back);
    expect(sent.answer).toContain('Check your e-mail');
    expect(hasBack(sent.answer)).toBe(true);
    const { answer: done } = await resetWith(await sent.link(), 'A-new-Horse-Battery-77');
    expect(done).toContain('Password changed');
    expect(hasBack(done)).toBe(true);
  });

  it('hostile: a return target that is not this tenant\'s interaction page is dropped on the POST (no open redirect)', async () => {
    for (const hostile of ['https://evil.example/oidc/v1/interaction/abc', '//evil.example/x', '/oidc/v1/interaction/abc/../../admin', 'javascript:alert(1)']) {
      const browser = new HttpSession(t.issuer, { email: '', password: '' });
      const form = (await browser.visit(`${origin}/account/password/forgot`)).html;
      const csrf = /name="csrf_token" value="([^"]*)"/.exec(form)![1]!;
      for (const email of ['not-an-address', `x-${Date.now()}@example.com`]) {
        const answer = (await browser.visit(`${origin}/account/password/forgot`, new URLSearchParams({ csrf_token: csrf, email, return: hostile }))).html;
        expect(answer).not.toContain('Back to sign in');
        expect(answer).not.toContain('evil.example');
        expect(answer).not.toContain('name="return"');
      }
    }
  });

  it('an invalid or used confirmation link offers a way to sign in (the account page)', async () => {
    const res = await fetch(`${origin}/account/verify?token=${'a'.repeat(43)}`);
    expect(res.status).toBe(400);
    const page = await res.text();
    expect(page).toContain('<a href="/account">Sign in to your account</a>');
  });
});
