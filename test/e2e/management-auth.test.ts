/** Authentication and scope checks of the Management API (CONTRACT.md 401/403 rules). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { RESOURCE, bootstrap, forgeToken, postForm, serviceClient } from '../helpers/oauth.js';
import { expectInsufficientScope, expectProblem, expectUnauthorized } from '../helpers/problem.js';

const CLIENTS = '/api/v1/clients';
let t: TestApp;
let admin: string;
let clientsBefore: number;
let auditBefore: number;
const count = () => t.app.ctx.storage.clients.count('default');
const auditCount = async () => (await t.app.ctx.storage.audit.list('default', {}, { limit: 1, include_count: true })).total_count!;

beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('svc:clients:read svc:clients:write svc:clients:delete');
  clientsBefore = await count();
  auditBefore = await auditCount();
});
afterAll(async () => {
  // Nothing any refused request of this file asked for was written.
  expect(await count()).toBe(clientsBefore);
  expect(await auditCount()).toBe(auditBefore);
  await t?.close();
});

const raw = (method: string, path: string, authorization?: string, body?: unknown) =>
  api(t, method, path, { headers: authorization === undefined ? {} : { authorization }, body });

describe('401 unauthorized', () => {
  it('without a token, with the invalid_token challenge', async () => {
    expectUnauthorized(await raw('GET', CLIENTS), CLIENTS);
    expectUnauthorized(await raw('POST', CLIENTS, undefined, { client_name: 'no token' }), CLIENTS);
    expectUnauthorized(await raw('DELETE', `${CLIENTS}/bootstrap-admin`), `${CLIENTS}/bootstrap-admin`);
  });

  it.each([
    'Bearer',
    'Bearer ',
    'Bearer  ',
    'bearer',
    'Basic Ym9vdHN0cmFwLWFkbWluOnNlY3JldA==',
    'Token abc',
    'Bearer abc def',
    'Bearer a.b.c',
    'Bearer e30.e30.e30',
    'Bearer ....',
    'Bearer \u00e4\u00f6\u00fc',
    `Bearer ${'x'.repeat(6000)}`,
    'Bearer null',
    'Bearer undefined',
  ])('for Authorization %j', async (authorization) => {
    expectUnauthorized(await raw('GET', CLIENTS, authorization), CLIENTS);
    expectUnauthorized(await raw('POST', CLIENTS, authorization, { client_name: 'garbage auth' }), CLIENTS);
  });

  it('for two tokens in one header', async () => {
    expectUnauthorized(await raw('GET', CLIENTS, `Bearer ${admin} ${admin}`), CLIENTS);
    expectUnauthorized(await raw('GET', CLIENTS, `Bearer ${admin}, Bearer ${admin}`), CLIENTS);
  });

  it('for a token with the wrong audience, issuer or type', async () => {
    for (const token of [
      await forgeToken(t, { aud: 'urn:other:api' }),
      await forgeToken(t, { aud: 'bootstrap-admin' }),
      await forgeToken(t, { iss: 'http://evil.example.com/oidc/v1' }),
      await forgeToken(t, {}, { typ: 'JWT' }), // an ID-token-like JWT is not an access token
    ]) {
      expectUnauthorized(await raw('GET', CLIENTS, `Bearer ${token}`), CLIENTS);
      expectUnauthorized(await raw('POST', CLIENTS, `Bearer ${token}`, { client_name: 'forged' }), CLIENTS);
    }
  });

  it('for an expired token', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await forgeToken(t, { iat: now - 7200, exp: now - 3600 });
    expectUnauthorized(await raw('GET', CLIENTS, `Bearer ${token}`), CLIENTS);
    const edge = await forgeToken(t, { iat: now - 60, exp: now - 1 });
    expectUnauthorized(await raw('GET', CLIENTS, `Bearer ${edge}`), CLIENTS);
  });

  it('for a token signed by another key, under the real kid or an unknown one', async () => {
    for (const alg of ['RS256', 'ES256', 'EdDSA'] as const) {
      const sameKid = await forgeToken(t, {}, { alg, foreignKey: true });
      expectUnauthorized(await raw('GET', CLIENTS, `Bearer ${sameKid}`), CLIENTS);
    }
    expectUnauthorized(await raw('GET', CLIENTS, `Bearer ${await forgeToken(t, {}, { foreignKey: true, kid: 'unknown-kid' })}`), CLIENTS);
  });

  it('for a token whose signature was tampered with', async () => {
    const [h, p] = admin.split('.');
    const payload = JSON.parse(Buffer.from(p!, 'base64url').toString());
    const elevated = Buffer.from(JSON.stringify({ ...payload, scope: `${payload.scope} svc:users:write` })).toString('base64url');
    expectUnauthorized(await raw('GET', CLIENTS, `Bearer ${h}.${elevated}.${admin.split('.')[2]}`), CLIENTS);
    const unsigned = Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url');
    expectUnauthorized(await raw('GET', CLIENTS, `Bearer ${unsigned}.${p}.`), CLIENTS);
  });

  it('for an opaque token from the provider that is not a Management token', async () => {
    // Without the Management resource oidc-provider issues an opaque token.
    const res = await postForm(t, '/token', { grant_type: 'client_credentials' }, bootstrap);
    expect(res.status).toBe(200);
    expect(res.json.access_token.split('.')).toHaveLength(1);
    expectUnauthorized(await raw('GET', CLIENTS, `Bearer ${res.json.access_token}`), CLIENTS);
  });

  it('for the token of a client that was deleted', async () => {
    const writer = await serviceClient(t, admin, 'svc:clients:read');
    const token = (await postForm(t, '/token', { grant_type: 'client_credentials', resource: RESOURCE, scope: 'svc:clients:read' }, writer)).json.access_token as string;
    expect((await raw('GET', CLIENTS, `Bearer ${token}`)).status).toBe(200);
    expect((await api(t, 'DELETE', `${CLIENTS}/${writer.id}`, { token: admin })).status).toBe(204);
    expectUnauthorized(await raw('GET', CLIENTS, `Bearer ${token}`), CLIENTS);
    // That create and delete were this test's own writes: keep the file-wide count honest.
    clientsBefore = await count();
    auditBefore = await auditCount();
  });

  it('accepts the scheme name in any case (RFC 6750)', async () => {
    expect((await raw('GET', CLIENTS, `bearer ${admin}`)).status).toBe(200);
    expect((await raw('GET', CLIENTS, `BEARER ${admin}`)).status).toBe(200);
  });
});

describe('403 insufficient-scope', () => {
  let readOnly: string;
  let writeOnly: string;
  let usersOnly: string;
  beforeAll(async () => {
    readOnly = await t.token('svc:clients:read');
    writeOnly = await t.token('svc:clients:write');
    usersOnly = await t.token('svc:users:read svc:users:write svc:users:delete');
  });

  it.each([
    ['GET', CLIENTS, 'write', 'svc:clients:read'],
    ['POST', CLIENTS, 'read', 'svc:clients:write'],
    ['GET', `${CLIENTS}/bootstrap-admin`, 'write', 'svc:clients:read'],
    ['PUT', `${CLIENTS}/bootstrap-admin`, 'read', 'svc:clients:write'],
    ['PATCH', `${CLIENTS}/bootstrap-admin`, 'read', 'svc:clients:write'],
    ['DELETE', `${CLIENTS}/bootstrap-admin`, 'write', 'svc:clients:delete'],
    ['POST', `${CLIENTS}/bootstrap-admin/activate`, 'read', 'svc:clients:write'],
    ['POST', `${CLIENTS}/bootstrap-admin/deactivate`, 'read', 'svc:clients:write'],
    ['POST', `${CLIENTS}/bootstrap-admin/secret`, 'write', 'svc:clients:delete'],
    ['GET', `${CLIENTS}/bootstrap-admin/stats`, 'write', 'svc:clients:read'],
  ])('%s %s with a %s token needs %s', async (method, path, which, scope) => {
    const token = which === 'read' ? readOnly : writeOnly;
    const body = method === 'PUT' || method === 'PATCH' || (method === 'POST' && path === CLIENTS) ? { client_name: 'scope check' } : undefined;
    expectInsufficientScope(await api(t, method, path, { token, body }), path, scope);
    expectInsufficientScope(await api(t, method, path, { token: usersOnly, body }), path, scope);
  });

  it('comes before any lookup: unknown ids get 403, not 404', async () => {
    for (const [method, suffix, scope] of [
      ['PATCH', '', 'svc:clients:write'],
      ['PUT', '', 'svc:clients:write'],
      ['DELETE', '', 'svc:clients:delete'],
      ['POST', '/secret', 'svc:clients:delete'],
      ['POST', '/deactivate', 'svc:clients:write'],
    ] as const) {
      const path = `${CLIENTS}/does-not-exist${suffix}`;
      expectInsufficientScope(await api(t, method, path, { token: readOnly, body: method === 'DELETE' || method === 'POST' ? undefined : { client_name: 'x' } }), path, scope);
    }
    const path = `${CLIENTS}/does-not-exist`;
    expectInsufficientScope(await api(t, 'GET', path, { token: writeOnly }), path, 'svc:clients:read');
  });

  it('comes before body validation: a malformed body without the scope is 403', async () => {
    expectInsufficientScope(await api(t, 'POST', CLIENTS, { token: readOnly, body: '{not json' }), CLIENTS, 'svc:clients:write');
    expectInsufficientScope(await api(t, 'POST', CLIENTS, { token: readOnly, body: { client_name: 'x'.repeat(300) } }), CLIENTS, 'svc:clients:write');
  });

  it('left the bootstrap client untouched', async () => {
    const res = await api(t, 'GET', `${CLIENTS}/bootstrap-admin`, { token: admin });
    expect(res.status).toBe(200);
    expect(res.json.data).toMatchObject({ client_id: 'bootstrap-admin', active: true });
    expect((await postForm(t, '/token', { grant_type: 'client_credentials', resource: RESOURCE, scope: 'svc:clients:read' }, bootstrap)).status).toBe(200);
  });
});

describe('problem shape', () => {
  it('401 and 403 bodies are complete problems', async () => {
    const unauth = expectProblem(await raw('GET', `${CLIENTS}?limit=5`), 401, 'unauthorized', CLIENTS);
    expect(unauth.title).toBe('Unauthorized');
    const readOnly = await t.token('svc:clients:read');
    const forbidden = expectProblem(await api(t, 'POST', `${CLIENTS}?x=1`, { token: readOnly, body: { client_name: 'x' } }), 403, 'insufficient-scope', CLIENTS);
    expect(forbidden.detail).toContain('svc:clients:write');
  });
});
