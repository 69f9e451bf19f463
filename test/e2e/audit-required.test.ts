/**
 * An administrator's change is never acknowledged unaudited (third audit of 2026-11-30): the writes
 * whose entry is stored after them (keys, resources, registration tokens, tenant configuration,
 * sessions) answered 201/200 when the entry could not be written. Now such a request fails with 503
 * problem+json naming the entry, and says the change itself was stored. Both backends; the entry's
 * write is made to fail for the types under test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';

describe('audit entries of administrators\u2019 changes', () => {
  let t: TestApp;
  let token: string;
  const failing = new Set<string>();

  beforeAll(async () => {
    t = await startTestApp({ SECURITY_RATE_LIMIT_SENSITIVE: '1000' });
    token = await t.token('svc:resources:write svc:resources:read svc:jwks:rotate svc:jwks:read svc:audit:read');
    const audit = t.app.ctx.storage.audit;
    const insert = audit.insert.bind(audit);
    audit.insert = async (tenant, entry) => {
      if (failing.has(entry.type)) throw new Error('injected: the audit write fails');
      return insert(tenant, entry);
    };
  });
  afterAll(async () => t?.close());

  it.each([
    ['resource.created', 'POST', '/api/v1/resources', { identifier: 'https://fault.example.com/', name: 'Fault', scopes: [{ name: 'read:fault' }] }],
    ['jwks.rotated', 'POST', '/api/v1/jwks/rotate', undefined],
  ] as const)('%s: 503 with Retry-After when the entry cannot be written, and an entry whenever it answers success', async (type, method, path, body) => {
    failing.add(type);
    try {
      const refused = await api(t, method, path, { token, ...(body ? { body } : {}) });
      expect(refused.status).toBe(503);
      expect(refused.json.type).toBe('urn:svc:error:unavailable');
      expect(refused.json.detail).toContain(type);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      failing.delete(type);
    }
    const again = await api(t, method, path, { token, ...(body ? { body: { ...body, identifier: 'https://fault2.example.com/' } } : {}) });
    expect(again.status).toBeLessThan(300);
    const entries = await api(t, 'GET', `/api/v1/audit?type=${type}`, { token });
    expect(entries.json.data.length).toBeGreaterThanOrEqual(1);
  });
});
