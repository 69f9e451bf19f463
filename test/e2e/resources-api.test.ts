/**
 * Issue 19, items 1-2: the /api/v1/resources Management resource, the client `scope` check, and
 * client_credentials tokens for a tenant's own API verified by a jose resource server.
 */
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { introspect, postForm, serviceClient, type Credentials } from '../helpers/oauth.js';
import { startProtectedApi, type ProtectedApi } from '../helpers/resource-server.js';

const ORDERS = 'https://orders.example.com/api';
const BILLING = 'https://billing.example.com/';

let t: TestApp;
let admin: string;
let orders: ProtectedApi;

beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('svc:resources:read svc:resources:write svc:resources:delete svc:clients:read svc:clients:write');
  orders = await startProtectedApi({ issuer: t.issuer, audience: ORDERS, requiredScope: 'read:orders' });
});
afterAll(async () => {
  await orders?.close();
  await t?.close();
});

const createResource = (body: Record<string, unknown>, token = admin) => api(t, 'POST', '/api/v1/resources', { token, body });

function ccToken(creds: Credentials, resource: string, scope: string) {
  return postForm(t, '/token', { grant_type: 'client_credentials', resource, scope }, creds);
}

describe('/api/v1/resources', () => {
  let ordersId: string;

  it('creates a resource with defaults and reads it back', async () => {
    const res = await createResource({ identifier: ORDERS, name: 'Orders', scopes: [{ name: 'read:orders', description: 'Read orders' }, { name: 'write:orders' }] });
    expect(res.status).toBe(201);
    const r = res.json.data;
    expect(r).toMatchObject({
      identifier: ORDERS,
      name: 'Orders',
      scopes: [{ name: 'read:orders', description: 'Read orders' }, { name: 'write:orders', description: '' }],
      token_format: 'jwt',
      access_token_ttl: 3600,
      signing_alg: 'RS256',
      include_roles: false,
    });
    expect(typeof r.id).toBe('string');
    expect(r.created_at).toMatch(/Z$/);
    ordersId = r.id;
    const got = await api(t, 'GET', `/api/v1/resources/${ordersId}`, { token: admin });
    expect(got.status).toBe(200);
    expect(got.json.data).toEqual(r);
    // Audited with the affected id.
    const audit = await t.app.ctx.storage.audit.list('default', { type: 'resource.created' }, { limit: 5, include_count: false });
    expect(audit.items.some((e) => e.details.resource_id === ordersId)).toBe(true);
  });

  it('lists with the envelope, cursors and count', async () => {
    await createResource({ identifier: BILLING, name: 'Billing', scopes: [{ name: 'read:invoices', description: 'Invoices' }], token_format: 'opaque', access_token_ttl: 600 });
    const first = await api(t, 'GET', '/api/v1/resources?limit=1&include_count=true', { token: admin });
    expect(first.status).toBe(200);
    expect(first.json.data).toHaveLength(1);
    expect(first.json.pagination).toMatchObject({ has_more: true, total_count: 2 });
    const second = await api(t, 'GET', `/api/v1/resources?limit=1&after=${encodeURIComponent(first.json.pagination.next_cursor)}`, { token: admin });
    expect(second.json.data[0].identifier).toBe(BILLING);
    expect(second.json.pagination.has_more).toBe(false);
    const tampered = await api(t, 'GET', `/api/v1/resources?after=${encodeURIComponent(first.json.pagination.next_cursor + 'x')}`, { token: admin });
    expect(tampered.status).toBe(422);
  });

  it('needs the svc:resources scopes, before any lookup', async () => {
    const weak = await t.token('svc:clients:read');
    const list = await api(t, 'GET', '/api/v1/resources', { token: weak });
    expect(list.status).toBe(403);
    expect(list.headers.get('www-authenticate')).toContain('scope="svc:resources:read"');
    expect((await api(t, 'DELETE', '/api/v1/resources/nope', { token: weak })).status).toBe(403);
    expect((await api(t, 'POST', '/api/v1/resources', { token: weak, body: {} })).status).toBe(403);
    expect((await api(t, 'GET', '/api/v1/resources')).status).toBe(401);
  });

  it('refuses the Management API identifier and reserved urn:svc: names (422), a duplicate (409)', async () => {
    for (const identifier of ['urn:svc:api:v1', 'URN:SVC:API:V1', 'urn:svc:other']) {
      const res = await createResource({ identifier, name: 'x' });
      expect(res.status, identifier).toBe(422);
      expect(res.json.errors[0].field).toBe('identifier');
    }
    const dup = await createResource({ identifier: ORDERS, name: 'Again' });
    expect(dup.status).toBe(409);
    expect(dup.json.type).toBe('urn:svc:error:conflict');
  });

  it.each([
    ['relative', '/orders'],
    ['with a fragment', 'https://a.example/#x'],
    ['with a space', 'https://a.example/a b'],
    ['with a control character', 'https://a.example/\u0001'],
    ['too long', `https://a.example/${'a'.repeat(2100)}`],
  ])('refuses an identifier %s', async (_what, identifier) => {
    const res = await createResource({ identifier, name: 'x' });
    expect(res.status).toBe(422);
    expect(res.json.errors.map((e: { field: string }) => e.field)).toContain('identifier');
  });

  it.each([
    ['a space', 'read orders', 'scopes.0.name'],
    ['a control character', 'read\u0007', 'scopes.0.name'],
    ['a quote', 'read"', 'scopes.0.name'],
    ['nothing', '', 'scopes.0.name'],
    ['a standard OIDC name', 'openid', 'scopes.0.name'],
    ['the roles scope', 'roles', 'scopes.0.name'],
    ['a svc: name', 'svc:clients:read', 'scopes.0.name'],
  ])('refuses a scope name with %s', async (_what, name, field) => {
    const res = await createResource({ identifier: 'https://scopes.example/', name: 'x', scopes: [{ name, description: '' }] });
    expect(res.status).toBe(422);
    expect(res.json.errors.map((e: { field: string }) => e.field)).toContain(field);
  });

  it('refuses duplicate scope names, unknown fields, a ttl over the ceiling and an algorithm the tenant lacks', async () => {
    const dup = await createResource({ identifier: 'https://d.example/', name: 'x', scopes: [{ name: 'a' }, { name: 'a' }] });
    expect(dup.json.errors[0]).toMatchObject({ field: 'scopes.1.name' });
    expect((await createResource({ identifier: 'https://d.example/', name: 'x', audience: 'y' })).json.errors[0]).toMatchObject({ field: 'audience', message: 'Unknown field' });
    expect((await createResource({ identifier: 'https://d.example/', name: 'x', access_token_ttl: 86401 })).json.errors[0].field).toBe('access_token_ttl');
    expect((await createResource({ identifier: 'https://d.example/', name: 'x', signing_alg: 'HS256' })).json.errors[0].field).toBe('signing_alg');
    expect((await createResource({ identifier: 'https://d.example/', name: 'x', token_format: 'paseto' })).json.errors[0].field).toBe('token_format');
    // Nothing was stored by any of them.
    expect((await api(t, 'GET', '/api/v1/resources?include_count=true', { token: admin })).json.pagination.total_count).toBe(2);
  });

  it('PATCHes the supplied fields, keeps the identifier fixed, 404s unknown ids', async () => {
    const res = await api(t, 'PATCH', `/api/v1/resources/${ordersId}`, { token: admin, body: { name: '<script>alert(1)</script>', access_token_ttl: 900 } });
    expect(res.status).toBe(200);
    expect(res.json.data).toMatchObject({ name: '<script>alert(1)</script>', access_token_ttl: 900, identifier: ORDERS });
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const moved = await api(t, 'PATCH', `/api/v1/resources/${ordersId}`, { token: admin, body: { identifier: 'https://elsewhere.example/' } });
    expect(moved.status).toBe(422);
    expect(moved.json.errors[0].field).toBe('identifier');
    const same = await api(t, 'PATCH', `/api/v1/resources/${ordersId}`, { token: admin, body: { identifier: ORDERS } });
    expect(same.status).toBe(200);
    expect((await api(t, 'PATCH', '/api/v1/resources/unknown', { token: admin, body: { name: 'x' } })).status).toBe(404);
    expect((await api(t, 'GET', '/api/v1/resources/unknown', { token: admin })).status).toBe(404);
  });

  it('is in the OpenAPI document', async () => {
    const res = await fetch(`${t.url}/api/v1/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(doc.paths['/api/v1/resources'] ?? {}).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/api/v1/resources/{id}'] ?? {}).sort()).toEqual(['delete', 'get', 'patch']);
  });
});

describe('client scope check', () => {
  it('refuses a client naming unknown scopes with a 422 on scope naming them, and accepts known ones', async () => {
    const bad = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'x', grant_types: ['client_credentials'], scope: 'read:orders delete:everything svc:nope' } });
    expect(bad.status).toBe(422);
    expect(bad.json.errors[0].field).toBe('scope');
    expect(bad.json.errors[0].message).toContain('delete:everything');
    expect(bad.json.errors[0].message).toContain('svc:nope');
    expect(bad.json.errors[0].message).not.toContain('read:orders');
    const good = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'x', grant_types: ['client_credentials'], scope: 'openid profile roles read:orders svc:clients:read' } });
    expect(good.status).toBe(201);
    const patched = await api(t, 'PATCH', `/api/v1/clients/${good.json.data.client_id}`, { token: admin, body: { scope: 'read:orders made:up' } });
    expect(patched.status).toBe(422);
    expect(patched.json.errors[0].field).toBe('scope');
  });
});

describe('client_credentials for a tenant API', () => {
  let backend: Credentials;
  let billingOnly: Credentials;

  beforeAll(async () => {
    backend = await serviceClient(t, admin, 'read:orders write:orders read:invoices');
    billingOnly = await serviceClient(t, admin, 'read:invoices');
  });

  it('issues a JWT with aud = the identifier that the jose resource server accepts', async () => {
    const res = await ccToken(backend, ORDERS, 'read:orders');
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ token_type: 'Bearer', scope: 'read:orders', expires_in: 900 });
    const jwks = createRemoteJWKSet(new URL(`${t.issuer}/jwks`));
    const { payload } = await jwtVerify(res.json.access_token, jwks, { issuer: t.issuer, audience: ORDERS, typ: 'at+jwt' });
    expect(payload).toMatchObject({ sub: backend.id, client_id: backend.id, scope: 'read:orders', aud: ORDERS });
    expect(payload.exp! - payload.iat!).toBe(900);
    const call = await orders.call(res.json.access_token);
    expect(call.status).toBe(200);
    expect(call.body.client_id).toBe(backend.id);
    // Introspection agrees.
    const intro = await introspect(t, res.json.access_token, backend);
    expect(intro.json).toMatchObject({ active: true, aud: ORDERS, scope: 'read:orders', client_id: backend.id });
  });

  it('the resource server refuses a token without its scope, for another resource, expired, or forged', async () => {
    const writeOnly = await ccToken(backend, ORDERS, 'write:orders');
    expect((await orders.call(writeOnly.json.access_token)).status).toBe(403);
    const management = await t.token('svc:clients:read');
    expect((await orders.call(management)).status).toBe(401);
    const late = await startProtectedApi({ issuer: t.issuer, audience: ORDERS, requiredScope: 'read:orders', now: () => new Date(Date.now() + 901_000 + 60_000) });
    try {
      const token = (await ccToken(backend, ORDERS, 'read:orders')).json.access_token as string;
      expect((await orders.call(token)).status).toBe(200);
      const expired = await late.call(token);
      expect(expired.status).toBe(401);
      expect(expired.body.reason).toBe('ERR_JWT_EXPIRED');
    } finally {
      await late.close();
    }
    const token = (await ccToken(backend, ORDERS, 'read:orders')).json.access_token as string;
    const [h, p] = token.split('.');
    const body = JSON.parse(Buffer.from(p!, 'base64url').toString());
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...body, scope: 'read:orders write:orders admin' })).toString('base64url')}.${token.split('.')[2]}`;
    expect((await orders.call(forged)).status).toBe(401);
  });

  it('another issuer (another deployment or tenant) signing for the same identifier is refused', async () => {
    const other = await startTestApp();
    try {
      const otherAdmin = await other.token('svc:resources:write svc:clients:write');
      expect((await api(other, 'POST', '/api/v1/resources', { token: otherAdmin, body: { identifier: ORDERS, name: 'Orders elsewhere', scopes: [{ name: 'read:orders' }] } })).status).toBe(201);
      const c = await serviceClient(other, otherAdmin, 'read:orders');
      const res = await postForm(other, '/token', { grant_type: 'client_credentials', resource: ORDERS, scope: 'read:orders' }, c);
      expect(res.status).toBe(200);
      expect((await orders.call(res.json.access_token)).status).toBe(401);
    } finally {
      await other.close();
    }
  });

  it('unknown resource: invalid_target; a scope not allowed: invalid_scope', async () => {
    const unknown = await ccToken(backend, 'https://nowhere.example/', 'read:orders');
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toBe('invalid_target');
    // A scope of another resource, one the client lacks, one nobody defines.
    for (const scope of ['read:invoices', 'read:orders admin', 'svc:clients:read']) {
      const res = await ccToken(backend, ORDERS, scope);
      expect(res.json.error, scope).toBe('invalid_scope');
    }
    const notAllowed = await ccToken(billingOnly, ORDERS, 'read:orders');
    expect(notAllowed.json.error).toBe('invalid_scope');
  });

  it('without resource: a resource scope or a scope nobody defines is invalid_scope, never a token without audience', async () => {
    const noResource = (scope: string) => postForm(t, '/token', { grant_type: 'client_credentials', scope }, backend);
    for (const scope of ['read:orders', 'nonexistent:scope', 'read:orders nonexistent:scope']) {
      const res = await noResource(scope);
      expect(res.status, scope).toBe(400);
      expect(res.json.error, scope).toBe('invalid_scope');
    }
    expect((await noResource('read:orders')).json.error_description).toMatch(/resource=/);
    // The same scope with its resource is a token for that audience.
    expect((await ccToken(backend, ORDERS, 'read:orders')).status).toBe(200);
  });

  it('the Management API refuses a resource token', async () => {
    const res = await ccToken(backend, ORDERS, 'read:orders');
    const call = await api(t, 'GET', '/api/v1/clients', { token: res.json.access_token });
    expect(call.status).toBe(401);
    expect(call.headers.get('www-authenticate')).toContain('invalid_token');
  });

  it('an opaque resource issues opaque tokens that introspect with aud = the identifier', async () => {
    const res = await ccToken(backend, BILLING, 'read:invoices');
    expect(res.status).toBe(200);
    expect(res.json.access_token.split('.')).toHaveLength(1);
    expect(res.json.expires_in).toBe(600);
    const intro = await introspect(t, res.json.access_token, backend);
    expect(intro.json).toMatchObject({ active: true, aud: BILLING, scope: 'read:invoices', client_id: backend.id });
    expect((await ccToken(backend, BILLING, 'read:orders')).json.error).toBe('invalid_scope');
    expect((await ccToken(billingOnly, BILLING, 'read:invoices')).status).toBe(200);
  });

  it('signs with the resource signing_alg, and a deleted resource is invalid_target at once', async () => {
    const created = await createResource({ identifier: 'https://es.example/', name: 'ES', scopes: [{ name: 'es:read' }], signing_alg: 'ES256' });
    expect(created.status).toBe(201);
    const c = await serviceClient(t, admin, 'es:read read:orders');
    const res = await ccToken(c, 'https://es.example/', 'es:read');
    expect(decodeProtectedHeader(res.json.access_token).alg).toBe('ES256');
    expect((await introspect(t, res.json.access_token, c)).json.active).toBe(true);
    const opaqueRes = await createResource({ identifier: 'https://opaque.example/', name: 'Opaque', scopes: [{ name: 'op:read' }], token_format: 'opaque' });
    await api(t, 'PATCH', `/api/v1/clients/${c.id}`, { token: admin, body: { scope: 'es:read read:orders op:read' } });
    const opaque = await ccToken(c, 'https://opaque.example/', 'op:read');
    expect((await introspect(t, opaque.json.access_token, c)).json.active).toBe(true);
    expect((await api(t, 'DELETE', `/api/v1/resources/${created.json.data.id}`, { token: admin })).status).toBe(204);
    expect((await api(t, 'DELETE', `/api/v1/resources/${opaqueRes.json.data.id}`, { token: admin })).status).toBe(204);
    // Tokens of a deleted resource introspect as inactive, JWT and opaque alike.
    expect((await introspect(t, res.json.access_token, c)).json).toEqual({ active: false });
    expect((await introspect(t, opaque.json.access_token, c)).json).toEqual({ active: false });
    expect((await api(t, 'DELETE', `/api/v1/resources/${created.json.data.id}`, { token: admin })).status).toBe(404);
    expect((await ccToken(c, 'https://es.example/', 'es:read')).json.error).toBe('invalid_target');
    // The client that named the deleted scope keeps working for the rest.
    expect((await ccToken(c, ORDERS, 'read:orders')).status).toBe(200);

    // Another resource taking a deleted one's identifier does not bring its tokens back: they were
    // issued before it existed (a token of the second before its creation, so wait one out).
    await new Promise((resolve) => setTimeout(resolve, 1100));
    for (const identifier of ['https://es.example/', 'https://opaque.example/']) {
      expect((await createResource({ identifier, name: 'Unrelated', scopes: [], token_format: 'jwt' })).status).toBe(201);
    }
    expect((await introspect(t, res.json.access_token, c)).json).toEqual({ active: false });
    expect((await introspect(t, opaque.json.access_token, c)).json).toEqual({ active: false });
  });
});

describe('/api/v1/claims (custom claims)', () => {
  it('reads [] before any PUT, replaces the list, and reads it back', async () => {
    expect((await api(t, 'GET', '/api/v1/claims', { token: admin })).json.data).toEqual({ claims: [] });
    const body = { claims: [{ name: 'tenant', value: 'acme' }, { name: 'https://acme.example/username', from: 'username' }, { name: 'level', value: 3 }] };
    const put = await api(t, 'PUT', '/api/v1/claims', { token: admin, body });
    expect(put.status).toBe(200);
    expect(put.json.data).toEqual(body);
    expect((await api(t, 'GET', '/api/v1/claims', { token: admin })).json.data).toEqual(body);
    const weak = await t.token('svc:resources:read');
    expect((await api(t, 'PUT', '/api/v1/claims', { token: weak, body })).status).toBe(403);
  });

  it.each([
    ['iss'], ['sub'], ['aud'], ['exp'], ['nbf'], ['iat'], ['jti'], ['nonce'], ['azp'], ['scope'], ['client_id'], ['roles'], ['email'], ['preferred_username'], ['__proto__'], ['constructor'], ['toString'], ['hasOwnProperty'], ['valueOf'],
  ])('refuses the reserved claim %s', async (name) => {
    const res = await api(t, 'PUT', '/api/v1/claims', { token: admin, body: { claims: [{ name, value: 'x' }] } });
    expect(res.status).toBe(422);
    expect(res.json.errors[0].field).toBe('claims.0.name');
  });

  it('refuses bad names, unknown or secret sources, both or neither of from/value, duplicates, too many, and changes nothing', async () => {
    const bad = [
      { claims: [{ name: 'has space', value: 'x' }] },
      { claims: [{ name: 'ctl\u0001', value: 'x' }] },
      { claims: [{ name: '<script>', value: 'x' }] },
      { claims: [{ name: 'x', from: 'password_hash' }] },
      { claims: [{ name: 'x', from: 'mfa_secret_sealed' }] },
      { claims: [{ name: 'x', from: 'username', value: 'y' }] },
      { claims: [{ name: 'x' }] },
      { claims: [{ name: 'x', value: { nested: true } }] },
      { claims: [{ name: 'x', value: 'a' }, { name: 'x', value: 'b' }] },
      { claims: Array.from({ length: 21 }, (_, i) => ({ name: `c${i}`, value: i })) },
      { claims: [], extra: true },
    ];
    for (const body of bad) {
      const res = await api(t, 'PUT', '/api/v1/claims', { token: admin, body });
      expect(res.status, JSON.stringify(body)).toBe(422);
    }
    expect((await api(t, 'GET', '/api/v1/claims', { token: admin })).json.data.claims.map((c: { name: string }) => c.name)).toEqual(['tenant', 'https://acme.example/username', 'level']);
  });
});
