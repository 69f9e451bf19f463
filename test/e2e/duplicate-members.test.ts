/**
 * A JSON body that gives a member name twice is refused and changes nothing (fifth session of
 * 2026-12-01): JSON.parse kept the last one, so `{"client_name":"a","client_name":"b"}` created
 * "b", and `{"rate_limit":{"read":600,"read":1}}` stored 1. Management API: 400 problem+json
 * naming the member; dynamic registration: 400 invalid_client_metadata (src/http/json.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { expectProblem } from '../helpers/problem.js';

describe('repeated member names in JSON bodies', () => {
  let t: TestApp;
  let admin: string;
  beforeAll(async () => {
    t = await startTestApp();
    admin = await t.token(['svc:clients:read', 'svc:clients:write', 'svc:config:read', 'svc:config:write', 'svc:registration-tokens:read', 'svc:registration-tokens:write']);
  });
  afterAll(async () => t?.close());

  const clientCount = async (): Promise<number> => (await api(t, 'GET', '/api/v1/clients?include_count=true&limit=1', { token: admin })).json.pagination.total_count;

  it('POST /api/v1/clients: 400 naming the member, whether the repeat is spelt alike or escaped; nothing created', async () => {
    const before = await clientCount();
    const rest = '"redirect_uris":["https://rp.example.com/cb"]';
    for (const body of [`{"client_name":"a","client_name":"b",${rest}}`, `{"client_name":"a",${rest},"client_n\\u0061me":"b"}`]) {
      const res = await api(t, 'POST', '/api/v1/clients', { token: admin, body });
      const problem = expectProblem(res, 400, 'bad-request', '/api/v1/clients');
      expect(problem.errors).toEqual([{ field: 'client_name', message: 'must be given once' }]);
    }
    // At depth too: a repeated name inside jwks.
    const nested = await api(t, 'POST', '/api/v1/clients', { token: admin, body: `{"client_name":"n",${rest},"jwks":{"keys":[{"kty":"EC","kty":"RSA"}]}}` });
    expect(expectProblem(nested, 400, 'bad-request', '/api/v1/clients').errors).toEqual([{ field: 'jwks.keys.0.kty', message: 'must be given once' }]);
    expect(await clientCount()).toBe(before);
    // The same body without the repeat is fine.
    expect((await api(t, 'POST', '/api/v1/clients', { token: admin, body: `{"client_name":"b",${rest}}` })).status).toBe(201);
  });

  it('PUT /api/v1/config/security: 400, and the stored section is unchanged', async () => {
    const path = '/api/v1/config/security';
    expect((await api(t, 'PUT', path, { token: admin, body: { rate_limit: { read: 600 } } })).status).toBe(200);
    const res = await api(t, 'PUT', path, { token: admin, body: '{"rate_limit":{"read":600,"read":1}}' });
    expect(expectProblem(res, 400, 'bad-request', path).errors).toEqual([{ field: 'rate_limit.read', message: 'must be given once' }]);
    const read = await api(t, 'GET', '/api/v1/config', { token: admin });
    expect(read.status).toBe(200);
    expect(read.json.data.security.rate_limit.read).toBe(600);
  });

  it('POST {oidc}/register-rp: 400 invalid_client_metadata; no client, no use of the token', async () => {
    const created = await api(t, 'POST', '/api/v1/registration-tokens', { token: admin, body: { expires_in: 3600, max_usage_count: 1 } });
    expect(created.status).toBe(201);
    const before = await clientCount();
    const res = await fetch(`${t.url}/oidc/v1/register-rp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${created.json.data.token}`, 'content-type': 'application/json' },
      body: '{"client_name":"a","redirect_uris":["https://rp.example.com/cb"],"client_name":"b"}',
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as Record<string, string>;
    expect(body.error).toBe('invalid_client_metadata');
    expect(body.error_description).toContain('client_name');
    // A name that is not printable ASCII is not echoed as it is in error_description (RFC 6749 5.2).
    const odd = await fetch(`${t.url}/oidc/v1/register-rp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${created.json.data.token}`, 'content-type': 'application/json' },
      body: '{"redirect_uris":["https://rp.example.com/cb"],"n\\"é":1,"n\\u0022\\u00e9":2}',
    });
    expect(odd.status).toBe(400);
    const oddBody = (await odd.json()) as Record<string, string>;
    expect(oddBody.error_description).toMatch(/^[\x20\x21\x23-\x5B\x5D-\x7E]*$/);
    expect(await clientCount()).toBe(before);
    const token = await api(t, 'GET', `/api/v1/registration-tokens/${created.json.data.jti}`, { token: admin });
    expect(token.json.data.current_usage_count).toBe(0);
  });
});
