/**
 * Sign-up over plain HTTP on the default backend (fourth audit of 2026-12-01; the browser walk,
 * signup.test.ts, runs on PostgreSQL only): an address the Management API refuses is refused here
 * too, so SQLite's ASCII-only case folding cannot let two spellings of one non-ASCII address in;
 * the name typed at sign-up stays out of mails to the address nobody has confirmed yet.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { HttpSession } from '../helpers/code-flow.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';

describe('sign-up over HTTP', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let origin: string;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await startTestApp({ ...sink.env(), SECURITY_SIGNUP_ENABLED: 'true', SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000' });
    origin = new URL(t.issuer).origin;
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  /** Opens the sign-up form from the account page's sign-in and posts it; the answer's HTML. */
  async function signUp(fields: { email: string; password: string; name?: string }): Promise<{ status: number; html: string }> {
    const browser = new HttpSession(t.issuer, { email: '', password: '' });
    const signIn = await browser.visit(`${origin}/account`);
    const link = /href="([^"]*\/interaction\/[^"]*\/signup)"/.exec(signIn.html)![1]!;
    const form = await browser.visit(new URL(link, origin).href);
    const csrf = /name="csrf_token" value="([^"]*)"/.exec(form.html)![1]!;
    const answer = await browser.visit(new URL(link, origin).href, new URLSearchParams({ csrf_token: csrf, name: fields.name ?? '', email: fields.email, password: fields.password }));
    return { status: answer.status, html: answer.html };
  }

  it('hostile: an address the Management API refuses is refused, in every spelling; no account', async () => {
    for (const email of ['zoë@example.com', 'ZOË@example.com']) {
      const answer = await signUp({ email, password: 'Zoe-signup-pass-1' });
      expect(answer.status).toBe(400);
      expect(answer.html).toContain('Enter a valid e-mail address.');
    }
    expect(await t.sql("SELECT id FROM users WHERE email LIKE 'zo%@example.com'")).toEqual([]);
    // An ASCII address still signs up.
    expect((await signUp({ email: `zoe-${Date.now()}@example.com`, password: 'Zoe-signup-pass-1' })).html).not.toContain('Enter a valid e-mail address.');
  });

  it('hostile: the name typed at sign-up is not put into mails to the unconfirmed address (verification, "already exists")', async () => {
    const email = `spam-${Date.now()}@example.com`;
    const name = 'Visit http://evil.example now';
    await signUp({ email, password: 'Spam-signup-pass-1', name });
    const [verification] = await sink.waitFor(email);
    expect(verification!.subject).toBe('Confirm your e-mail address');
    // A second sign-up with the same address mails its (unconfirmed) account's "already exists".
    await signUp({ email, password: 'Spam-signup-pass-2', name });
    const [, existing] = await sink.waitFor(email, 2);
    for (const mail of [verification!, existing!]) {
      expect(mail.text).toContain('Hello,');
      expect(mail.text).not.toContain('evil.example');
      expect(mail.html).not.toContain('evil.example');
    }
    // The name was kept on the account: it is the mail that leaves it out.
    const [row] = await t.sql('SELECT name FROM users WHERE email = ?', [email]);
    expect(row!.name).toBe(name);
  });
});
