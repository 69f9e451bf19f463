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

  it('sends at most three mails an hour to one account, whatever the spelling of its address', async () => {
    const user = await createUser(t, { email: `erin-${Date.now()}@example.com`, email_verified: true });
    const spellings = [user.email, user.email.replace('erin', 'ERIN'), user.email.replace('erin', 'er\u0130n')];
    for (const email of spellings) for (let i = 0; i < 3; i++) expect(await requestReset(email)).toBe(200);
    await t.app.ctx.mailer.drain();
    const resets = sink.messages.filter((m) => m.to.includes(user.email.toLowerCase()));
    expect(resets).toHaveLength(3);
  });
});
