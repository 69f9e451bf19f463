/**
 * Sign-up over plain HTTP on the default backend (fourth audit of 2026-12-01; the browser walk,
 * signup.test.ts, runs on PostgreSQL only): an address the Management API refuses is refused here
 * too, so SQLite's ASCII-only case folding cannot let two spellings of one non-ASCII address in;
 * the name typed at sign-up stays out of mails to the address nobody has confirmed yet; an account
 * locked by an administrator while its sign-up waits is told so, not sent back to an empty form.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
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

  /** Opens the sign-up form from the account page's sign-in and posts it; the answer's page. */
  async function signUp(fields: { email: string; password: string; name?: string }, browser = new HttpSession(t.issuer, { email: '', password: '' })): Promise<{ url: string; status: number; html: string }> {
    const signIn = await browser.visit(`${origin}/account`);
    const link = /href="([^"]*\/interaction\/[^"]*\/signup)"/.exec(signIn.html)![1]!;
    const form = await browser.visit(new URL(link, origin).href);
    const csrf = /name="csrf_token" value="([^"]*)"/.exec(form.html)![1]!;
    const answer = await browser.visit(new URL(link, origin).href, new URLSearchParams({ csrf_token: csrf, name: fields.name ?? '', email: fields.email, password: fields.password }));
    return answer;
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

  it('an account locked by an administrator while its sign-up waits is told so ("Continue", the page again)', async () => {
    const browser = new HttpSession(t.issuer, { email: '', password: '' });
    const email = `locked-${Date.now()}@example.com`;
    const waiting = await signUp({ email, password: 'Locked-signup-pass-1' }, browser);
    expect(waiting.html).toContain('<h1>Check your e-mail</h1>');
    const [mail] = await sink.waitFor(email);
    const confirm = mail!.links.find((l) => l.includes('/account/verify?token='))!;
    expect((await new HttpSession(t.issuer, { email: '', password: '' }).visit(confirm)).status).toBe(200);
    const [row] = await t.sql('SELECT id FROM users WHERE email = ?', [email]);
    expect((await api(t, 'POST', `/api/v1/users/${row!.id as string}/lock`, { token: await t.token('svc:users:write') })).status).toBe(200);

    const csrf = /name="csrf_token" value="([^"]*)"/.exec(waiting.html)![1]!;
    const after = await browser.visit(`${waiting.url}/continue`, new URLSearchParams({ csrf_token: csrf }));
    expect(after.status).toBe(403);
    expect(after.html).toContain('This account cannot sign in right now. Contact your administrator.');
    const again = await browser.visit(waiting.url);
    expect(again.status).toBe(403);
    expect(again.html).toContain('This account cannot sign in right now. Contact your administrator.');
    // Unlocked, it goes on: the account page (the client that asked for this sign-in) opens.
    expect((await api(t, 'DELETE', `/api/v1/users/${row!.id as string}/lock`, { token: await t.token('svc:users:write') })).status).toBe(200);
    const resumed = await browser.visit(`${waiting.url}/continue`, new URLSearchParams({ csrf_token: csrf }));
    expect(resumed.status).toBe(200);
    expect(new URL(resumed.url).pathname).toBe('/account');
  });
});
