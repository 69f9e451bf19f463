/**
 * The password policy on the Management API: user creation and the admin password reset refuse a
 * password that breaks the configured policy with a 422 naming each unmet rule, and store nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { createUser } from '../helpers/users.js';

describe('password policy on the Management API', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      SECURITY_PASSWORD_POLICY_MIN_LENGTH: '12',
      SECURITY_PASSWORD_POLICY_REQUIRE_DIGIT: 'true',
      SECURITY_PASSWORD_POLICY_REQUIRE_SYMBOL: 'true',
      SECURITY_PASSWORD_POLICY_CHECK_BREACHED: 'true',
    });
  });
  afterAll(async () => t?.close());

  it('refuses a weak password at creation, naming every unmet rule, and creates nothing', async () => {
    const token = await t.token(['svc:users:write', 'svc:users:read']);
    const res = await api(t, 'POST', '/api/v1/users', { token, body: { email: 'weak@example.com', password: 'abcdefgh' } });
    expect(res.status).toBe(422);
    expect(res.json.type).toBe('urn:svc:error:validation');
    const messages = (res.json.errors as Array<{ field: string; message: string }>).filter((e) => e.field === 'password').map((e) => e.message);
    expect(messages).toEqual([
      'must be at least 12 characters (security.password_policy.min_length)',
      'must contain a digit (security.password_policy.require_digit)',
      'must contain a symbol (security.password_policy.require_symbol)',
    ]);
    const list = await api(t, 'GET', '/api/v1/users?q=weak%40example.com', { token });
    expect(list.json.data).toEqual([]);
  });

  it('refuses the e-mail as password and a breached password', async () => {
    const token = await t.token('svc:users:write');
    const own = await api(t, 'POST', '/api/v1/users', { token, body: { email: 'own-1@example.com', password: 'own-1@example.com' } });
    expect(own.status).toBe(422);
    expect(own.json.errors.map((e: { message: string }) => e.message)).toContain('must not be the e-mail address');
    const common = await api(t, 'POST', '/api/v1/users', { token, body: { email: 'common@example.com', password: '1q2w3e4r5t6y' } });
    expect(common.status).toBe(422);
    expect(common.json.errors.map((e: { message: string }) => e.message)).toContain('is too common: it appears in lists of breached passwords (security.password_policy.check_breached)');
  });

  it('the admin reset applies the policy too; a compliant password passes', async () => {
    const user = await createUser(t, { password: 'Long-enough-pass-1' });
    const token = await t.token('svc:users:write');
    const bad = await api(t, 'POST', `/api/v1/users/${user.id}/password-reset`, { token, body: { new_password: 'no-digits-here!' } });
    expect(bad.status).toBe(422);
    expect(bad.json.errors).toEqual([{ field: 'new_password', message: 'must contain a digit (security.password_policy.require_digit)' }]);
    const good = await api(t, 'POST', `/api/v1/users/${user.id}/password-reset`, { token, body: { new_password: 'Another-long-pass-2' } });
    expect(good.status).toBe(200);
  });
});
