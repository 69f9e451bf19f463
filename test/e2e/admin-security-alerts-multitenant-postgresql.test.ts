/**
 * An administrator's password set and MFA reset alert the user in multi-tenant mode (PostgreSQL +
 * Redis): in the tenant's default language, under its brand, with the account link of its own
 * origin. Naming the user at another tenant is 404 and mails nobody.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enableTotp } from '../../src/users/mfa.js';
import { generateTotpSecret } from '../../src/users/totp.js';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, dropRedisKeys, startTestApp, type TestApp } from '../helpers/app.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { send } from '../helpers/tenant-http.js';

const run = randomBytes(3).toString('hex');

describe('admin-change alerts, multi-tenant on PostgreSQL + Redis', () => {
  let t: TestApp;
  let port: number;
  let sink: SmtpSink;
  let token: string;
  let prefix: string;
  const acme = `acme-${run}`;
  const globex = `globex-${run}`;
  const user = { id: '', email: `ada-${run}@example.com` };

  const basic = `Basic ${Buffer.from(`${BOOTSTRAP_ID}:${BOOTSTRAP_SECRET}`).toString('base64')}`;

  beforeAll(async () => {
    sink = await startSmtpSink();
    prefix = uniquePrefix('adminalerts');
    t = await startTestApp({ MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', REDIS_URL: SHARED_REDIS_URL, REDIS_KEY_PREFIX: prefix, ...sink.env() });
    port = t.app.port;
    const res = await send(port, 'POST', '/oidc/v1/token', {
      tenant: '_platforms',
      headers: { authorization: basic },
      form: { grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope: 'svc:tenants:write svc:cross-tenant:write svc:users:write' },
    });
    token = res.json.access_token as string;
    for (const slug of [acme, globex]) expect((await send(port, 'POST', '/api/v1/tenants', { token, body: { slug, display_name: slug } })).status).toBe(201);
    const put = async (section: string, body: unknown) => expect((await send(port, 'PUT', `/api/v1/tenants/${acme}/config/${section}`, { token, body })).status).toBe(200);
    await put('branding', { company_name: 'Acme Corp' });
    await put('application', { available_locales: ['fr', 'en'], default_locale: 'fr' });
    const created = await send(port, 'POST', '/api/v1/users', { tenant: acme, token, body: { email: user.email, password: 'Correct-Horse-Battery-9', email_verified: true } });
    expect(created.status, created.text).toBe(201);
    user.id = created.json.data.id as string;
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
    if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
  });

  const mailsTo = () => sink.messages.filter((m) => m.to.includes(user.email));

  it("another tenant's admin call naming the user is 404 and mails nobody", async () => {
    const password = await send(port, 'POST', `/api/v1/users/${user.id}/password-reset`, { tenant: globex, token, body: { new_password: 'Globex-set-pass-1' } });
    const mfa = await send(port, 'POST', `/api/v1/users/${user.id}/mfa/reset`, { tenant: globex, token });
    expect([password.status, mfa.status]).toEqual([404, 404]);
    await t.app.ctx.mailer.drain();
    expect(sink.messages).toEqual([]);
  });

  it("the user's tenant: the alerts in its default language, under its brand, linking to its own account page", async () => {
    const password = await send(port, 'POST', `/api/v1/users/${user.id}/password-reset`, { tenant: acme, token, body: { new_password: 'Acme-set-pass-1' } });
    expect([password.status, password.json]).toEqual([200, { data: { message: 'The password has been reset' } }]);
    const [mail] = await sink.waitFor(user.email);
    expect(mail!.subject).toBe('Votre mot de passe a été modifié - Acme Corp');
    expect(mail!.html).toContain('<html lang="fr">');
    expect(mail!.text).toContain('Cette modification a été faite par un administrateur du service.');
    expect(mail!.links).toEqual([`http://${acme}.localhost:${port}/account`]);

    await enableTotp(t.app.ctx, acme, user.id, generateTotpSecret());
    const mfa = await send(port, 'POST', `/api/v1/users/${user.id}/mfa/reset`, { tenant: acme, token });
    expect([mfa.status, mfa.json]).toEqual([200, { data: { message: 'MFA has been reset' } }]);
    const mails = await sink.waitFor(user.email, 2);
    expect(mails[1]!.subject).toBe('Vos réglages de validation en deux étapes ont changé - Acme Corp');
    expect(mails[1]!.links).toEqual([`http://${acme}.localhost:${port}/account`]);
    await t.app.ctx.mailer.drain();
    expect(mailsTo()).toHaveLength(2);
  });
});
