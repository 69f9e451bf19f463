/** Every bad input to the clients resource, with its exact documented status and problem body. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { createClient } from '../helpers/oauth.js';
import { expectProblem, expectValidation } from '../helpers/problem.js';
import { head, openRaw } from '../helpers/raw-http.js';

const HIGH = '100000';
const MiB = 1024 * 1024;
const CLIENTS = '/api/v1/clients';

let t: TestApp;
let admin: string;
const count = () => t.app.ctx.storage.clients.count('default');
const auditCount = async () => (await t.app.ctx.storage.audit.list('default', {}, { limit: 1, include_count: true })).total_count!;

beforeAll(async () => {
  t = await startTestApp({ SECURITY_RATE_LIMIT_READ: HIGH, SECURITY_RATE_LIMIT_WRITE: HIGH, SECURITY_RATE_LIMIT_DELETE: HIGH, SECURITY_RATE_LIMIT_SENSITIVE: HIGH });
  admin = await t.token('svc:clients:read svc:clients:write svc:clients:delete');
});
afterAll(async () => t?.close());

const post = (body: unknown, headers: Record<string, string> = {}) => api(t, 'POST', CLIENTS, { token: admin, body, headers });

describe('refused bodies write nothing', () => {
  let clientsBefore: number;
  let auditBefore: number;
  beforeAll(async () => {
    clientsBefore = await count();
    auditBefore = await auditCount();
  });
  afterAll(async () => {
    expect(await count()).toBe(clientsBefore);
    expect(await auditCount()).toBe(auditBefore);
  });

  it('malformed JSON is 400 bad-request', async () => {
    for (const text of ['{"client_name": ', '{client_name: "x"}', '', "{'a':1}", '{"a":1}}']) {
      expectProblem(await post(text), 400, 'bad-request', CLIENTS);
    }
  });

  it('a body not declared application/json is 415', async () => {
    const body = JSON.stringify({ client_name: 'x' });
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx']) {
      const res = await fetch(`${t.url}${CLIENTS}`, { method: 'POST', headers: { authorization: `Bearer ${admin}`, 'content-type': type }, body });
      expectProblem({ status: res.status, headers: res.headers, json: await res.json() }, 415, 'unsupported-media-type', CLIENTS);
    }
    const none = await fetch(`${t.url}${CLIENTS}`, { method: 'POST', headers: { authorization: `Bearer ${admin}` }, body: new Uint8Array(Buffer.from(body)) });
    expectProblem({ status: none.status, headers: none.headers, json: await none.json() }, 415, 'unsupported-media-type', CLIENTS);
  });

  it('a JSON array or scalar body is 422', async () => {
    for (const text of ['[]', '[{"client_name":"x"}]', '42', '"client"', 'null', 'true']) {
      expectValidation(await post(text), CLIENTS, 'body');
    }
  });

  it('unknown fields are 422 naming each field', async () => {
    const res = await post({ client_name: 'x', foo: 1, client_secret_expires_at: 0 });
    const body = expectValidation(res, CLIENTS, 'foo');
    expect(body.errors.map((e: { field: string }) => e.field)).toContain('client_secret_expires_at');
    expectValidation(await api(t, 'PATCH', `${CLIENTS}/whatever`, { token: admin, body: { bogus: true } }), `${CLIENTS}/whatever`, 'bogus');
  });

  it('client_name is required and 1-255 characters', async () => {
    expectValidation(await post({}), CLIENTS, 'client_name');
    expectValidation(await post({ client_name: '' }), CLIENTS, 'client_name');
    expectValidation(await post({ client_name: '   ' }), CLIENTS, 'client_name');
    expectValidation(await post({ client_name: 'x'.repeat(256) }), CLIENTS, 'client_name');
    expectValidation(await post({ client_name: 42 }), CLIENTS, 'client_name');
    expectValidation(await post({ client_name: null }), CLIENTS, 'client_name');
  });

  it('description is at most 1000 characters', async () => {
    expectValidation(await post({ client_name: 'x', description: 'd'.repeat(1001) }), CLIENTS, 'description');
  });

  it('field types and formats are checked, naming array elements as name.index', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ application_type: 'desktop' }, 'application_type'],
      [{ redirect_uris: ['https://ok.example.com/cb', 'not a url'] }, 'redirect_uris.1'],
      [{ redirect_uris: 'https://ok.example.com/cb' }, 'redirect_uris'],
      [{ contacts: ['ok@example.com', 'not-an-email'] }, 'contacts.1'],
      [{ grant_types: ['password'] }, 'grant_types.0'],
      [{ token_endpoint_auth_method: 'tls_client_auth' }, 'token_endpoint_auth_method'],
      [{ client_uri: 'javascript:alert(1)' }, 'client_uri'],
      [{ require_pkce: 'yes' }, 'require_pkce'],
      [{ default_max_age: -1 }, 'default_max_age'],
      [{ default_max_age: 1.5 }, 'default_max_age'],
      [{ subject_type: 'secret' }, 'subject_type'],
      [{ id_token_signed_response_alg: 'HS256' }, 'id_token_signed_response_alg'],
      [{ scope: 'two  spaces' }, 'scope'],
      [{ tags: [''] }, 'tags.0'],
    ];
    for (const [extra, field] of cases) expectValidation(await post({ client_name: 'x', ...extra }), CLIENTS, field);
  });

  it('inconsistent combinations are 422', async () => {
    expectValidation(await post({ client_name: 'x', application_type: 'spa', token_endpoint_auth_method: 'client_secret_basic' }), CLIENTS, 'token_endpoint_auth_method');
    expectValidation(await post({ client_name: 'x', application_type: 'spa', grant_types: ['client_credentials'] }), CLIENTS, 'grant_types');
    expectValidation(await post({ client_name: 'x', redirect_uris: ['http://app.example.com/cb'] }), CLIENTS, 'redirect_uris.0');
    expectValidation(await post({ client_name: 'x', redirect_uris: ['https://*.example.com/cb'] }), CLIENTS, 'redirect_uris.0');
    expectValidation(await post({ client_name: 'x', redirect_uris: ['https://bücher.example/cb'] }), CLIENTS, 'redirect_uris.0');
    // OIDC Back-Channel Logout 1.0 2.2: no fragment; http only for a confidential client.
    expectValidation(await post({ client_name: 'x', backchannel_logout_uri: 'https://a.example.com/bc#f' }), CLIENTS, 'backchannel_logout_uri');
    const publicHttp = { client_name: 'x', application_type: 'native', redirect_uris: ['com.example.app:/cb'], backchannel_logout_uri: 'http://rp.example.com/bc' };
    expectValidation(await post(publicHttp), CLIENTS, 'backchannel_logout_uri');
    // A public client always uses PKCE: false would be stored and ignored.
    expectValidation(await post({ client_name: 'x', application_type: 'spa', require_pkce: false }), CLIENTS, 'require_pkce');
    expectValidation(await post({ client_name: 'x', token_endpoint_auth_method: 'none', require_pkce: false }), CLIENTS, 'require_pkce');
    expectValidation(await post({ client_name: 'x', grant_types: ['authorization_code', 'refresh_token', 'authorization_code'] }), CLIENTS, 'grant_types.2');
  });

});

describe('redirect URIs', () => {
  it('accepts the punycode form of an internationalised host (its Unicode form is refused above)', async () => {
    const res = await post({ client_name: 'x', redirect_uris: ['https://xn--bcher-kva.example/cb'] });
    expect(res.status).toBe(201);
    expect(res.json.data.redirect_uris).toEqual(['https://xn--bcher-kva.example/cb']);
  });
});

describe('refused updates', () => {
  it('a client made public keeps no require_pkce false from its confidential days', async () => {
    const c = await createClient(t, admin, { client_name: 'Was confidential', redirect_uris: ['https://app.example.com/cb'], require_pkce: false });
    expect(c.require_pkce).toBe(false);
    const path = `${CLIENTS}/${c.client_id}`;
    const res = await api(t, 'PATCH', path, { token: admin, body: { application_type: 'spa' } });
    expect(res.status, res.text).toBe(200);
    expect(res.json.data).toMatchObject({ application_type: 'spa', token_endpoint_auth_method: 'none', require_pkce: true });
    expect((await t.app.ctx.storage.clients.get('default', c.client_id))?.metadata.require_pkce).toBe(true);
    // Asking for false on the public client now is refused and changes nothing.
    expectValidation(await api(t, 'PATCH', path, { token: admin, body: { require_pkce: false } }), path, 'require_pkce');
    expect((await api(t, 'GET', path, { token: admin })).json.data.require_pkce).toBe(true);
  });


  it('an operation without a body refuses one declared as anything but JSON (415) and changes nothing', async () => {
    const c = await createClient(t, admin, { client_name: 'No body wanted' });
    const path = `${CLIENTS}/${c.client_id}/deactivate`;
    const send = (init: RequestInit) => fetch(`${t.url}${path}`, { method: 'POST', ...init, headers: { authorization: `Bearer ${admin}`, ...(init.headers as Record<string, string>) } });
    for (const [type, body] of [['text/plain', 'hi'], ['application/x-www-form-urlencoded', 'active=false']] as const) {
      const res = await send({ headers: { 'content-type': type }, body });
      expectProblem({ status: res.status, headers: res.headers, json: await res.json() }, 415, 'unsupported-media-type', path);
    }
    expect((await t.app.ctx.storage.clients.get('default', c.client_id))?.active).toBe(true);
    // No body, or a JSON one, is what the operation takes.
    expect((await send({})).status).toBe(200);
    expect((await send({ headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(200);
    expect((await t.app.ctx.storage.clients.get('default', c.client_id))?.active).toBe(false);
  });

  it('PUT requires client_name; a refused PUT or PATCH changes nothing and is not audited', async () => {
    const c = await createClient(t, admin, { client_name: 'Keep me', description: 'kept' });
    const path = `${CLIENTS}/${c.client_id}`;
    expectValidation(await api(t, 'PUT', path, { token: admin, body: { description: 'lost' } }), path, 'client_name');
    expectValidation(await api(t, 'PATCH', path, { token: admin, body: { client_name: 'y'.repeat(256) } }), path, 'client_name');
    expectValidation(await api(t, 'PATCH', path, { token: admin, body: { description: 'z'.repeat(1001) } }), path, 'description');
    expectProblem(await api(t, 'PATCH', path, { token: admin, body: '{"description":' }), 400, 'bad-request', path);
    const now = (await api(t, 'GET', path, { token: admin })).json.data;
    expect(now).toMatchObject({ client_name: 'Keep me', description: 'kept', updated_at: c.updated_at });
    const updates = await t.app.ctx.storage.audit.list('default', { type: 'client.updated' }, { limit: 100, include_count: false });
    expect(updates.items.filter((e) => e.details.client_id === c.client_id)).toEqual([]);
  });
});

describe('boundaries that are accepted', () => {
  it('client_name of 255 and description of 1000 characters', async () => {
    const name = 'n'.repeat(255);
    const c = await createClient(t, admin, { client_name: name, description: 'd'.repeat(1000) });
    expect(c.client_name).toBe(name);
    expect(c.description).toHaveLength(1000);
  });

  it('a content type with parameters', async () => {
    const res = await post({ client_name: 'charset' }, { 'content-type': 'application/json; charset=utf-8' });
    expect(res.status).toBe(201);
  });
});

describe('query parameters', () => {
  it.each(['0', '101', '-1', 'abc', '1.5', '', '1e2'])('limit=%j is 422 on limit', async (value) => {
    const path = `${CLIENTS}?limit=${value}`;
    expectValidation(await api(t, 'GET', path, { token: admin }), CLIENTS, 'limit');
  });

  it('other list parameters of the wrong type are 422 naming them', async () => {
    expectValidation(await api(t, 'GET', `${CLIENTS}?application_type=desktop`, { token: admin }), CLIENTS, 'application_type');
    expectValidation(await api(t, 'GET', `${CLIENTS}?active=yes`, { token: admin }), CLIENTS, 'active');
    expectValidation(await api(t, 'GET', `${CLIENTS}?include_count=1`, { token: admin }), CLIENTS, 'include_count');
  });

  it('q is at most 200 characters', async () => {
    expectValidation(await api(t, 'GET', `${CLIENTS}?q=${'q'.repeat(201)}`, { token: admin }), CLIENTS, 'q');
    expect((await api(t, 'GET', `${CLIENTS}?q=${'q'.repeat(200)}`, { token: admin })).status).toBe(200);
  });

  it('a tampered or foreign cursor is 422 on after, never a 500', async () => {
    for (let i = 0; i < 3; i++) await createClient(t, admin, { client_name: `cursor ${i}` });
    const first = await api(t, 'GET', `${CLIENTS}?limit=1`, { token: admin });
    const cursor = first.json.pagination.next_cursor as string;
    expect(typeof cursor).toBe('string');
    expect((await api(t, 'GET', `${CLIENTS}?limit=1&after=${encodeURIComponent(cursor)}`, { token: admin })).status).toBe(200);

    const flipped = cursor.slice(0, 3) + (cursor[3] === 'A' ? 'B' : 'A') + cursor.slice(4);
    for (const bad of [flipped, `${cursor}x`, 'garbage', '.', "' OR 1=1 --", Buffer.from('["2020-01-01","x"]').toString('base64url')]) {
      expectValidation(await api(t, 'GET', `${CLIENTS}?after=${encodeURIComponent(bad)}`, { token: admin }), CLIENTS, 'after');
    }
  });

  it('instance is the path without the query string', async () => {
    const body = expectValidation(await api(t, 'GET', `${CLIENTS}?limit=0&q=x`, { token: admin }), CLIENTS, 'limit');
    expect(body.instance).toBe(CLIENTS);
  });
});

describe('injection strings are data', () => {
  it('stores SQL and HTML literally and searches them literally', async () => {
    const sql = "Robert'); DROP TABLE clients;--";
    const html = '<script>alert("x")</script><img src=x onerror=alert(1)>';
    const before = await count();
    const a = await createClient(t, admin, { client_name: sql, description: "1' OR '1'='1" });
    const b = await createClient(t, admin, { client_name: html, tags: ['<b>tag</b>'] });
    expect(a.client_name).toBe(sql);
    expect(b.client_name).toBe(html);
    expect((await api(t, 'GET', `${CLIENTS}/${b.client_id}`, { token: admin })).json.data).toMatchObject({ client_name: html, tags: ['<b>tag</b>'] });

    const search = async (q: string) => {
      const res = await api(t, 'GET', `${CLIENTS}?limit=100&q=${encodeURIComponent(q)}`, { token: admin });
      expect(res.status, res.text).toBe(200);
      return res.json.data.map((c: { client_id: string }) => c.client_id);
    };
    expect(await search("'); DROP TABLE")).toEqual([a.client_id]);
    expect(await search("1' OR '1'='1")).toEqual([a.client_id]);
    expect(await search('<script>')).toEqual([b.client_id]);
    // Words in any order, each somewhere in the name, id or description.
    expect(await search('TABLE robert')).toEqual([a.client_id]);
    expect(await search("' OR 1=1 --")).toEqual([]);
    expect(await search('%')).toEqual([]);
    expect(await search('%%%')).toEqual([]);
    expect(await count()).toBe(before + 2);
  });

  it('treats injection in path ids as an unknown id', async () => {
    for (const id of ["x' OR '1'='1", '1; DROP TABLE clients', '<script>']) {
      const path = `${CLIENTS}/${encodeURIComponent(id)}`;
      expectProblem(await api(t, 'GET', path, { token: admin }), 404, 'not-found', path);
    }
  });
});

describe('unknown ids', () => {
  it.each([
    ['GET', ''],
    ['PUT', ''],
    ['PATCH', ''],
    ['DELETE', ''],
    ['POST', '/activate'],
    ['POST', '/deactivate'],
    ['POST', '/secret'],
    ['GET', '/stats'],
  ])('%s /api/v1/clients/:unknown%s is 404 not-found', async (method, suffix) => {
    const path = `${CLIENTS}/no-such-client${suffix}`;
    const body = method === 'PUT' || method === 'PATCH' ? { client_name: 'x' } : undefined;
    expectProblem(await api(t, method, path, { token: admin, body }), 404, 'not-found', path);
  });

  it('unknown Management routes are 404, known routes under another method 405 with Allow', async () => {
    expectProblem(await api(t, 'GET', '/api/v1/nothing-here', { token: admin }), 404, 'not-found', '/api/v1/nothing-here');
    const res = await api(t, 'POST', `${CLIENTS}/some-id/stats`, { token: admin });
    expectProblem(res, 405, 'method-not-allowed', `${CLIENTS}/some-id/stats`);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    const collection = await api(t, 'DELETE', CLIENTS, { token: admin });
    expectProblem(collection, 405, 'method-not-allowed', CLIENTS);
    expect(collection.headers.get('allow')?.split(', ').sort()).toEqual(['GET', 'HEAD', 'POST']);
  });
});

describe('bodies over 1 MiB', () => {
  it('are 413 payload-too-large, answered without reading the body, and the connection is closed', async () => {
    const before = await count();
    const conn = await openRaw(t.app.port);
    await conn.write(head('POST', CLIENTS, t.app.port, { authorization: `Bearer ${admin}`, 'content-type': 'application/json', 'content-length': MiB + 1 }));
    await conn.write('{"client_name":"too big","description":"');
    const res = await conn.response;
    expect(res.status).toBe(413);
    expectProblem({ status: res.status, headers: res.headers, json: JSON.parse(res.body) }, 413, 'payload-too-large', CLIENTS);
    await conn.closed;
    expect(conn.isClosed()).toBe(true);
    expect(await count()).toBe(before);
  });

  it('also through fetch with a real 2 MiB body', async () => {
    const big = JSON.stringify({ client_name: 'big', description: 'x'.repeat(2 * MiB) });
    const res = await fetch(`${t.url}${CLIENTS}`, { method: 'POST', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body: big }).catch(
      (err: unknown) => err as Error,
    );
    // The server may close while the client is still sending; when the response arrives it is the problem.
    if (!(res instanceof Error)) expectProblem({ status: res.status, headers: res.headers, json: await res.json() }, 413, 'payload-too-large', CLIENTS);
    // The service is fine afterwards.
    expect((await api(t, 'GET', CLIENTS, { token: admin })).status).toBe(200);
  });

  it('a body of exactly 1 MiB is read and validated', async () => {
    const prefix = '{"client_name":"exact","description":"';
    const suffix = '"}';
    const body = prefix + 'x'.repeat(MiB - prefix.length - suffix.length) + suffix;
    expect(Buffer.byteLength(body)).toBe(MiB);
    expectValidation(await post(body), CLIENTS, 'description');
  });
});
