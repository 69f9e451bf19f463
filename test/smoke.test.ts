import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from './helpers/app.js';

describe('service smoke', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it('serves discovery with the configured issuer', async () => {
    const res = await api(t, 'GET', '/oidc/v1/.well-known/openid-configuration');
    expect(res.status).toBe(200);
    expect(res.json.issuer).toBe(t.issuer);
  });

  it('issues a management token to the bootstrap client and lists clients', async () => {
    const token = await t.token('svc:clients:read');
    const res = await api(t, 'GET', '/api/v1/clients', { token });
    expect(res.status).toBe(200);
    expect(res.json.data.map((c: { client_id: string }) => c.client_id)).toContain('bootstrap-admin');
  });
});
