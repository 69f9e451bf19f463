/**
 * Mailed links that outlived the state they were sent for (sixth audit of 2026-12-01), over plain
 * HTTP with the SMTP sink. An administrator's new address, new password, disable or lock, and a
 * confirmed address change on the account page, leave no reset or confirmation link pending:
 * before, a reset link in the old mailbox set a password after the administrator moved the account
 * to a new address, an old confirmation link moved the address back (verified), and links asked for
 * before an administrator's password set, lock or disable still worked afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { AccountHttp } from '../helpers/account-http.js';
import { HttpSession } from '../helpers/code-flow.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { createUser, type TestUser } from '../helpers/users.js';

const TENANT = 'default';

describe('mailed links outlived by an administrator or a confirmed change', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let origin: string;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await startTestApp({ ...sink.env(), SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000' });
    origin = new URL(t.issuer).origin;
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  const newAddress = (what: string) => `${what}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.org`;

  /** A reset asked for on the forgot form; the mailed link. */
  async function resetLink(user: TestUser): Promise<string> {
    const browser = new HttpSession(t.issuer, user);
    const form = await browser.visit(`${origin}/account/password/forgot`);
    const csrf = /name="csrf_token" value="([^"]*)"/.exec(form.html)![1]!;
    await browser.visit(`${origin}/account/password/forgot`, new URLSearchParams({ csrf_token: csrf, email: user.email }));
    const [mail] = await sink.waitFor(user.email.toLowerCase());
    expect(mail!.subject).toBe('Reset your password');
    return mail!.links[0]!;
  }

  /** The reset form of `link` posted with `password`: the answer's status and heading. */
  async function useResetLink(link: string, password: string): Promise<{ status: number; heading: string }> {
    const browser = new HttpSession(t.issuer, { email: '', password: '' });
    // The form's CSRF token: the reset page's, or (a refused link shows none) the request form's.
    const form = await browser.visit(link);
    const csrf = (/name="csrf_token" value="([^"]*)"/.exec(form.html) ?? /name="csrf_token" value="([^"]*)"/.exec((await browser.visit(`${origin}/account/password/forgot`)).html))![1]!;
    const answer = await browser.visit(`${origin}/account/password/reset`, new URLSearchParams({ csrf_token: csrf, token: new URL(link).searchParams.get('token')!, password }));
    return { status: answer.status, heading: /<h1>([^<]*)<\/h1>/.exec(answer.html)![1]! };
  }

  const refused = { status: 400, heading: 'Link no longer valid' };
  const stored = async (id: string) => (await t.app.ctx.storage.users.get(TENANT, id))!;
  const passwordWorks = async (id: string, password: string) => t.app.ctx.passwords.verify((await stored(id)).password_hash!, password);

  async function admin(method: string, path: string, body?: unknown): Promise<void> {
    const token = await t.token('svc:users:write');
    const res = await api(t, method, path, { token, ...(body === undefined ? {} : { body }) });
    expect(res.status).toBe(200);
  }

  it("hostile: a reset link in the old mailbox sets no password once an administrator moved the account to a new address", async () => {
    const user = await createUser(t, { email_verified: true });
    const link = await resetLink(user);
    const moved = newAddress('moved');
    await admin('PATCH', `/api/v1/users/${user.id}`, { email: moved, email_verified: true });
    expect(await useResetLink(link, 'Old-mailbox-takeover-1')).toEqual(refused);
    expect(await passwordWorks(user.id, user.password)).toBe(true);
  });

  it('hostile: a confirmation link to the old address does not move the account back after an administrator changed it', async () => {
    const user = await createUser(t, { email_verified: true });
    const page = await AccountHttp.signIn(t.issuer, user);
    const pending = newAddress('pending');
    expect((await page.act('email.change', { email: pending, current_password: user.password })).status).toBe(200);
    const [mail] = await sink.waitFor(pending);
    const moved = newAddress('moved');
    await admin('PATCH', `/api/v1/users/${user.id}`, { email: moved, email_verified: true });
    expect((await fetch(mail!.links[0]!)).status).toBe(400);
    expect((await stored(user.id)).email).toBe(moved);
  });

  it.each([
    ['a new password set by an administrator', (id: string) => admin('POST', `/api/v1/users/${id}/password-reset`, { new_password: 'Admin-set-password-2' })],
    ['a disable and re-enable', async (id: string) => {
      await admin('PATCH', `/api/v1/users/${id}`, { account_enabled: false });
      await admin('PATCH', `/api/v1/users/${id}`, { account_enabled: true });
    }],
    ['a lock and unlock', async (id: string) => {
      const token = await t.token('svc:users:write');
      expect((await api(t, 'POST', `/api/v1/users/${id}/lock`, { token })).status).toBe(200);
      expect((await api(t, 'DELETE', `/api/v1/users/${id}/lock`, { token })).status).toBe(200);
    }],
  ])('hostile: a reset link asked for before %s no longer sets a password', async (_what, act) => {
    const user = await createUser(t, { email_verified: true });
    const link = await resetLink(user);
    await act(user.id);
    expect(await useResetLink(link, 'Earlier-link-takeover-3')).toEqual(refused);
    expect(await passwordWorks(user.id, 'Earlier-link-takeover-3')).toBe(false);
  });

  it('hostile: once a change is confirmed, another pending confirmation link no longer moves the account', async () => {
    const user = await createUser(t, { email_verified: true });
    const page = await AccountHttp.signIn(t.issuer, user);
    const first = newAddress('first');
    const second = newAddress('second');
    for (const to of [first, second]) expect((await page.act('email.change', { email: to, current_password: user.password })).status).toBe(200);
    const [firstMail] = await sink.waitFor(first);
    const [secondMail] = await sink.waitFor(second);
    expect((await fetch(secondMail!.links[0]!)).status).toBe(200);
    expect((await stored(user.id)).email).toBe(second);
    expect((await fetch(firstMail!.links[0]!)).status).toBe(400);
    expect((await stored(user.id)).email).toBe(second);
  });

  it('an administrator editing other fields leaves a pending reset link working', async () => {
    const user = await createUser(t, { email_verified: true });
    const link = await resetLink(user);
    await admin('PATCH', `/api/v1/users/${user.id}`, { name: 'Renamed by admin', email: user.email.toUpperCase() });
    expect(await useResetLink(link, 'Still-valid-link-4')).toEqual({ status: 200, heading: 'Password changed' });
    expect(await passwordWorks(user.id, 'Still-valid-link-4')).toBe(true);
  });
});
