/**
 * Mail delivery through a real SMTP server on loopback: a transient refusal (451) is retried and
 * the message arrives; a permanent one (550) is not retried, and the failure is audited
 * (`email_failed`, with the server's answer and never the content) instead of being lost.
 * Messages are multipart (text + HTML) with exactly one action link.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { createUser } from '../helpers/users.js';

describe('mail delivery', () => {
  let t: TestApp;
  let sink: SmtpSink;

  beforeAll(async () => {
    sink = await startSmtpSink({ username: 'mailer', password: 'smtp-secret-1' });
    t = await startTestApp(sink.env());
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  /** A reset request through the form (CSRF cookie and token as a browser would send them). */
  async function requestReset(email: string): Promise<number> {
    const form = await fetch(`${t.url}/account/password/forgot`);
    const cookie = form.headers.get('set-cookie')!.split(';')[0]!;
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(await form.text())![1]!;
    const res = await fetch(`${t.url}/account/password/forgot`, { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ csrf_token: csrf, email }).toString() });
    return res.status;
  }

  it('authenticates, sends multipart text + HTML with one link, and retries a transient refusal', async () => {
    const user = await createUser(t, { email_verified: true });
    sink.reject(451, 1);
    expect(await requestReset(user.email)).toBe(200);
    const [mail] = await sink.waitFor(user.email, 1, 15000);
    expect(mail!.parsed.text).toBeTruthy();
    expect(mail!.parsed.html).toBeTruthy();
    expect(mail!.raw).toMatch(/multipart\/alternative/);
    expect(mail!.links).toHaveLength(1);
    expect([...mail!.text.matchAll(/https?:\/\//g)]).toHaveLength(1);
  });

  it('audits a permanent failure with the server’s answer and no retries', async () => {
    const user = await createUser(t, { email_verified: true });
    sink.reject(550, 5);
    expect(await requestReset(user.email)).toBe(200);
    await t.app.ctx.mailer.drain();
    sink.reject(550, 0);
    expect(sink.messages.filter((m) => m.to.includes(user.email.toLowerCase()))).toHaveLength(0);
    const audit = await api(t, 'GET', '/api/v1/audit?type=email_failed', { token: await t.token('svc:audit:read') });
    expect(audit.json.data).toEqual([expect.objectContaining({ status: 'failed', user_id: user.id, details: expect.objectContaining({ kind: 'password_reset', attempts: 1 }) })]);
    expect(audit.json.data[0].details.reason).toMatch(/^SMTP 550/);
    expect(JSON.stringify(audit.json.data)).not.toContain('token=');
  });
});
