/**
 * The five token endpoint client authentication methods (spec 5 rule 2) on the actor's fast paths
 * (client_credentials for the Management API, introspection), driven by openid-client, and the
 * answers compared with oidc-provider's own for the same requests (TenantActor.bridge).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpRequest, HttpResponse } from '../../src/http/types.js';
import type { TenantActor } from '../../src/tenancy/actor.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { RESOURCE, createClient, introspect, peekJwt, postForm, serviceClient, tokenFor, type Credentials } from '../helpers/oauth.js';

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const SCOPE = 'svc:clients:read';

let t: TestApp;
let admin: string;
let actor: TenantActor;

beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('svc:clients:read svc:clients:write');
  actor = await t.app.pool.get('default');
});
afterAll(async () => t?.close());

/** openid-client configured for one client of the service (discovery by hand, plain HTTP allowed). */
function rp(clientId: string, auth: client.ClientAuth): client.Configuration {
  const config = new client.Configuration(
    { issuer: t.issuer, token_endpoint: `${t.issuer}/token`, introspection_endpoint: `${t.issuer}/token/introspection` },
    clientId,
    undefined,
    auth,
  );
  client.allowInsecureRequests(config);
  return config;
}

/** openid-client reports a 401 with a WWW-Authenticate challenge as the challenge (Basic), else as the error body. */
async function expectInvalidClient(promise: Promise<unknown>): Promise<void> {
  const err = (await promise.then(
    () => undefined,
    (e: unknown) => e,
  )) as { status?: number; error?: string; cause?: Array<{ scheme: string; parameters: Record<string, string> }> } | undefined;
  expect(err?.status).toBe(401);
  const challenge = Array.isArray(err?.cause) ? err.cause[0] : undefined;
  expect(challenge ? challenge.parameters.error : err?.error).toBe('invalid_client');
  if (challenge) expect(challenge).toMatchObject({ scheme: 'basic', parameters: { realm: t.issuer, error_description: 'client authentication failed' } });
}

interface AssertionOptions {
  alg: string;
  key: CryptoKey | Uint8Array;
  kid?: string;
  iss?: string;
  sub?: string;
  aud?: string | string[];
  exp?: number | null;
  jti?: string | null;
}

async function assertion(clientId: string, o: AssertionOptions): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = { iss: o.iss ?? clientId, sub: o.sub ?? clientId, aud: o.aud ?? t.issuer, iat: now };
  if (o.exp !== null) claims.exp = o.exp ?? now + 60;
  if (o.jti !== null) claims.jti = o.jti ?? randomUUID();
  const jwt = new SignJWT(claims).setProtectedHeader({ alg: o.alg, ...(o.kid ? { kid: o.kid } : {}) });
  return jwt.sign(o.key);
}

/** client_credentials for the Management API with a client assertion (the fast path). */
function tokenWithAssertion(token: string, extra: Record<string, string> = {}) {
  return postForm(t, '/token', { grant_type: 'client_credentials', resource: RESOURCE, scope: SCOPE, client_assertion_type: ASSERTION_TYPE, client_assertion: token, ...extra });
}

interface KeyPair {
  alg: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function keyPair(alg: 'RS256' | 'ES256' | 'EdDSA' | 'PS256', kid = randomBytes(4).toString('hex')): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}) });
  return { alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, use: 'sig' } };
}

async function privateKeyJwtClient(keys: KeyPair[] | { jwks_uri: string }): Promise<string> {
  const data = await createClient(t, admin, {
    client_name: `pkjwt ${randomBytes(3).toString('hex')}`,
    grant_types: ['client_credentials'],
    scope: SCOPE,
    token_endpoint_auth_method: 'private_key_jwt',
    ...(Array.isArray(keys) ? { jwks: { keys: keys.map((k) => k.jwk) } } : keys),
  });
  return data.client_id as string;
}

async function secretJwtClient(): Promise<Credentials> {
  return serviceClient(t, admin, SCOPE, { token_endpoint_auth_method: 'client_secret_jwt' });
}

describe('client_secret_basic and client_secret_post (openid-client)', () => {
  it.each([
    ['client_secret_basic', client.ClientSecretBasic],
    ['client_secret_post', client.ClientSecretPost],
  ] as const)('%s gets a Management token and introspects it; a wrong secret is invalid_client', async (method, make) => {
    const c = await serviceClient(t, admin, SCOPE, { token_endpoint_auth_method: method });
    const tokens = await client.clientCredentialsGrant(rp(c.id, make(c.secret)), { scope: SCOPE, resource: RESOURCE });
    expect(peekJwt(tokens.access_token).payload).toMatchObject({ client_id: c.id, aud: RESOURCE, scope: SCOPE });
    const info = await client.tokenIntrospection(rp(c.id, make(c.secret)), tokens.access_token);
    expect(info).toMatchObject({ active: true, client_id: c.id, scope: SCOPE });
    await expectInvalidClient(client.clientCredentialsGrant(rp(c.id, make('not-the-secret')), { scope: SCOPE, resource: RESOURCE }));
  });
});

describe('client_secret_jwt', () => {
  let c: Credentials;
  const hmac = () => new TextEncoder().encode(c.secret);
  beforeAll(async () => {
    c = await secretJwtClient();
  });

  it('gets a Management token and introspects with openid-client ClientSecretJwt (HS256)', async () => {
    const tokens = await client.clientCredentialsGrant(rp(c.id, client.ClientSecretJwt(c.secret)), { scope: SCOPE, resource: RESOURCE });
    expect(peekJwt(tokens.access_token).payload).toMatchObject({ sub: c.id, client_id: c.id, aud: RESOURCE });
    const info = await client.tokenIntrospection(rp(c.id, client.ClientSecretJwt(c.secret)), tokens.access_token);
    expect(info).toMatchObject({ active: true, client_id: c.id, scope: SCOPE });
  });

  it.each(['HS384', 'HS512'])('accepts %s and the token endpoint URL as audience', async (alg) => {
    const res = await tokenWithAssertion(await assertion(c.id, { alg, key: hmac(), aud: `${t.issuer}/token` }));
    expect(res.status).toBe(200);
  });

  it('refuses a wrong secret, an expired assertion, a wrong audience, iss other than the client, no jti', async () => {
    const now = Math.floor(Date.now() / 1000);
    const bad = [
      await assertion(c.id, { alg: 'HS256', key: new TextEncoder().encode('not-the-secret-of-this-client-0123') }),
      await assertion(c.id, { alg: 'HS256', key: hmac(), exp: now - 60 }),
      await assertion(c.id, { alg: 'HS256', key: hmac(), aud: 'https://elsewhere.example/token' }),
      await assertion(c.id, { alg: 'HS256', key: hmac(), iss: 'someone-else' }),
      await assertion(c.id, { alg: 'HS256', key: hmac(), jti: null }),
      await assertion(c.id, { alg: 'HS256', key: hmac(), exp: null }),
    ];
    for (const token of bad) {
      const res = await tokenWithAssertion(token);
      expect(res.status).toBe(401);
      expect(res.json).toEqual({ error: 'invalid_client', error_description: 'client authentication failed' });
      expect(res.headers.get('www-authenticate')).toBeNull();
    }
  });

  it('refuses a replayed jti, also on the endpoints oidc-provider serves', async () => {
    const token = await assertion(c.id, { alg: 'HS256', key: hmac() });
    expect((await tokenWithAssertion(token)).status).toBe(200);
    expect((await tokenWithAssertion(token)).json.error).toBe('invalid_client');
    // Same replay store as oidc-provider's: an opaque token request (no resource) goes to oidc-provider.
    const slow = await postForm(t, '/token', { grant_type: 'client_credentials', client_assertion_type: ASSERTION_TYPE, client_assertion: token });
    expect(slow.status).toBe(401);
    expect(slow.json.error).toBe('invalid_client');
    // ...and the other way round.
    const first = await assertion(c.id, { alg: 'HS256', key: hmac() });
    expect((await postForm(t, '/token', { grant_type: 'client_credentials', client_assertion_type: ASSERTION_TYPE, client_assertion: first })).status).toBe(200);
    expect((await tokenWithAssertion(first)).json.error).toBe('invalid_client');
  });

  it('refuses an asymmetric alg for a client_secret_jwt client', async () => {
    const k = await keyPair('RS256');
    expect((await tokenWithAssertion(await assertion(c.id, { alg: 'RS256', key: k.privateKey }))).json.error).toBe('invalid_client');
  });
});

describe('private_key_jwt with registered jwks', () => {
  it.each(['RS256', 'PS256', 'ES256', 'EdDSA'] as const)('gets a Management token with openid-client PrivateKeyJwt (%s) and introspects', async (alg) => {
    const k = await keyPair(alg);
    const id = await privateKeyJwtClient([k]);
    const auth = () =>
      client.PrivateKeyJwt(
        { key: k.privateKey, kid: k.jwk.kid },
        // openid-client names Ed25519 keys' alg "Ed25519"; the service (like oidc-provider 9) uses "EdDSA".
        { [client.modifyAssertion]: (header: Record<string, unknown>) => void (header.alg === 'Ed25519' && (header.alg = 'EdDSA')) },
      );
    const tokens = await client.clientCredentialsGrant(rp(id, auth()), { scope: SCOPE, resource: RESOURCE });
    expect(peekJwt(tokens.access_token).payload).toMatchObject({ client_id: id, sub: id });
    expect(await client.tokenIntrospection(rp(id, auth()), tokens.access_token)).toMatchObject({ active: true, client_id: id });
  });

  it('refuses a key it does not know, an expired assertion, a wrong audience, a replayed jti', async () => {
    const k = await keyPair('ES256');
    const id = await privateKeyJwtClient([k]);
    const other = await keyPair('ES256', k.jwk.kid);
    const now = Math.floor(Date.now() / 1000);
    for (const token of [
      await assertion(id, { alg: 'ES256', key: other.privateKey, kid: k.jwk.kid }),
      await assertion(id, { alg: 'ES256', key: k.privateKey, exp: now - 30 }),
      await assertion(id, { alg: 'ES256', key: k.privateKey, aud: [`${t.url}/oidc/v1`, 'https://elsewhere.example'] }),
      await assertion(id, { alg: 'HS256', key: new TextEncoder().encode('x'.repeat(32)) }),
    ]) {
      const res = await tokenWithAssertion(token);
      expect(res.status).toBe(401);
      expect(res.json).toEqual({ error: 'invalid_client', error_description: 'client authentication failed' });
    }
    const once = await assertion(id, { alg: 'ES256', key: k.privateKey, aud: [t.issuer, 'https://elsewhere.example'] });
    expect((await tokenWithAssertion(once)).status).toBe(200);
    expect((await tokenWithAssertion(once)).status).toBe(401);
  });

  it('answers malformed assertion requests with invalid_request like oidc-provider', async () => {
    const k = await keyPair('ES256');
    const id = await privateKeyJwtClient([k]);
    const good = await assertion(id, { alg: 'ES256', key: k.privateKey });
    const cases: Array<[Record<string, string>, string]> = [
      [{ client_assertion: 'not-a-jwt', client_assertion_type: ASSERTION_TYPE }, 'invalid client_assertion format'],
      [{ client_assertion: good }, 'client_assertion_type must be provided'],
      [{ client_assertion: good, client_assertion_type: 'urn:other' }, `client_assertion_type must have value ${ASSERTION_TYPE}`],
      [{ client_assertion: good, client_assertion_type: ASSERTION_TYPE, client_id: 'someone-else' }, 'client_id mismatch'],
      [{ client_assertion: good, client_assertion_type: ASSERTION_TYPE, client_secret: 'also-a-secret' }, 'client authentication must only be provided using one mechanism'],
    ];
    for (const [fields, description] of cases) {
      const res = await postForm(t, '/token', { grant_type: 'client_credentials', resource: RESOURCE, scope: SCOPE, ...fields });
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ error: 'invalid_request', error_description: description });
    }
  });
});

describe('private_key_jwt with jwks_uri', () => {
  let server: Server;
  let uri: string;
  let served: JWK[] = [];
  let fetches = 0;
  beforeAll(async () => {
    server = createServer((_req, res) => {
      fetches++;
      res.setHeader('content-type', 'application/json');
      res.setHeader('cache-control', 'max-age=300');
      res.end(JSON.stringify({ keys: served }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    uri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
  });
  afterAll(async () => new Promise<void>((resolve) => server.close(() => resolve())));

  it('fetches the set once and verifies with it while it is fresh', async () => {
    const k = await keyPair('RS256');
    served = [k.jwk];
    const id = await privateKeyJwtClient({ jwks_uri: uri });
    const before = fetches;
    for (let i = 0; i < 3; i++) {
      const res = await tokenWithAssertion(await assertion(id, { alg: 'RS256', key: k.privateKey, kid: k.jwk.kid }));
      expect(res.status).toBe(200);
    }
    expect(fetches - before).toBe(1);
    // A key the fresh set does not have is refused without refetching (oidc-provider's rule).
    const unknown = await keyPair('RS256');
    served = [k.jwk, unknown.jwk];
    expect((await tokenWithAssertion(await assertion(id, { alg: 'RS256', key: unknown.privateKey, kid: unknown.jwk.kid }))).status).toBe(401);
    expect(fetches - before).toBe(1);
  });

  it('is fetched under the same outbound rule where oidc-provider authenticates the client (loopback allowed here): the same answer at every endpoint', async () => {
    const k = await keyPair('ES256');
    served = [k.jwk];
    const id = await privateKeyJwtClient({ jwks_uri: uri });
    const signed = () => assertion(id, { alg: 'ES256', key: k.privateKey, kid: k.jwk.kid });
    const auth = async () => ({ client_assertion_type: ASSERTION_TYPE, client_assertion: await signed() });
    expect((await tokenWithAssertion(await signed())).status).toBe(200); // the actor's path
    // oidc-provider's paths: an opaque token of the client's own, introspection and revocation.
    const opaque = await postForm(t, '/token', { grant_type: 'client_credentials', ...(await auth()) });
    expect(opaque.status, JSON.stringify(opaque.json)).toBe(200);
    const seen = await postForm(t, '/token/introspection', { token: 'not-a-token', ...(await auth()) });
    expect(seen.status, JSON.stringify(seen.json)).toBe(200);
    expect(seen.json).toEqual({ active: false });
    expect((await postForm(t, '/token/revocation', { token: 'not-a-token', ...(await auth()) })).status).toBe(200);
  });
});

describe('introspection with the other secret method (Basic for a client_secret_post client, and the reverse)', () => {
  it("answers as oidc-provider does for any token: the status never tells whether a string is one of the actor's tokens", async () => {
    for (const method of ['client_secret_basic', 'client_secret_post'] as const) {
      const c = await serviceClient(t, admin, SCOPE, { token_endpoint_auth_method: method });
      // Each token asked for with the registered method, then introspected with the other one.
      const own = (path: string, form: Record<string, string>) =>
        method === 'client_secret_basic' ? postForm(t, path, form, c) : postForm(t, path, { ...form, client_id: c.id, client_secret: c.secret });
      const other = (token: string) =>
        method === 'client_secret_basic' ? postForm(t, '/token/introspection', { token, client_id: c.id, client_secret: c.secret }) : postForm(t, '/token/introspection', { token }, c);
      const jwt = (await own('/token', { grant_type: 'client_credentials', resource: RESOURCE, scope: SCOPE })).json.access_token as string;
      const opaque = (await own('/token', { grant_type: 'client_credentials' })).json.access_token as string;
      const answers = await Promise.all([jwt, opaque, 'not-a-token'].map(other));
      expect(answers.map((r) => r.status), method).toEqual([200, 200, 200]);
      expect(answers.map((r) => r.json.active)).toEqual([true, true, false]);
    }
  });
});

describe('a client made confidential without a secret yet', () => {
  it('answers 401 invalid_client at every endpoint (not 400 invalid_client_metadata) until POST /secret gives it one', async () => {
    const pub = await createClient(t, admin, { client_name: 'was public', token_endpoint_auth_method: 'none', redirect_uris: ['https://app.example.com/cb'], grant_types: ['authorization_code'] });
    const patched = await fetch(`${t.url}/api/v1/clients/${pub.client_id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ token_endpoint_auth_method: 'client_secret_basic', grant_types: ['authorization_code', 'client_credentials'], scope: SCOPE }),
    });
    expect(patched.status).toBe(200);
    const guess: Credentials = { id: pub.client_id as string, secret: 'any-guess' };
    for (const [path, form] of [['/token', { grant_type: 'client_credentials' }], ['/token', { grant_type: 'client_credentials', resource: RESOURCE, scope: SCOPE }], ['/token/introspection', { token: 'x' }], ['/token/revocation', { token: 'x' }]] as const) {
      const res = await postForm(t, path, form, guess);
      expect(res.status, `${path} ${JSON.stringify(res.json)}`).toBe(401);
      expect(res.json.error).toBe('invalid_client');
    }
    const rotator = await t.token(`svc:clients:delete svc:clients:write ${SCOPE}`);
    const rotated = await fetch(`${t.url}/api/v1/clients/${pub.client_id}/secret`, { method: 'POST', headers: { authorization: `Bearer ${rotator}` } });
    expect(rotated.status).toBe(200);
    const secret = (await rotated.json()).data.client_secret as string;
    expect((await postForm(t, '/token', { grant_type: 'client_credentials' }, { id: guess.id, secret })).status).toBe(200);
  });
});

describe('none (public clients)', () => {
  it('cannot use client_credentials, and only learns about its own tokens at introspection', async () => {
    const pub = await createClient(t, admin, { client_name: 'public', application_type: 'spa', redirect_uris: ['http://localhost:5173/cb'], grant_types: ['authorization_code'] });
    expect(pub.token_endpoint_auth_method).toBe('none');
    const cc = await postForm(t, '/token', { grant_type: 'client_credentials', resource: RESOURCE, scope: SCOPE, client_id: pub.client_id });
    expect(cc.status).toBe(400);
    expect(cc.json.error).toBe('unauthorized_client');

    const someone = await serviceClient(t, admin, SCOPE);
    const jwt = await tokenFor(t, someone, SCOPE);
    const config = rp(pub.client_id, client.None());
    expect(await client.tokenIntrospection(config, jwt)).toEqual({ active: false });
    const opaque = (await postForm(t, '/token', { grant_type: 'client_credentials' }, someone)).json.access_token as string;
    expect(peekJwt.bind(null, opaque)).toThrow();
    expect(await client.tokenIntrospection(config, opaque)).toEqual({ active: false });
    // The owner sees both active.
    expect((await introspect(t, jwt, someone)).json.active).toBe(true);
    expect((await introspect(t, opaque, someone)).json.active).toBe(true);
  });
});

describe('the same answers as oidc-provider', () => {
  let c: Credentials;
  beforeAll(async () => {
    c = await serviceClient(t, admin, SCOPE);
  });

  const request = (path: string, form: Record<string, string>, headers: Record<string, string> = {}): HttpRequest => {
    const body = Buffer.from(new URLSearchParams(form).toString());
    return {
      id: 'parity',
      method: 'POST',
      path: `/oidc/v1${path}`,
      rawQuery: '',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(body.length), host: new URL(t.issuer).host, ...headers },
      ip: '127.0.0.1',
      body,
      params: {},
    };
  };
  const basic = (id: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` });
  const view = (res: HttpResponse) => ({
    status: res.status,
    body: JSON.parse(String(res.body)) as unknown,
    cacheControl: res.headers?.['cache-control'],
    contentType: res.headers?.['content-type'],
    challenge: res.headers?.['www-authenticate'],
  });

  it('for an opaque client_credentials token, byte for byte', async () => {
    const opaque = (await postForm(t, '/token', { grant_type: 'client_credentials' }, c)).json.access_token as string;
    const req = request('/token/introspection', { token: opaque }, basic(c.id, c.secret));
    const fast = await actor.handleOidc(req);
    const slow = await actor.bridge(req);
    expect(view(fast)).toEqual(view(slow));
    expect(String(fast.body)).toBe(String(slow.body));
    expect(view(fast).body).toMatchObject({ active: true, client_id: c.id, token_type: 'Bearer' });
  });

  it('for an opaque token after the client secret was regenerated (the sgen extra claim)', async () => {
    const d = await serviceClient(t, admin, SCOPE);
    const regen = await postForm(t, '/token', { grant_type: 'client_credentials' }, d);
    expect(regen.status).toBe(200);
    const rotated = await fetch(`${t.url}/api/v1/clients/${d.id}/secret`, { method: 'POST', headers: { authorization: `Bearer ${await t.token(`svc:clients:delete svc:clients:write ${SCOPE}`)}` } });
    expect(rotated.status).toBe(200);
    const secret = ((await rotated.json()) as { data: { client_secret: string } }).data.client_secret;
    const opaque = (await postForm(t, '/token', { grant_type: 'client_credentials' }, { id: d.id, secret })).json.access_token as string;
    const req = request('/token/introspection', { token: opaque }, basic(d.id, secret));
    const fast = await actor.handleOidc(req);
    expect(String(fast.body)).toBe(String((await actor.bridge(req)).body));
    expect(JSON.parse(String(fast.body))).toMatchObject({ active: true, sgen: 1 });
  });

  type Case = [string, () => Record<string, string>, () => Record<string, string>];
  const none = () => ({});
  it.each<Case>([
    ['a wrong Basic secret', () => basic(c.id, 'wrong'), none],
    ['an unknown client', () => basic('no-such-client', 'whatever'), none],
    ['no client authentication', none, none],
    ['a Bearer header', () => ({ authorization: 'Bearer abc' }), none],
    ['Basic without a colon', () => ({ authorization: `Basic ${Buffer.from('justid').toString('base64')}` }), none],
    ['Basic and client_secret both', () => basic(c.id, c.secret), () => ({ client_secret: c.secret })],
    ['Basic and a mismatching client_id', () => basic(c.id, c.secret), () => ({ client_id: 'other' })],
    ['an empty Basic secret', () => ({ authorization: `Basic ${Buffer.from(`${c.id}:`).toString('base64')}` }), none],
    ['a JSON content type', () => ({ ...basic(c.id, c.secret), 'content-type': 'application/json' }), none],
  ])('for %s at introspection', async (_name, headers, extra) => {
    const opaque = (await postForm(t, '/token', { grant_type: 'client_credentials' }, c)).json.access_token as string;
    const req = request('/token/introspection', { token: opaque, ...extra() }, headers());
    expect(view(await actor.handleOidc(req))).toEqual(view(await actor.bridge(req)));
  });

  it('for failed client assertions at the token endpoint', async () => {
    const s = await secretJwtClient();
    const key = new TextEncoder().encode(s.secret);
    const now = Math.floor(Date.now() / 1000);
    for (const make of [
      () => assertion(s.id, { alg: 'HS256', key: new TextEncoder().encode('wrong-secret-0123456789abcdef-xyz') }),
      () => assertion(s.id, { alg: 'HS256', key, exp: now - 100 }),
      () => assertion(s.id, { alg: 'HS256', key, aud: 'https://other.example' }),
      () => assertion(s.id, { alg: 'HS256', key, sub: 'no-such-client' }),
    ]) {
      // Two assertions alike but for the jti, so neither answer is a replay.
      const fastReq = request('/token', { grant_type: 'client_credentials', resource: RESOURCE, scope: SCOPE, client_assertion_type: ASSERTION_TYPE, client_assertion: await make() });
      const slowReq = request('/token', { grant_type: 'client_credentials', resource: RESOURCE, scope: SCOPE, client_assertion_type: ASSERTION_TYPE, client_assertion: await make() });
      expect(view(await actor.handleOidc(fastReq))).toEqual(view(await actor.bridge(slowReq)));
    }
  });
});
