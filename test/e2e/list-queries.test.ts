/**
 * Issue 19 item 4: the audit list's `ip_address` filter (spec 1.6) and `tenant` filter in
 * single-tenant mode, and the rule that an unknown query parameter is a 422 on every Management
 * operation, never silently ignored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { auditEntry } from '../helpers/storage.js';

let t: TestApp;
let token: string;

beforeAll(async () => {
  t = await startTestApp();
  token = await t.token([
    'svc:audit:read', 'svc:clients:read', 'svc:users:read', 'svc:sessions:read', 'svc:jwks:read', 'svc:registration-tokens:read', 'svc:resources:read', 'svc:stats:read',
  ]);
  const audit = t.app.ctx.storage.audit;
  await audit.insert('default', auditEntry('ip-1', { type: 'test.ip', ip_address: '203.0.113.7', timestamp: '2026-02-01T00:00:01.000Z' }));
  await audit.insert('default', auditEntry('ip-2', { type: 'test.ip', ip_address: '2001:db8::1', timestamp: '2026-02-01T00:00:02.000Z' }));
  await audit.insert('default', auditEntry('ip-3', { type: 'test.ip', ip_address: '198.51.100.1', timestamp: '2026-02-01T00:00:03.000Z' }));
});
afterAll(async () => t?.close());

describe('audit ip_address filter', () => {
  it('returns only the entries of that address, IPv4 and IPv6 in any spelling', async () => {
    const v4 = await api(t, 'GET', '/api/v1/audit?type=test.ip&ip_address=203.0.113.7', { token });
    expect(v4.status).toBe(200);
    expect(v4.json.data.map((e: { id: string }) => e.id)).toEqual(['ip-1']);
    // The long form and an IPv4-mapped IPv6 address find the stored canonical forms.
    const v6 = await api(t, 'GET', `/api/v1/audit?type=test.ip&ip_address=${encodeURIComponent('2001:0DB8:0000:0000:0000:0000:0000:0001')}`, { token });
    expect(v6.json.data.map((e: { id: string }) => e.id)).toEqual(['ip-2']);
    const mapped = await api(t, 'GET', `/api/v1/audit?type=test.ip&ip_address=${encodeURIComponent('::ffff:198.51.100.1')}`, { token });
    expect(mapped.json.data.map((e: { id: string }) => e.id)).toEqual(['ip-3']);
    const none = await api(t, 'GET', '/api/v1/audit?ip_address=192.0.2.99', { token });
    expect(none.json.data).toEqual([]);
  });

  it.each(['not-an-ip', "1.2.3.4' OR 1=1 --", '999.1.1.1', ''])('refuses %j with a 422 on ip_address', async (value) => {
    const res = await api(t, 'GET', `/api/v1/audit?ip_address=${encodeURIComponent(value)}`, { token });
    expect(res.status).toBe(422);
    expect(res.json.errors[0].field).toBe('ip_address');
  });

  // The legacy inet_aton spellings are no address (octal, hexadecimal, one number, short forms):
  // `0127.0.0.1` would otherwise be read as octal and search 87.0.0.1.
  it.each(['0177.0.0.1', '0x7f000001', '2130706433', '127.1', '0127.0.0.1', '203.0.113.07', '0313.0.113.7'])('refuses the legacy IPv4 form %j with a 422 problem on ip_address', async (value) => {
    const res = await api(t, 'GET', `/api/v1/audit?ip_address=${encodeURIComponent(value)}`, { token });
    expect(res.status, res.text).toBe(422);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.json).toMatchObject({ type: 'urn:svc:error:validation', errors: [{ field: 'ip_address', message: 'must be an IPv4 or IPv6 address' }] });
  });

  it('single-tenant: tenant=default is the own log; another tenant is 404 whatever the token holds (no scope would reach it)', async () => {
    expect((await api(t, 'GET', '/api/v1/audit?tenant=default&type=test.ip', { token })).json.data).toHaveLength(3);
    const crossTenant = await t.token('svc:audit:read svc:cross-tenant:read');
    for (const bearer of [token, crossTenant]) {
      for (const path of ['/api/v1/audit?tenant=acme', '/api/v1/audit/export?tenant=acme']) {
        const other = await api(t, 'GET', path, { token: bearer });
        expect(other.status, path).toBe(404);
        expect(other.json.type).toBe('urn:svc:error:not-found');
        expect(other.headers.get('www-authenticate')).toBeNull();
      }
    }
  });
});

describe('unknown query parameters', () => {
  it.each([
    '/api/v1/audit', '/api/v1/clients', '/api/v1/users', '/api/v1/sessions', '/api/v1/jwks', '/api/v1/registration-tokens', '/api/v1/resources',
    '/api/v1/audit/types', '/api/v1/stats',
  ])('GET %s?ipaddress=... is a 422 naming the parameter', async (path) => {
    const res = await api(t, 'GET', `${path}?ipaddress=10.0.0.1`, { token });
    expect(res.status).toBe(422);
    expect(res.json.type).toBe('urn:svc:error:validation');
    expect(res.json.errors).toEqual([{ field: 'ipaddress', message: 'Unknown query parameter' }]);
  });

  it.each(['/api/v1/audit?status=bogus&status=failure', '/api/v1/audit?type=login&type=logout', '/api/v1/clients?limit=1&limit=2', '/api/v1/users?q=a&q=b', '/api/v1/audit/export?type=a&type=b'])(
    'GET %s (a parameter given twice) is a 422 naming it, not the last value',
    async (path) => {
      const res = await api(t, 'GET', path, { token });
      expect(res.status).toBe(422);
      expect(res.json.errors).toEqual([{ field: new URLSearchParams(path.split('?')[1]).keys().next().value, message: 'must be given once' }]);
    },
  );

  it('known parameters still work and the scope check still comes first', async () => {
    expect((await api(t, 'GET', '/api/v1/clients?limit=1', { token })).status).toBe(200);
    const weak = await t.token('svc:clients:read');
    expect((await api(t, 'GET', '/api/v1/audit?bogus=1', { token: weak })).status).toBe(403);
  });
});
