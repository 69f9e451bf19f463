/**
 * Security alerts for an administrator's changes (both backends, single tenant): a password set
 * (POST /api/v1/users/:id/password-reset) and an MFA reset that removed something
 * (POST /api/v1/users/:id/mfa/reset) mail the user, read from a real SMTP sink, under the same
 * rules as the user's own changes (their choice on the account page, the tenant's default), saying
 * an administrator made the change. An MFA reset of a user without MFA sends nothing. The API
 * answer is the same as before and does not wait for the SMTP server: the sink sits behind a proxy
 * that can hold its replies, and the answer comes while they are held.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enableTotp } from '../../src/users/mfa.js';
import { generateTotpSecret } from '../../src/users/totp.js';
import { AccountHttp } from '../helpers/account-http.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { createUser, type TestUser } from '../helpers/users.js';

/** A TCP proxy to the sink whose replies to the service can be held back (a stalled SMTP server). */
interface StallingProxy {
  port: number;
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

async function stallingProxy(target: number): Promise<StallingProxy> {
  let held: Array<() => void> | undefined;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      const write = () => void client.write(chunk);
      if (held) held.push(write);
      else write();
    });
    upstream.on('end', () => (held ? held.push(() => client.end()) : client.end()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    hold: () => {
      held ??= [];
    },
    release: () => {
      const queued = held ?? [];
      held = undefined;
      for (const write of queued) write();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('security alerts for changes an administrator makes', () => {
  let sink: SmtpSink;
  let proxy: StallingProxy;
  let t: TestApp;
  let origin: string;
  let admin: string;

  beforeAll(async () => {
    sink = await startSmtpSink();
    proxy = await stallingProxy(sink.port);
    t = await startTestApp({ ...sink.env(), INTEGRATIONS_SMTP_PORT: String(proxy.port), SECURITY_RATE_LIMIT_SENSITIVE: '1000', SECURITY_RATE_LIMIT_WRITE: '1000' });
    origin = new URL(t.issuer).origin;
    admin = await t.token('svc:users:read svc:users:write svc:config:write svc:audit:read');
  });
  afterAll(async () => {
    proxy?.release();
    await t?.close();
    await proxy?.close();
    await sink?.close();
  });

  const resetPassword = (id: string, newPassword = 'Admin-set-pass-789') => api(t, 'POST', `/api/v1/users/${id}/password-reset`, { token: admin, body: { new_password: newPassword } });
  const resetMfa = (id: string) => api(t, 'POST', `/api/v1/users/${id}/mfa/reset`, { token: admin });
  const mailsTo = (user: TestUser) => sink.messages.filter((m) => m.to.includes(user.email.toLowerCase()));
  const withTotp = async (user: TestUser) => {
    await enableTotp(t.app.ctx, 'default', user.id, generateTotpSecret());
    expect((await api(t, 'GET', `/api/v1/users/${user.id}`, { token: admin })).json.data.mfa).toEqual({ enabled: true, methods: ['totp'] });
  };

  it('a password set by an administrator mails the user a password-changed alert that says so, with the account link', async () => {
    const user = await createUser(t, { email_verified: true });
    const res = await resetPassword(user.id);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ data: { message: 'The password has been reset' } });
    const [mail, ...more] = await sink.waitFor(user.email);
    expect(more).toEqual([]);
    expect(mail!.to).toEqual([user.email.toLowerCase()]);
    expect(mail!.subject).toBe('Your password was changed');
    expect(mail!.links).toEqual([`${origin}/account`]);
    expect(mail!.text).toContain('An administrator of the service made this change.');
    expect(mail!.text).toContain("If you did not expect it, contact the service's administrator.");
    expect(mail!.text).not.toContain('If this was not you');
    expect(mail!.raw).not.toContain('Admin-set-pass-789');
  });

  it('an MFA reset of a user with TOTP mails an MFA-changed alert', async () => {
    const user = await createUser(t, { email_verified: true });
    await withTotp(user);
    const res = await resetMfa(user.id);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ data: { message: 'MFA has been reset' } });
    const [mail] = await sink.waitFor(user.email);
    expect(mail!.subject).toBe('Your two-step verification settings changed');
    expect(mail!.links).toEqual([`${origin}/account`]);
    expect(mail!.text).toContain('An administrator of the service made this change.');
    await t.app.ctx.mailer.drain();
    expect(mailsTo(user)).toHaveLength(1);
  });

  it('an MFA reset that removes a passkey (no TOTP) mails the alert too', async () => {
    const user = await createUser(t, { email_verified: true });
    await t.app.ctx.storage.webauthn.createCredential('default', {
      id: `cred-${user.id}`, user_id: user.id, public_key: 'cHVibGljLWtleQ', counter: 0, transports: ['internal'],
      device_type: 'multiDevice', backed_up: true, aaguid: '00000000-0000-0000-0000-000000000000', name: 'Laptop', created_at: new Date().toISOString(), last_used_at: null,
    });
    expect((await resetMfa(user.id)).status).toBe(200);
    const [mail] = await sink.waitFor(user.email);
    expect(mail!.subject).toBe('Your two-step verification settings changed');
    expect(await t.app.ctx.storage.webauthn.listCredentials('default', user.id)).toEqual([]);
  });

  it('an MFA reset of a user without MFA answers as before and sends nothing', async () => {
    const user = await createUser(t, { email_verified: true });
    const res = await resetMfa(user.id);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ data: { message: 'MFA has been reset' } });
    await t.app.ctx.mailer.drain();
    expect(mailsTo(user)).toEqual([]);
  });

  it("the user's own choice on the account page holds: password alert off, no mail; the MFA alert still comes", async () => {
    const user = await createUser(t, { email_verified: true });
    const page = await AccountHttp.signIn(t.issuer, user);
    const saved = await page.act('alerts.save', { new_device_login: 'on', mfa_changed: 'on', account_locked: 'on' });
    expect(saved.status).toBe(200);
    expect((await t.app.ctx.storage.userPreferences.get('default', user.id))?.alerts).toMatchObject({ password_changed: false, mfa_changed: true });

    expect((await resetPassword(user.id)).status).toBe(200);
    await t.app.ctx.mailer.drain();
    expect(mailsTo(user)).toEqual([]);

    await withTotp(user);
    expect((await resetMfa(user.id)).status).toBe(200);
    const [mail] = await sink.waitFor(user.email);
    expect(mail!.subject).toBe('Your two-step verification settings changed');
  });

  it("the tenant's default off: no mail; back on: the mail comes", async () => {
    const user = await createUser(t, { email_verified: true });
    const off = await api(t, 'PUT', '/api/v1/config/notifications', { token: admin, body: { security_alerts: { password_changed: false } } });
    expect(off.status, off.text).toBe(200);
    try {
      expect((await resetPassword(user.id)).status).toBe(200);
      await t.app.ctx.mailer.drain();
      expect(mailsTo(user)).toEqual([]);
    } finally {
      const on = await api(t, 'PUT', '/api/v1/config/notifications', { token: admin, body: {} });
      expect(on.status, on.text).toBe(200);
    }
    expect((await resetPassword(user.id, 'Admin-set-pass-790')).status).toBe(200);
    const [mail] = await sink.waitFor(user.email);
    expect(mail!.subject).toBe('Your password was changed');
  });

  it('the answer does not wait for a stalled SMTP server; the alert follows once it answers', async () => {
    const user = await createUser(t, { email_verified: true });
    await withTotp(user);
    proxy.hold();
    try {
      const timeout = new Promise<'timed out'>((resolve) => setTimeout(() => resolve('timed out'), 5000).unref());
      const [password, mfa] = await Promise.race([Promise.all([resetPassword(user.id), resetMfa(user.id)]), timeout.then((x) => [x, x] as const)]);
      expect(password).not.toBe('timed out');
      expect(mfa).not.toBe('timed out');
      if (typeof password === 'string' || typeof mfa === 'string') return;
      expect([password.status, password.json]).toEqual([200, { data: { message: 'The password has been reset' } }]);
      expect([mfa.status, mfa.json]).toEqual([200, { data: { message: 'MFA has been reset' } }]);
      expect(mailsTo(user)).toEqual([]);
    } finally {
      proxy.release();
    }
    const mails = await sink.waitFor(user.email, 2);
    expect(mails.map((m) => m.subject).sort()).toEqual(['Your password was changed', 'Your two-step verification settings changed']);
  });

  it('a refused delivery changes nothing in the answer; it is audited as a failed mail', async () => {
    const user = await createUser(t, { email_verified: true });
    sink.reject(550, 1);
    const res = await resetPassword(user.id);
    expect([res.status, res.json]).toEqual([200, { data: { message: 'The password has been reset' } }]);
    await t.app.ctx.mailer.drain();
    expect(mailsTo(user)).toEqual([]);
    const audit = await api(t, 'GET', `/api/v1/users/${user.id}/activities`, { token: admin });
    const failed = (audit.json.data as Array<{ type: string; details: Record<string, unknown> }>).filter((e) => e.type === 'email_failed');
    expect(failed.map((e) => e.details.kind)).toEqual(['security_alert']);
    expect(JSON.stringify(audit.json)).not.toContain('Admin-set-pass-789');
  });

  it('an unknown user id is 404 on both calls and nobody is mailed', async () => {
    const before = sink.messages.length;
    for (const res of [await resetPassword('no-such-user'), await resetMfa('no-such-user')]) {
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    await t.app.ctx.mailer.drain();
    expect(sink.messages.length).toBe(before);
  });
});
