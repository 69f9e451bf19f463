/** The clients resource of spec 4.3, happy paths and state changes, through the real server. */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_ID, api, startTestApp, type TestApp } from '../helpers/app.js';
import { createClient, requestToken, serviceClient, tokenFor } from '../helpers/oauth.js';
import { expectProblem } from '../helpers/problem.js';

const HIGH = '100000';
let t: TestApp;
let admin: string;

beforeAll(async () => {
  // Generous limits: this file makes many writes; rate limiting has its own test file.
  t = await startTestApp({ SECURITY_RATE_LIMIT_READ: HIGH, SECURITY_RATE_LIMIT_WRITE: HIGH, SECURITY_RATE_LIMIT_DELETE: HIGH, SECURITY_RATE_LIMIT_SENSITIVE: HIGH });
  admin = await t.token('svc:clients:read svc:clients:write svc:clients:delete');
});
afterAll(async () => t?.close());

const marker = () => `m${randomBytes(4).toString('hex')}`;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

async function list(query: string) {
  const res = await api(t, 'GET', `/api/v1/clients?${query}`, { token: admin });
  expect(res.status, res.text).toBe(200);
  return res.json as { data: any[]; pagination: { has_more: boolean; next_cursor: string | null; total_count?: number } };
}

function expectNoSecret(res: { text: string; json: any }, secret?: string) {
  const items = Array.isArray(res.json.data) ? res.json.data : [res.json.data];
  for (const item of items) expect(item).not.toHaveProperty('client_secret');
  if (secret) expect(res.text).not.toContain(secret);
}

describe('create', () => {
  it('answers 201 with defaults, timestamps and the secret once', async () => {
    const res = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'Defaults' } });
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const c = res.json.data;
    expect(c).toMatchObject({
      client_name: 'Defaults',
      application_type: 'web',
      redirect_uris: [],
      post_logout_redirect_uris: [],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      contacts: [],
      tags: [],
      require_pkce: true,
      active: true,
    });
    expect(c.client_id).toMatch(/^[A-Za-z0-9_-]{16,}$/);
    expect(c.client_secret).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    expect(c.created_at).toMatch(ISO);
    expect(c.updated_at).toMatch(ISO);
    const again = await api(t, 'GET', `/api/v1/clients/${c.client_id}`, { token: admin });
    expectNoSecret(again, c.client_secret);
  });

  it('stores every field of spec 2.2 and reads it back', async () => {
    const body = {
      client_name: 'Everything',
      application_type: 'web',
      redirect_uris: ['https://app.example.com/cb', 'https://app.example.com/cb2'],
      post_logout_redirect_uris: ['https://app.example.com/bye'],
      grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
      response_types: ['code'],
      scope: 'openid profile svc:clients:read',
      token_endpoint_auth_method: 'client_secret_post',
      client_uri: 'https://app.example.com',
      logo_uri: 'https://app.example.com/logo.png',
      policy_uri: 'https://app.example.com/policy',
      tos_uri: 'https://app.example.com/tos',
      contacts: ['ops@example.com', 'dev@example.com'],
      description: 'A client with every field',
      tags: ['prod', 'team-a'],
      require_pkce: false,
      id_token_signed_response_alg: 'ES256',
      subject_type: 'pairwise',
      default_max_age: 3600,
      backchannel_logout_uri: 'https://app.example.com/backchannel',
    };
    const created = await createClient(t, admin, body);
    expect(created).toMatchObject(body);
    const got = await api(t, 'GET', `/api/v1/clients/${created.client_id}`, { token: admin });
    expect(got.status).toBe(200);
    const { client_secret: _s, ...withoutSecret } = created;
    expect(got.json.data).toEqual(withoutSecret);
  });

  it('gives public clients (spa, native) no secret', async () => {
    for (const [type, uri] of [
      ['spa', 'https://spa.example.com/cb'],
      ['native', 'com.example.app:/callback'],
    ] as const) {
      const c = await createClient(t, admin, { client_name: `Public ${type}`, application_type: type, redirect_uris: [uri] });
      expect(c.token_endpoint_auth_method).toBe('none');
      expect(c).not.toHaveProperty('client_secret');
    }
  });

  it('issues a secret that works at the token endpoint', async () => {
    const c = await serviceClient(t, admin, 'svc:clients:read');
    expect((await requestToken(t, c, 'svc:clients:read')).status).toBe(200);
  });
});

describe('list', () => {
  it('never includes secrets', async () => {
    const c = await createClient(t, admin, { client_name: 'Listed secret check' });
    const res = await api(t, 'GET', '/api/v1/clients?limit=100', { token: admin });
    expect(res.status).toBe(200);
    expectNoSecret(res, c.client_secret);
    expect(res.json.data.some((x: any) => x.client_id === c.client_id)).toBe(true);
  });

  it('filters by application_type, active and q', async () => {
    const m = marker();
    const web = await createClient(t, admin, { client_name: `${m} web` });
    const spa = await createClient(t, admin, { client_name: `${m} spa`, application_type: 'spa', redirect_uris: ['https://spa.example.com/cb'] });
    const native = await createClient(t, admin, { client_name: `${m} native`, application_type: 'native', redirect_uris: ['com.example.x:/cb'] });
    const described = await createClient(t, admin, { client_name: 'Described', description: `contains ${m.toUpperCase()} in the description` });
    await api(t, 'POST', `/api/v1/clients/${native.client_id}/deactivate`, { token: admin });

    const ids = (r: { data: any[] }) => r.data.map((c) => c.client_id).sort();
    expect(ids(await list(`q=${m}`))).toEqual([web, spa, native, described].map((c) => c.client_id).sort());
    expect(ids(await list(`q=${m}&application_type=spa`))).toEqual([spa.client_id]);
    expect(ids(await list(`q=${m}&application_type=native`))).toEqual([native.client_id]);
    expect(ids(await list(`q=${m}&active=false`))).toEqual([native.client_id]);
    expect(ids(await list(`q=${m}&active=true&application_type=web`))).toEqual([web.client_id, described.client_id].sort());
    expect(ids(await list(`q=${encodeURIComponent(`${m} sp`)}`))).toEqual([spa.client_id]);
    expect(ids(await list(`q=${web.client_id}`))).toEqual([web.client_id]); // by id too

    const spas = await list('application_type=spa&limit=100');
    expect(spas.data.length).toBeGreaterThan(0);
    expect(spas.data.every((c) => c.application_type === 'spa')).toBe(true);
    const inactive = await list('active=false&limit=100');
    expect(inactive.data.every((c) => c.active === false)).toBe(true);
  });

  it('pages through all results with next_cursor; total_count only with include_count', async () => {
    const m = marker();
    const created: string[] = [];
    for (let i = 0; i < 7; i++) {
      created.push((await createClient(t, admin, { client_name: `${m} page ${i}` })).client_id);
      // Lists order by created_at (milliseconds), then by id: a fast machine creates two clients in
      // one millisecond, and "creation order" is only defined across milliseconds.
      await new Promise((r) => setTimeout(r, 2));
    }

    const seen: string[] = [];
    const hasMore: boolean[] = [];
    let cursor: string | null = null;
    do {
      const res = await list(`q=${m}&limit=3&include_count=true${cursor ? `&after=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.pagination.total_count).toBe(7);
      expect(res.data.length).toBeLessThanOrEqual(3);
      seen.push(...res.data.map((c) => c.client_id));
      hasMore.push(res.pagination.has_more);
      cursor = res.pagination.next_cursor;
      expect(cursor === null).toBe(!res.pagination.has_more);
    } while (cursor);
    expect(hasMore).toEqual([true, true, false]);
    expect(seen).toEqual(created); // creation order, no repeats, nothing missed

    const uncounted = await list(`q=${m}&limit=3`);
    expect(uncounted.pagination).not.toHaveProperty('total_count');
    expect(uncounted.pagination.has_more).toBe(true);
    expect(typeof uncounted.pagination.next_cursor).toBe('string');
  });

  it('defaults to 25 per page and allows 1 to 100', async () => {
    const total = (await list('include_count=true')).pagination.total_count!;
    for (let i = total; i < 27; i++) await createClient(t, admin, { client_name: `filler ${i}` });
    expect((await list('')).data).toHaveLength(25);
    expect((await list('limit=1')).data).toHaveLength(1);
    expect((await list('limit=100')).data.length).toBeGreaterThanOrEqual(27);
  });
});

describe('get, replace, update, delete', () => {
  it('GET answers the client without its secret', async () => {
    const c = await createClient(t, admin, { client_name: 'Get me' });
    const res = await api(t, 'GET', `/api/v1/clients/${c.client_id}`, { token: admin });
    expect(res.status).toBe(200);
    expect(res.json.data.client_id).toBe(c.client_id);
    expectNoSecret(res, c.client_secret);
  });

  it('PUT replaces every mutable field: omitted ones are cleared to their defaults', async () => {
    const c = await createClient(t, admin, {
      client_name: 'Before PUT',
      description: 'to be cleared',
      tags: ['a'],
      contacts: ['a@example.com'],
      client_uri: 'https://before.example.com',
      scope: 'svc:clients:read',
      grant_types: ['client_credentials'],
      require_pkce: false,
      default_max_age: 60,
    });
    const res = await api(t, 'PUT', `/api/v1/clients/${c.client_id}`, { token: admin, body: { client_name: 'After PUT' } });
    expect(res.status).toBe(200);
    expectNoSecret(res, c.client_secret);
    const d = res.json.data;
    expect(d).toMatchObject({ client_id: c.client_id, client_name: 'After PUT', tags: [], contacts: [], grant_types: ['authorization_code'], require_pkce: true, active: true });
    for (const cleared of ['description', 'client_uri', 'scope', 'default_max_age']) expect(d[cleared]).toBeNull();
    expect(d.created_at).toBe(c.created_at);
    expect(d.updated_at >= c.updated_at).toBe(true);
    expect((await api(t, 'GET', `/api/v1/clients/${c.client_id}`, { token: admin })).json.data).toEqual(d);
  });

  it('shows every field of spec 2.2 (CONTRACT.md), null where unset; PATCH null clears a field, PUT null leaves it unset', async () => {
    const SPEC_2_2 = ['client_id', 'client_name', 'application_type', 'redirect_uris', 'post_logout_redirect_uris', 'grant_types', 'response_types', 'scope', 'token_endpoint_auth_method',
      'client_uri', 'logo_uri', 'policy_uri', 'tos_uri', 'contacts', 'description', 'tags', 'require_pkce', 'id_token_signed_response_alg', 'subject_type', 'default_max_age', 'backchannel_logout_uri'];
    const c = await createClient(t, admin, { client_name: 'Minimal' });
    const got = (await api(t, 'GET', `/api/v1/clients/${c.client_id}`, { token: admin })).json.data;
    for (const field of [...SPEC_2_2, 'active', 'created_at', 'updated_at']) expect(got, field).toHaveProperty(field);
    expect(got).toMatchObject({ scope: null, description: null, logo_uri: null, default_max_age: null, backchannel_logout_uri: null, subject_type: null });
    expect(got).not.toHaveProperty('client_secret');
    const listed = (await api(t, 'GET', '/api/v1/clients?limit=100', { token: admin })).json.data.find((x: { client_id: string }) => x.client_id === c.client_id);
    expect(listed).toEqual(got);

    const set = await api(t, 'PATCH', `/api/v1/clients/${c.client_id}`, { token: admin, body: { description: 'kept', logo_uri: 'https://logo.example.com/a.png' } });
    expect(set.json.data).toMatchObject({ description: 'kept', logo_uri: 'https://logo.example.com/a.png' });
    const cleared = await api(t, 'PATCH', `/api/v1/clients/${c.client_id}`, { token: admin, body: { logo_uri: null } });
    expect(cleared.status).toBe(200);
    expect(cleared.json.data).toMatchObject({ description: 'kept', logo_uri: null });
    const put = await api(t, 'PUT', `/api/v1/clients/${c.client_id}`, { token: admin, body: { ...cleared.json.data, client_name: 'Minimal again' } });
    expect(put.status, put.text).toBe(200);
    expect(put.json.data).toMatchObject({ client_name: 'Minimal again', description: 'kept', logo_uri: null, scope: null });
    // null is "unset", never a value: a required field stays required.
    expect((await api(t, 'PATCH', `/api/v1/clients/${c.client_id}`, { token: admin, body: { client_name: null } })).status).toBe(422);
  });

  it('PUT accepts a GET representation sent back, ignoring read-only fields that say what is stored', async () => {
    const sc = await serviceClient(t, admin, 'svc:clients:read', { tags: ['x'] });
    const c = sc.data;
    const got = (await api(t, 'GET', `/api/v1/clients/${c.client_id}`, { token: admin })).json.data;
    const res = await api(t, 'PUT', `/api/v1/clients/${c.client_id}`, { token: admin, body: { ...got, created_at: '2000-01-01T00:00:00.000Z', client_name: 'Round trip 2' } });
    expect(res.status, res.text).toBe(200);
    expect(res.json.data).toMatchObject({ client_id: c.client_id, active: true, created_at: c.created_at, client_name: 'Round trip 2', tags: ['x'] });
    // The creation's answer sent back, its secret included, is a round trip too.
    const patched = await api(t, 'PATCH', `/api/v1/clients/${c.client_id}`, { token: admin, body: { client_id: c.client_id, client_secret: c.client_secret, active: true, description: 'd' } });
    expect(patched.status, patched.text).toBe(200);
    expect((await requestToken(t, sc, 'svc:clients:read')).status).toBe(200);
  });

  it('refuses a read-only field that asks for a change (422 naming the way to make it), and changes nothing', async () => {
    const sc = await serviceClient(t, admin, 'svc:clients:read');
    const c = sc.data;
    const before = (await api(t, 'GET', `/api/v1/clients/${c.client_id}`, { token: admin })).json.data;
    const tries: Array<[string, Record<string, unknown>, string, RegExp]> = [
      ['PATCH', { active: false, description: 'changed' }, 'active', /deactivate/],
      ['PUT', { ...before, client_id: 'hijack', client_name: 'changed' }, 'client_id', /cannot be changed/],
      ['PATCH', { client_secret: 'a-secret-of-my-choosing-0123456789', description: 'changed' }, 'client_secret', /\/secret/],
    ];
    for (const [method, body, field, message] of tries) {
      const res = await api(t, method, `/api/v1/clients/${c.client_id}`, { token: admin, body });
      expectProblem(res, 422, 'validation', `/api/v1/clients/${c.client_id}`);
      expect(res.json.errors).toEqual([{ field, message: expect.stringMatching(message) }]);
      expect(res.text).not.toContain('a-secret-of-my-choosing');
    }
    expect((await api(t, 'GET', `/api/v1/clients/${c.client_id}`, { token: admin })).json.data).toEqual(before);
    expect((await api(t, 'GET', '/api/v1/clients/hijack', { token: admin })).status).toBe(404);
    expect((await requestToken(t, sc, 'svc:clients:read')).status).toBe(200);
  });

  it("shows a client's registered jwks, so a GET sent back as a PUT keeps the keys of a private_key_jwt client", async () => {
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
    const c = await createClient(t, admin, { client_name: 'Keys', token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [{ ...key, kid: 'k1', use: 'sig', alg: 'ES256' }] } });
    const got = (await api(t, 'GET', `/api/v1/clients/${c.client_id}`, { token: admin })).json.data;
    expect(got.jwks).toEqual({ keys: [{ ...key, kid: 'k1', use: 'sig', alg: 'ES256' }] });
    const res = await api(t, 'PUT', `/api/v1/clients/${c.client_id}`, { token: admin, body: { ...got, client_name: 'Keys 2' } });
    expect(res.status, res.text).toBe(200);
    expect(res.json.data.jwks).toEqual(got.jwks);
  });

  it('refuses a private_key_jwt client whose keys cannot verify an assertion, and redirect URIs no client library would send (422 at the field)', async () => {
    const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'jwk' });
    const encOnly = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'Enc only', token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [{ ...key, use: 'enc' }] } } });
    expectProblem(encOnly, 422, 'validation', '/api/v1/clients');
    expect(encOnly.json.errors).toEqual([{ field: 'jwks', message: expect.stringContaining('a key that verifies signatures') }]);
    for (const [uri, message] of [
      ['https:/rp.example.com/cb', 'normal form'],
      ['HTTPS://RP.EXAMPLE.COM/cb', 'normal form'],
      ['https://user:pw@rp.example.com/cb', 'user name or password'],
      ['https://rp.example.com/%zz', 'malformed percent-escape'],
      ['https://rp.example.com/a%2', 'malformed percent-escape'],
    ]) {
      const res = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'Odd URI', redirect_uris: [uri] } });
      expectProblem(res, 422, 'validation', '/api/v1/clients');
      expect(res.json.errors, uri).toEqual([{ field: 'redirect_uris.0', message: expect.stringContaining(message) }]);
    }
  });

  it('refuses a redirect URI listed twice (422 at the second), on create and PATCH; a percent-escape is fine', async () => {
    const twice = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'Twice', redirect_uris: ['https://rp.example.com/cb', 'https://rp.example.com/a%2Fb', 'https://rp.example.com/cb'] } });
    expectProblem(twice, 422, 'validation', '/api/v1/clients');
    expect(twice.json.errors).toEqual([{ field: 'redirect_uris.2', message: expect.stringContaining('listed twice') }]);
    const c = await createClient(t, admin, { client_name: 'Once', redirect_uris: ['https://rp.example.com/cb', 'https://rp.example.com/a%2Fb'] });
    const patched = await api(t, 'PATCH', `/api/v1/clients/${c.client_id}`, { token: admin, body: { post_logout_redirect_uris: ['https://rp.example.com/bye', 'https://rp.example.com/bye'] } });
    expect(patched.json.errors).toEqual([{ field: 'post_logout_redirect_uris.1', message: expect.stringContaining('listed twice') }]);
    expect((await api(t, 'GET', `/api/v1/clients/${c.client_id}`, { token: admin })).json.data.post_logout_redirect_uris).toEqual([]);
  });

  it('PATCH changes only the supplied fields', async () => {
    const c = await createClient(t, admin, { client_name: 'Patch me', description: 'keep', tags: ['keep'], scope: 'openid' });
    const res = await api(t, 'PATCH', `/api/v1/clients/${c.client_id}`, { token: admin, body: { tags: ['new'], client_uri: 'https://patched.example.com' } });
    expect(res.status).toBe(200);
    expectNoSecret(res, c.client_secret);
    expect(res.json.data).toMatchObject({ client_name: 'Patch me', description: 'keep', scope: 'openid', tags: ['new'], client_uri: 'https://patched.example.com' });
    const empty = await api(t, 'PATCH', `/api/v1/clients/${c.client_id}`, { token: admin, body: {} });
    expect(empty.status).toBe(200);
    expect(empty.json.data).toMatchObject({ client_name: 'Patch me', description: 'keep', tags: ['new'] });
  });

  it('concurrent PATCHes of different fields all land (none is lost to another read of the same base)', async () => {
    const c = await createClient(t, admin, { client_name: 'Patched at once', redirect_uris: ['https://rp.example.com/cb'] });
    const patches = [
      { description: 'D' },
      { tags: ['T'] },
      { logo_uri: 'https://l.example.com/x.png' },
      { client_uri: 'https://c.example.com' },
      { policy_uri: 'https://p.example.com' },
      { contacts: ['z@example.com'] },
      { redirect_uris: ['https://rp.example.com/cb', 'https://rp.example.com/cb2'] },
    ];
    const answers = await Promise.all(patches.map((body) => api(t, 'PATCH', `/api/v1/clients/${c.client_id}`, { token: admin, body })));
    // Each succeeds, or is refused with 409 (CONTRACT), never a silent loss.
    for (const a of answers) expect([200, 409], a.text).toContain(a.status);
    const final = (await api(t, 'GET', `/api/v1/clients/${c.client_id}`, { token: admin })).json.data;
    patches.forEach((body, i) => {
      if (answers[i]!.status === 200) expect(final, JSON.stringify(body)).toMatchObject(body);
    });
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThan(0);
  });

  it('keeps the secret of a confidential client through PUT and PATCH', async () => {
    const c = await serviceClient(t, admin, 'svc:clients:read');
    await api(t, 'PATCH', `/api/v1/clients/${c.id}`, { token: admin, body: { description: 'patched' } });
    await api(t, 'PUT', `/api/v1/clients/${c.id}`, { token: admin, body: { client_name: 'put', grant_types: ['client_credentials'], scope: 'svc:clients:read' } });
    expect((await requestToken(t, c, 'svc:clients:read')).status).toBe(200);
  });

  it('DELETE answers 204, then the client is gone (404) and unlisted', async () => {
    const c = await createClient(t, admin, { client_name: 'Delete me' });
    const path = `/api/v1/clients/${c.client_id}`;
    const del = await api(t, 'DELETE', path, { token: admin });
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expectProblem(await api(t, 'GET', path, { token: admin }), 404, 'not-found', path);
    expectProblem(await api(t, 'DELETE', path, { token: admin }), 404, 'not-found', path);
    expect((await list(`q=${c.client_id}`)).data).toEqual([]);
  });
});

describe('activate and deactivate', () => {
  it('switches active and answers the client', async () => {
    const c = await serviceClient(t, admin, 'svc:clients:read');
    const off = await api(t, 'POST', `/api/v1/clients/${c.id}/deactivate`, { token: admin });
    expect(off.status).toBe(200);
    expect(off.json.data).toMatchObject({ client_id: c.id, active: false });
    expectNoSecret(off, c.secret);
    expect((await api(t, 'GET', `/api/v1/clients/${c.id}`, { token: admin })).json.data.active).toBe(false);
    expect((await requestToken(t, c, 'svc:clients:read')).json.error).toBe('invalid_client');
    // Deactivating twice is harmless.
    expect((await api(t, 'POST', `/api/v1/clients/${c.id}/deactivate`, { token: admin })).json.data.active).toBe(false);

    const on = await api(t, 'POST', `/api/v1/clients/${c.id}/activate`, { token: admin });
    expect(on.status).toBe(200);
    expect(on.json.data).toMatchObject({ client_id: c.id, active: true });
    expectNoSecret(on, c.secret);
    expect((await requestToken(t, c, 'svc:clients:read')).status).toBe(200);
  });
});

describe('secret regeneration', () => {
  it('returns a new secret that works; the old one is refused at once', async () => {
    const c = await serviceClient(t, admin, 'svc:clients:read');
    const res = await api(t, 'POST', `/api/v1/clients/${c.id}/secret`, { token: admin });
    expect(res.status).toBe(200);
    expect(Object.keys(res.json.data).sort()).toEqual(['client_id', 'client_secret']);
    expect(res.json.data.client_id).toBe(c.id);
    const fresh = res.json.data.client_secret as string;
    expect(fresh).not.toBe(c.secret);
    expect(fresh.length).toBeGreaterThanOrEqual(32);

    const old = await requestToken(t, c, 'svc:clients:read');
    expect(old.status).toBe(401);
    expect(old.json.error).toBe('invalid_client');
    expect((await requestToken(t, { id: c.id, secret: fresh }, 'svc:clients:read')).status).toBe(200);
    // The new secret is not shown again.
    expectNoSecret(await api(t, 'GET', `/api/v1/clients/${c.id}`, { token: admin }), fresh);
  });
});

describe('stats', () => {
  it('counts every token issued to the client', async () => {
    const c = await serviceClient(t, admin, 'svc:clients:read');
    const path = `/api/v1/clients/${c.id}/stats`;
    const zero = await api(t, 'GET', path, { token: admin });
    expect(zero.status).toBe(200);
    expect(zero.json.data).toEqual({ client_id: c.id, tokens_issued: 0, active_sessions: 0, active_grants: 0, last_used_at: null });

    for (let i = 0; i < 3; i++) await tokenFor(t, c, 'svc:clients:read');
    const three = (await api(t, 'GET', path, { token: admin })).json.data;
    expect(three.tokens_issued).toBe(3);
    expect(three.last_used_at).toMatch(ISO);

    // Still exact after the batched counters were written to storage (no double count).
    await new Promise((r) => setTimeout(r, 1300));
    expect((await api(t, 'GET', path, { token: admin })).json.data.tokens_issued).toBe(3);
    await tokenFor(t, c, 'svc:clients:read');
    expect((await api(t, 'GET', path, { token: admin })).json.data.tokens_issued).toBe(4);
    // Refused requests issue nothing.
    await requestToken(t, c, 'svc:clients:write');
    expect((await api(t, 'GET', path, { token: admin })).json.data.tokens_issued).toBe(4);
  });
});

describe('audit', () => {
  const entries = async (type: string) => (await t.app.ctx.storage.audit.list('default', { type }, { limit: 100, include_count: true })).items;

  it('records create, update, state changes, secret rotation and delete with the affected id', async () => {
    const c = await createClient(t, admin, { client_name: 'Audited' });
    const id = c.client_id as string;
    await api(t, 'PATCH', `/api/v1/clients/${id}`, { token: admin, body: { description: 'x' } });
    await api(t, 'PUT', `/api/v1/clients/${id}`, { token: admin, body: { client_name: 'Audited 2' } });
    await api(t, 'POST', `/api/v1/clients/${id}/deactivate`, { token: admin });
    await api(t, 'POST', `/api/v1/clients/${id}/activate`, { token: admin });
    await api(t, 'POST', `/api/v1/clients/${id}/secret`, { token: admin });
    await api(t, 'DELETE', `/api/v1/clients/${id}`, { token: admin });

    const about = (list: Awaited<ReturnType<typeof entries>>) => list.filter((e) => e.details.client_id === id);
    const created = about(await entries('client.created'));
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({ status: 'success', client_id: BOOTSTRAP_ID, ip_address: '127.0.0.1', tenant_id: 'default' });
    expect(created[0]!.timestamp).toMatch(ISO);
    const updated = about(await entries('client.updated'));
    expect(updated.map((e) => e.details.method).sort()).toEqual(['PATCH', 'PUT']);
    expect(about(await entries('client.deactivated'))).toHaveLength(1);
    expect(about(await entries('client.activated'))).toHaveLength(1);
    expect(about(await entries('client.secret_rotated'))).toHaveLength(1);
    expect(about(await entries('client.deleted'))).toHaveLength(1);
    // The audit log never holds the secret.
    const all = await t.app.ctx.storage.audit.list('default', {}, { limit: 100, include_count: false });
    expect(JSON.stringify(all.items)).not.toContain(c.client_secret);
  });

  it('the client.updated entry names every field whose stored value changed: a PUT\'s cleared ones, a PATCH\'s nulls, a dropped secret', async () => {
    /** The one client.updated entry of a client (one change each, so no same-millisecond ordering question). */
    const updatedEntry = async (id: string) => {
      const list = (await entries('client.updated')).filter((e) => e.details.client_id === id);
      expect(list).toHaveLength(1);
      return list[0]!;
    };
    const full = { client_name: 'Cleared by PUT', redirect_uris: ['https://rp.example.com/cb'], description: 'd', backchannel_logout_uri: 'https://rp.example.com/bc', tags: ['t'] };
    const a = await createClient(t, admin, full);
    const put = await api(t, 'PUT', `/api/v1/clients/${a.client_id}`, { token: admin, body: { client_name: 'Cleared by PUT 2' } });
    expect(put.status, put.text).toBe(200);
    expect(put.json.data).toMatchObject({ redirect_uris: [], description: null, backchannel_logout_uri: null, tags: [] });
    expect((await updatedEntry(a.client_id)).details).toEqual({
      client_id: a.client_id, method: 'PUT', fields: ['client_name', 'redirect_uris', 'description', 'tags', 'backchannel_logout_uri'],
    });

    // PATCH: a null clears (named), a value sent again is no change (not named).
    const b = await createClient(t, admin, full);
    const patch = await api(t, 'PATCH', `/api/v1/clients/${b.client_id}`, { token: admin, body: { description: null, tags: ['t'], client_name: full.client_name } });
    expect(patch.status, patch.text).toBe(200);
    expect((await updatedEntry(b.client_id)).details).toEqual({ client_id: b.client_id, method: 'PATCH', fields: ['description'] });

    // A confidential client made public loses its secret: named, its value never in the entry.
    const c = await createClient(t, admin, { client_name: 'Made public' });
    const pub = await api(t, 'PATCH', `/api/v1/clients/${c.client_id}`, { token: admin, body: { token_endpoint_auth_method: 'none' } });
    expect(pub.status, pub.text).toBe(200);
    const entry = await updatedEntry(c.client_id);
    expect(entry.details).toEqual({ client_id: c.client_id, method: 'PATCH', fields: ['token_endpoint_auth_method', 'client_secret'] });
    expect(JSON.stringify(entry)).not.toContain(c.client_secret);
  });

  it('lists client.created entries through the storage API with a count', async () => {
    const before = (await t.app.ctx.storage.audit.list('default', { type: 'client.created' }, { limit: 10, include_count: true })).total_count!;
    await createClient(t, admin, { client_name: 'Counted' });
    const after = await t.app.ctx.storage.audit.list('default', { type: 'client.created' }, { limit: 10, include_count: true });
    expect(after.total_count).toBe(before + 1);
    expect(after.items[0]!.details.client_name).toBe('Counted'); // newest first
  });
});
