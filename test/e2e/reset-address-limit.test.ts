/**
 * The per-address limit of reset requests (3 an hour) counts per account (third audit of
 * 2026-11-30): it was keyed on the typed address lower-cased by JavaScript, while the storage finds
 * the account case-insensitively by its own rules, so `erİn@` (U+0130) and `erin@` each got three
 * mails to the same mailbox on PostgreSQL. Over plain HTTP, both backends; the mails in a real SMTP
 * sink on loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { createUser } from '../helpers/users.js';

describe('reset requests per address', () => {
  let t: TestApp;
  let sink: SmtpSink;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await startTestApp({ ...sink.env() });
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  /** The forgot-password form posted as a browser would (its CSRF cookie and field). */
  async function requestReset(email: string): Promise<number> {
    const page = await fetch(`${t.url}/account/password/forgot`, { headers: { accept: 'text/html' } });
    const html = await page.text();
    const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];
    if (!csrf) throw new Error(`no csrf field on the forgot page (HTTP ${page.status})`);
    const res = await fetch(`${t.url}/account/password/forgot`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
      body: new URLSearchParams({ csrf_token: csrf, email }),
    });
    await res.arrayBuffer();
    return res.status;
  }

  const requested = async (userId?: string) => (await t.app.ctx.storage.audit.list('default', { type: 'password_reset_requested', ...(userId ? { user_id: userId } : {}) }, { limit: 100, include_count: false })).items;

  it('sends at most three mails an hour to one account, whatever the spelling of its address', async () => {
    const user = await createUser(t, { email: `erin-${Date.now()}@example.com`, email_verified: true });
    const spellings = [user.email, user.email.replace('erin', 'ERIN'), user.email.replace('erin', 'er\u0130n')];
    for (const email of spellings) for (let i = 0; i < 3; i++) expect(await requestReset(email)).toBe(200);
    // The limits and mail are worked out after each answer: wait until all nine are audited.
    const suffix = user.email.slice('erin'.length);
    await expect.poll(async () => (await requested()).filter((e) => e.username?.endsWith(suffix)).length).toBe(9);
    await t.app.ctx.mailer.drain();
    const resets = sink.messages.filter((m) => m.to.includes(user.email.toLowerCase()));
    expect(resets).toHaveLength(3);
  });

  it('the answer waits for neither the lookup nor the token, so it takes the same time for an account and for nobody (fourth audit)', async () => {
    const user = await createUser(t, { email: `timing-${Date.now()}@example.com`, email_verified: true });
    const nobody = `nobody-${Date.now()}@example.com`;
    // Slow storage for both addresses: an answer that waited for the lookup, or for the token only
    // an account gets, would take the delay.
    const users = t.app.ctx.storage.users;
    const tokens = t.app.ctx.storage.accountTokens;
    const findByEmail = users.findByEmail.bind(users);
    const create = tokens.create.bind(tokens);
    const pause = () => new Promise((r) => setTimeout(r, 1500));
    users.findByEmail = async (tenant, email) => {
      await pause();
      return findByEmail(tenant, email);
    };
    tokens.create = async (tenant, record) => {
      await pause();
      return create(tenant, record);
    };
    try {
      for (const email of [user.email, nobody]) {
        const started = performance.now();
        expect(await requestReset(email)).toBe(200);
        expect(performance.now() - started).toBeLessThan(1000);
      }
      // The work still happens, after the answer: the account's owner gets the link.
      const [mail] = await sink.waitFor(user.email.toLowerCase());
      expect(mail!.subject).toBe('Reset your password');
      await expect.poll(async () => (await requested(user.id)).map((e) => e.details.mail_sent)).toEqual([true]);
    } finally {
      users.findByEmail = findByEmail;
      tokens.create = create;
    }
  });
});
