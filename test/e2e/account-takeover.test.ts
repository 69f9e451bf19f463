/**
 * Taking an account over from a signed-in session (fourth audit of 2026-12-01), over plain HTTP with
 * the SMTP sink: moving the account to another address needs the current password; a pending
 * address change dies with a password change or reset (the owner's way back); a confirmed change is
 * told to the previous address, whatever the alert choices; reset links mailed to the previous
 * address stop working once the address changed; an older sign-in may not set up an authenticator
 * app; a password change ends what the old password opened, offline grants included.
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enableTotp } from '../../src/users/mfa.js';
import { base32Decode, generateTotpSecret, hotp, totpStep } from '../../src/users/totp.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { AccountHttp } from '../helpers/account-http.js';
import { HttpSession, codeFlowClient } from '../helpers/code-flow.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { createUser, type TestUser } from '../helpers/users.js';

const TENANT = 'default';

describe('account takeover from a session', () => {
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
  const status = async (link: string) => (await fetch(link)).status;

  /** The confirmation link mailed to `to` after an e-mail change asked for with `password`. */
  async function changeLink(page: AccountHttp, to: string, password: string): Promise<string> {
    const answer = await page.act('email.change', { email: to, current_password: password });
    expect(answer).toMatchObject({ status: 200, text: expect.stringContaining('We sent a confirmation link to') });
    const [mail] = await sink.waitFor(to);
    return mail!.links[0]!;
  }

  /** A reset asked for on the forgot form (its CSRF cookie and token), the mailed link returned. */
  async function resetLink(user: TestUser, count = 1): Promise<string> {
    const browser = new HttpSession(t.issuer, user);
    const form = await browser.visit(`${origin}/account/password/forgot`);
    const csrf = /name="csrf_token" value="([^"]*)"/.exec(form.html)![1]!;
    await browser.visit(`${origin}/account/password/forgot`, new URLSearchParams({ csrf_token: csrf, email: user.email }));
    const mails = await sink.waitFor(user.email.toLowerCase(), count);
    return mails.filter((m) => m.subject === 'Reset your password').at(-1)!.links[0]!;
  }

  async function completeReset(link: string, password: string): Promise<string> {
    const browser = new HttpSession(t.issuer, { email: '', password: '' });
    // The form's CSRF token: the reset page's, or (a refused link shows none) the request form's.
    const form = await browser.visit(link);
    const csrf = (/name="csrf_token" value="([^"]*)"/.exec(form.html) ?? /name="csrf_token" value="([^"]*)"/.exec((await browser.visit(`${origin}/account/password/forgot`)).html))![1]!;
    const token = new URL(link).searchParams.get('token')!;
    return (await browser.visit(`${origin}/account/password/reset`, new URLSearchParams({ csrf_token: csrf, token, password }))).html;
  }

  it('hostile: an e-mail change without the current password, or with a wrong one, is refused and mails nothing', async () => {
    const user = await createUser(t, { email_verified: true });
    const page = await AccountHttp.signIn(t.issuer, user);
    expect(await page.page()).toMatch(/<label for="email-password">Your password<\/label>/);
    const target = newAddress('thief');
    // An empty field is asked for (no guess: neither audited nor counted), a wrong one refused.
    expect(await page.act('email.change', { email: target })).toMatchObject({ status: 400, text: 'Enter your current password to confirm.' });
    expect(await page.act('email.change', { email: target, current_password: 'not-the-password' })).toMatchObject({ status: 401, text: 'The current password is wrong.' });
    // A wrong password counts as a failed sign-in, as for the other password-confirmed actions.
    const failed = await t.app.ctx.storage.audit.list(TENANT, { type: 'failed_login', user_id: user.id }, { limit: 10, include_count: false });
    expect(failed.items.map((e) => e.details.step)).toEqual(['email_change']);
    await t.app.ctx.mailer.drain();
    expect(sink.messages.filter((m) => m.to.includes(target))).toEqual([]);
    expect(await t.sql("SELECT 1 FROM account_tokens WHERE kind = 'verify_email' AND user_id = ?", [user.id])).toEqual([]);
    // An address the Management API would refuse is refused here too (one rule for every surface).
    expect(await page.act('email.change', { email: 'zoë@example.org', current_password: user.password })).toMatchObject({ text: 'Enter a valid e-mail address.' });
    // With it, the confirmation goes out.
    await changeLink(page, target, user.password);
  });

  it('a password change on the account page voids a pending e-mail change', async () => {
    const user = await createUser(t, { email_verified: true });
    const page = await AccountHttp.signIn(t.issuer, user);
    const link = await changeLink(page, newAddress('pending'), user.password);
    expect(await page.act('password.change', { current_password: user.password, new_password: 'Another-secret-word-77' })).toMatchObject({ status: 200, text: 'Your password has been changed.' });
    expect(await status(link)).toBe(400);
    expect((await t.app.ctx.storage.users.get(TENANT, user.id))!.email).toBe(user.email.toLowerCase());
  });

  it('a password reset voids a pending e-mail change', async () => {
    const user = await createUser(t, { email_verified: true });
    const page = await AccountHttp.signIn(t.issuer, user);
    const link = await changeLink(page, newAddress('pending'), user.password);
    expect(await completeReset(await resetLink(user), 'Reset-secret-word-88')).toContain('Password changed');
    expect(await status(link)).toBe(400);
    expect((await t.app.ctx.storage.users.get(TENANT, user.id))!.email).toBe(user.email.toLowerCase());
  });

  it('a confirmed change is told to the previous address, in the page language, even with alerts turned off; audited as before', async () => {
    const user = await createUser(t, { email_verified: true });
    const page = await AccountHttp.signIn(t.issuer, user);
    // Every alert off first, as someone moving the account would do.
    expect(await page.act('alerts.save')).toMatchObject({ status: 200 });
    const target = newAddress('moved');
    const link = await changeLink(page, target, user.password);
    expect((await fetch(link, { headers: { 'accept-language': 'fr' } })).status).toBe(200);
    const [alert] = await sink.waitFor(user.email.toLowerCase());
    expect(alert!.subject).toBe("L'adresse e-mail de votre compte a été modifiée");
    expect(alert!.text).toContain(target);
    expect(alert!.links).toEqual([`${origin}/account`]);
    const [entry] = (await t.app.ctx.storage.audit.list(TENANT, { type: 'email_verified', user_id: user.id }, { limit: 10, include_count: false })).items;
    expect(entry!.details).toMatchObject({ user_id: user.id, changed_from: user.email.toLowerCase() });
  });

  /** The user's sign-in session made an hour old, as a session stolen earlier would be. */
  async function ageSignIn(userId: string): Promise<void> {
    const [row] = await t.app.ctx.storage.oidc.listSessions(TENANT, { accountId: userId });
    await t.app.ctx.storage.oidc.upsert(TENANT, 'Session', row!.id, { ...row!.payload, loginTs: Math.floor(Date.now() / 1000) - 3600 }, row!.expires_at);
  }

  it('hostile: an older sign-in may not set up an authenticator app (as it may not add a passkey)', async () => {
    const user = await createUser(t, { email_verified: true });
    const page = await AccountHttp.signIn(t.issuer, user);
    // A set-up page opened while the sign-in was recent...
    const setup = await page.act('mfa.setup');
    expect(setup.status).toBe(200);
    const enrollment = /name="enrollment" value="([^"]*)"/.exec(setup.html)![1]!;
    const secret = /id="totp-secret">([^<]*)</.exec(setup.html)![1]!.replace(/\s/g, '');
    await ageSignIn(user.id);
    const refused = 'For your security, this change needs a recent sign-in. Sign out, sign in again and retry.';
    expect(await page.act('mfa.setup')).toMatchObject({ status: 403, text: refused });
    // ...is no licence once it is old: the right code is refused and nothing is enrolled.
    const code = hotp(base32Decode(secret), totpStep(Date.now()));
    expect(await page.act('mfa.confirm', { enrollment, code })).toMatchObject({ status: 403, text: refused });
    expect((await t.app.ctx.storage.users.get(TENANT, user.id))!.mfa_methods).toEqual([]);
  });

  it('regenerates recovery codes within a recent sign-in without the password; an older sign-in needs it (empty: asked for, not counted)', async () => {
    const user = await createUser(t, { email_verified: true });
    const page = await AccountHttp.signIn(t.issuer, user); // signed in first, then the app turned on
    const first = await enableTotp(t.app.ctx, TENANT, user.id, generateTotpSecret());
    const codesOf = (html: string) => [...html.matchAll(/<li><code>([^<]*)<\/code><\/li>/g)].map((m) => m[1]);
    const sealed = async () => (await t.app.ctx.storage.users.get(TENANT, user.id))!.mfa_recovery_sealed;
    const recent = await page.act('mfa.regenerate');
    expect(recent.status).toBe(200);
    const fresh = codesOf(recent.html);
    expect(fresh).toHaveLength(10);
    expect(fresh.some((c) => first.includes(c!))).toBe(false);
    const afterRecent = await sealed();

    await ageSignIn(user.id);
    const failures = async () => (await t.app.ctx.storage.audit.list(TENANT, { type: 'failed_login', user_id: user.id }, { limit: 10, include_count: false })).items.length;
    expect(await page.act('mfa.regenerate')).toMatchObject({ status: 400, text: 'Enter your current password to confirm.' });
    expect(await failures()).toBe(0);
    expect(await page.act('mfa.regenerate', { password: 'not-the-password' })).toMatchObject({ status: 401, text: 'The current password is wrong.' });
    expect(await failures()).toBe(1);
    expect(await sealed()).toBe(afterRecent);
    const proven = await page.act('mfa.regenerate', { password: user.password });
    expect(codesOf(proven.html)).toHaveLength(10);
    expect(await sealed()).not.toBe(afterRecent);
    const audited = await t.app.ctx.storage.audit.list(TENANT, { type: 'mfa_recovery_codes_regenerated', user_id: user.id }, { limit: 10, include_count: false });
    expect(audited.items).toHaveLength(2);
  });

  it('a password change on the account page ends refresh tokens whose session already ended (offline access), as a reset does; this device stays', async () => {
    const user = await createUser(t, { email_verified: true });
    const client = await codeFlowClient(t, await t.token('svc:clients:write'), 'http://127.0.0.1:65531/cb');
    const config = new oidc.Configuration({ issuer: t.issuer, token_endpoint: `${t.issuer}/token` }, client.client_id, client.client_secret);
    oidc.allowInsecureRequests(config);
    // Another device signs in to a relying party with offline access, then signs out there: the
    // session ends, the offline grant and its refresh token live on.
    const device = new HttpSession(t.issuer, user);
    const tokens = await device.tokens(client, { scope: 'openid offline_access', extra: { prompt: 'consent' } });
    const logout = await device.visit(`${t.issuer}/session/end?id_token_hint=${tokens.id_token}&client_id=${client.client_id}`);
    const form = /<form[^>]*id="op.logoutForm"[^>]*>/.exec(logout.html)![0];
    const action = new URL(/action="([^"]+)"/.exec(form)![1]!.replace(/&amp;/g, '&'), t.issuer).href;
    await device.visit(action, new URLSearchParams({ xsrf: /name="xsrf" value="([^"]+)"/.exec(logout.html)![1]!, logout: 'yes' }));
    expect(await t.app.ctx.storage.oidc.listSessions(TENANT, { accountId: user.id })).toEqual([]);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).toBeTruthy();

    const page = await AccountHttp.signIn(t.issuer, user);
    expect(await page.act('password.change', { current_password: user.password, new_password: 'Another-secret-word-77' })).toMatchObject({ status: 200, text: 'Your password has been changed.' });
    await expect(oidc.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    // The device the password was changed on is still signed in.
    expect(await page.page()).toContain('name="csrf_token"');
    expect(await t.app.ctx.storage.oidc.listSessions(TENANT, { accountId: user.id })).toHaveLength(1);
  });

  it('hostile: a reset link mailed to the previous address stops working once the change is confirmed', async () => {
    const user = await createUser(t, { email_verified: true });
    const old = await resetLink(user);
    const page = await AccountHttp.signIn(t.issuer, user);
    expect(await status(await changeLink(page, newAddress('moved'), user.password))).toBe(200);
    expect(await status(old)).toBe(400);
    expect(await completeReset(old, 'Reset-secret-word-88')).toContain('Link no longer valid');
  });
  it('hostile (pre-account takeover): a reset proves an unproven address, and the accounts linked before it are unlinked', async () => {
    // What a social sign-up through an upstream that does not verify e-mails leaves: the victim's
    // address, unverified, with the attacker's upstream account linked.
    const victim = await createUser(t, { email: newAddress('victim'), email_verified: false });
    const now = new Date().toISOString();
    await t.app.ctx.storage.socialIdentities.link(TENANT, { provider: 'corp', subject: 'mallory-1', user_id: victim.id, email: victim.email, linked_at: now, last_used_at: now });

    expect(await completeReset(await resetLink(victim), 'Owner-Again-2026!')).toContain('Password changed');
    expect(await t.app.ctx.storage.socialIdentities.listByUser(TENANT, victim.id)).toEqual([]);
    expect((await t.app.ctx.storage.users.get(TENANT, victim.id))!.email_verified).toBe(true);
    const types = (await t.app.ctx.storage.audit.list(TENANT, { user_id: victim.id }, { limit: 20, include_count: false })).items.map((e) => [e.type, e.details]);
    expect(types).toEqual(expect.arrayContaining([
      ['social_unlink', { user_id: victim.id, provider: 'corp', reason: 'address_proven_by_reset' }],
      ['email_verified', { user_id: victim.id, method: 'password_reset' }],
    ]));

    // A verified address keeps its links: only an unproven one loses them.
    const owner = await createUser(t, { email: newAddress('owner'), email_verified: true });
    await t.app.ctx.storage.socialIdentities.link(TENANT, { provider: 'corp', subject: 'owner-1', user_id: owner.id, email: owner.email, linked_at: now, last_used_at: now });
    expect(await completeReset(await resetLink(owner), 'Owner-Again-2026!')).toContain('Password changed');
    expect(await t.app.ctx.storage.socialIdentities.listByUser(TENANT, owner.id)).toHaveLength(1);
  });
});
