/**
 * Issue 12 item 13: a 200,000-level nested `jwks` in POST /api/v1/clients answered 500 (RangeError
 * in JSON.stringify). Every JSON input from outside is depth-bounded before parsing (src/http/json.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonDepth, JsonTooDeep, MAX_JSON_DEPTH, parseJson } from '../../src/http/json.js';
import { decodeJwt } from '../../src/keys/jwt.js';
import { parseAssertion } from '../../src/oidc/client-assertion.js';
import { api, BOOTSTRAP_ID, BOOTSTRAP_SECRET, startTestApp, type TestApp } from '../helpers/app.js';
import { expectProblem } from '../helpers/problem.js';

const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const b64 = (s: string) => Buffer.from(s).toString('base64url');

describe('parseJson', () => {
  it('counts depth outside strings only and refuses past the bound', () => {
    expect(jsonDepth('{"a":[1,{"b":"[[[[{{{{\\"]]"}]}')).toBe(3);
    expect(parseJson(nested(MAX_JSON_DEPTH))).toBeInstanceOf(Array);
    expect(() => parseJson(nested(MAX_JSON_DEPTH + 1))).toThrow(JsonTooDeep);
    expect(() => parseJson(`{"keys":${nested(200_000)}}`)).toThrow(JsonTooDeep);
    expect(() => parseJson('{"a":')).toThrow(SyntaxError);
  });

  it('names the top-level member that nests too deep, read in the same pass', () => {
    const member = (text: string) => {
      try {
        parseJson(text);
      } catch (err) {
        return err instanceof JsonTooDeep ? { member: err.member } : 'other';
      }
      return 'parsed';
    };
    expect(member(`{"a":1, "x\\u0041" : {"b":"]]"}, "jwks" :${nested(70)}}`)).toEqual({ member: 'jwks' });
    expect(member(`{"a":"\\"jwks\\":","deep":${nested(70)}}`)).toEqual({ member: 'deep' });
    // A top-level array has no member to name.
    expect(member(`[{"a":${nested(70)}}]`)).toEqual({ member: undefined });
  });

  it('a JWT or client assertion with a deep payload is not a JWT', () => {
    const token = `${b64('{"alg":"RS256"}')}.${b64(`{"sub":${nested(100_000)}}`)}.${b64('sig')}`;
    expect(decodeJwt(token)).toBeUndefined();
    expect(parseAssertion(token)).toBeUndefined();
  });
});

describe('JSON inputs of the service', () => {
  let t: TestApp;
  let admin: string;
  beforeAll(async () => {
    t = await startTestApp();
    admin = await t.token(['svc:clients:write', 'svc:clients:read', 'svc:registration-tokens:write']);
  });
  afterAll(async () => t?.close());

  const deepClient = () => `{"client_name":"deep","application_type":"web","redirect_uris":["https://rp.example/cb"],"token_endpoint_auth_method":"private_key_jwt","jwks":{"keys":${nested(200_000)}}}`;

  it('POST /api/v1/clients with a 200,000-level jwks is 422 naming jwks, and creates nothing', async () => {
    const before = await api(t, 'GET', '/api/v1/clients?include_count=true&limit=1', { token: admin });
    const res = await fetch(`${t.url}/api/v1/clients`, { method: 'POST', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: deepClient() });
    const body = expectProblem({ status: res.status, headers: res.headers, json: await res.json() }, 422, 'validation', '/api/v1/clients');
    expect(body.errors).toEqual([{ field: 'jwks', message: 'is JSON nested deeper than 64 levels' }]);
    const after = await api(t, 'GET', '/api/v1/clients?include_count=true&limit=1', { token: admin });
    expect(after.json.pagination.total_count).toBe(before.json.pagination.total_count);
  });

  it('PATCH of a client with a deep member is 422 naming it', async () => {
    const created = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'x', application_type: 'web', redirect_uris: ['https://rp.example/cb'] } });
    expect(created.status, created.text).toBe(201);
    const path = `/api/v1/clients/${encodeURIComponent(created.json.data.client_id)}`;
    const res = await fetch(`${t.url}${path}`, { method: 'PATCH', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: `{"tags":${nested(200_000)}}` });
    expect(res.status).toBe(422);
    expect((await res.json()).errors[0].field).toBe('tags');
  });

  it('register-rp with a deep body is 400 invalid_client_metadata', async () => {
    const tok = await api(t, 'POST', '/api/v1/registration-tokens', { token: admin, body: { expires_in: 600, max_usage_count: 5 } });
    expect(tok.status, tok.text).toBe(201);
    const res = await fetch(`${t.url}/oidc/v1/register-rp`, { method: 'POST', headers: { authorization: `Bearer ${tok.json.data.token}`, 'content-type': 'application/json' }, body: deepClient() });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_client_metadata' });
  });

  it('introspecting a JWT with a deep payload is not a server error', async () => {
    const token = `${b64('{"alg":"RS256","kid":"x"}')}.${b64(`{"sub":${nested(10_000)}}`)}.${b64('sig')}`;
    const deepHeader = `${b64(`{"alg":${nested(10_000)}}`)}.${b64('{}')}.${b64('sig')}`;
    for (const other of [deepHeader]) {
      const r = await fetch(`${t.url}/oidc/v1/token/introspection`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${BOOTSTRAP_ID}:${BOOTSTRAP_SECRET}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: other }),
      });
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual({ active: false });
    }
    const res = await fetch(`${t.url}/oidc/v1/token/introspection`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${BOOTSTRAP_ID}:${BOOTSTRAP_SECRET}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }),
    });
    // A structured token this service did not issue is inactive (RFC 7662 2.2); never a 500.
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ active: false });
  });
});
