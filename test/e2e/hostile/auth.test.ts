/**
 * Hostile input, part 1: credentials. Every Management API operation (allOperations) refuses a
 * missing, malformed, foreign, expired or wrong-audience token with 401 and a token without its
 * scope with 403 (before any lookup or validation), and none of it changes storage.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_ID, startTestApp, type TestApp } from '../../helpers/app.js';
import { bootstrap, forgeToken, postForm } from '../../helpers/oauth.js';
import { expectInsufficientScope, expectUnauthorized } from '../../helpers/problem.js';
import {
  ALL_SCOPES, allOperations, expectUnchanged, label, paramOps, pathWith, seedFixture, send, snapshot, validBody, validRequest,
  bodyOps, type Fixture, type Operation, type Snapshot,
} from '../../helpers/hostile.js';

const HIGH = '1000000';
let t: TestApp;
let fx: Fixture;
let admin: string;
let before: Snapshot;
/** Forged or foreign bearer tokens, each wrong in exactly one way. */
const badTokens: Array<[string, string]> = [];
const withoutScope = new Map<string, string>();

const ops = allOperations.map((o) => [label(o), o] as [string, Operation]);

beforeAll(async () => {
  t = await startTestApp({ SECURITY_RATE_LIMIT_READ: HIGH, SECURITY_RATE_LIMIT_WRITE: HIGH, SECURITY_RATE_LIMIT_DELETE: HIGH, SECURITY_RATE_LIMIT_SENSITIVE: HIGH });
  admin = await t.token(ALL_SCOPES);
  fx = await seedFixture(t, async () => admin);

  const scope = ALL_SCOPES.join(' ');
  const now = Math.floor(Date.now() / 1000);
  const opaque = await postForm(t, '/token', { grant_type: 'client_credentials' }, bootstrap);
  expect(opaque.status).toBe(200);
  expect(opaque.json.access_token.split('.')).toHaveLength(1);
  badTokens.push(
    ['signed by another key under the real kid', await forgeToken(t, { scope }, { foreignKey: true })],
    ['signed by another key under an unknown kid', await forgeToken(t, { scope }, { foreignKey: true, kid: 'hostile-unknown-kid' })],
    ['of this issuer for another audience', await forgeToken(t, { scope, aud: 'urn:other:api' })],
    ['of this issuer for an audience list without the API', await forgeToken(t, { scope, aud: ['urn:other:api', BOOTSTRAP_ID] })],
    ['opaque (issued without the API resource)', opaque.json.access_token],
    ['expired an hour ago', await forgeToken(t, { scope, iat: now - 7200, exp: now - 3600 })],
    ['expired a second ago', await forgeToken(t, { scope, iat: now - 60, exp: now - 1 })],
    ['of another issuer', await forgeToken(t, { scope, iss: 'http://evil.example.com/oidc/v1' })],
    ['shaped like an ID token (aud = client, nonce, typ JWT)', await forgeToken(
      t,
      { aud: fx.client.id, azp: fx.client.id, sub: fx.userId, nonce: 'hostile-nonce', auth_time: now - 5, at_hash: 'aGFzaA', scope: undefined, client_id: undefined },
      { typ: 'JWT' },
    )],
    ['shaped like an ID token but carrying the API audience and every scope', await forgeToken(t, { scope, nonce: 'hostile-nonce' }, { typ: 'JWT' })],
    ['without a client_id claim', await forgeToken(t, { scope, client_id: undefined })],
    ['unsigned (alg none)', unsigned({ iss: t.issuer, aud: 'urn:svc:api:v1', client_id: BOOTSTRAP_ID, scope, iat: now, exp: now + 300 })],
  );
  for (const s of ALL_SCOPES) withoutScope.set(s, await t.token(ALL_SCOPES.filter((x) => x !== s)));
  before = await snapshot(t);
});
afterAll(async () => t?.close());

function unsigned(payload: Record<string, unknown>): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${b64({ alg: 'none', typ: 'at+jwt' })}.${b64(payload)}.`;
}

const GARBAGE_HEADERS = [
  `Basic ${Buffer.from(`${BOOTSTRAP_ID}:bootstrap-secret-0123456789abcdef`).toString('base64')}`,
  'Bearer',
  'Bearer ',
  'Bearer a.b',
  'Bearer a.b.c',
  'Bearer e30.e30.',
  'Token abc',
  'bearer',
  'Bearer \u00e4\u00f6\u00fc',
  `Bearer ${'A'.repeat(8192)}`,
];

describe('the forged tokens are wrong in one way only', () => {
  it('the same forging without a defect is accepted', async () => {
    const good = await forgeToken(t, { scope: ALL_SCOPES.join(' ') });
    expect((await send(t, { method: 'GET' }, '/api/v1/audit/types', { token: good })).status).toBe(200);
  });
});

describe.each(ops)('%s', (_name, o) => {
  const request = () => validRequest(o, fx);

  it('without a token: 401 unauthorized with the invalid_token challenge', async () => {
    const { path, body } = request();
    expectUnauthorized(await send(t, o, path, { body }), path);
    if (body) expectUnauthorized(await send(t, o, path, { body: '{"malformed":' }), path);
  });

  it('with a garbage Authorization header: 401', async () => {
    const { path, body } = request();
    for (const authorization of GARBAGE_HEADERS) expectUnauthorized(await send(t, o, path, { body, headers: { authorization } }), path);
    expectUnauthorized(await send(t, o, path, { body, headers: { authorization: `Bearer ${admin} ${admin}` } }), path);
  });

  it('with a foreign, forged, expired or wrong-audience token: 401', async () => {
    const { path, body } = request();
    for (const [what, token] of badTokens) {
      const res = await send(t, o, path, { token, body });
      expect(res.status, `token ${what}: ${res.text}`).toBe(401);
      expectUnauthorized(res, path);
    }
  });

  it(`without its scope ${o.scope}: 403 insufficient-scope naming it`, async () => {
    const { path, body } = request();
    expectInsufficientScope(await send(t, o, path, { token: withoutScope.get(o.scope)!, body }), path, o.scope);
  });
});

describe.each(paramOps.map((o) => [label(o), o] as [string, Operation]))('%s', (_name, o) => {
  it('without its scope, for unknown ids too (scope before lookup): 403', async () => {
    for (const id of ['hostile-unknown-id', encodeURIComponent("x' OR '1'='1"), 'x'.repeat(300)]) {
      const path = pathWith(o, id);
      expectInsufficientScope(await send(t, o, path, { token: withoutScope.get(o.scope)!, body: validBody(o) }), path, o.scope);
    }
  });
});

describe.each(bodyOps.map((o) => [label(o), o] as [string, Operation]))('%s', (_name, o) => {
  it('without its scope, before body validation: 403 for malformed, wrongly typed or oversized fields', async () => {
    const { path } = validRequest(o, fx);
    const token = withoutScope.get(o.scope)!;
    for (const body of ['{"malformed":', '[]', '42', { hostile_unknown_field: 1 }, { ...validBody(o), client_name: 'x'.repeat(300), email: 42 }]) {
      expectInsufficientScope(await send(t, o, path, { token, body }), path, o.scope);
    }
    const res = await send(t, o, path, { token, body: JSON.stringify(validBody(o)), headers: { 'content-type': 'text/plain' } });
    expectInsufficientScope(res, path, o.scope);
  });
});

describe('storage after every refused request', () => {
  it('is unchanged: records, counts, keys, sessions and admin audit entries', async () => {
    // The snapshot holds the seeded records, so "unchanged" is not vacuous.
    expect(before.counts).toMatchObject({ clients: 2, users: 2, registrationTokens: 2, sessions: 2 });
    expect(Object.keys(before.audit).length).toBeGreaterThan(3);
    expectUnchanged(before, await snapshot(t));
  });
});
