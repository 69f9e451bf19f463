/**
 * The direct refresh_token grant (src/oidc/refresh-grant.ts, issue 17) against oidc-provider's own
 * answers. A refresh token can be used once, so each case signs in twice with the same client,
 * scope and session: one refresh token goes to the product (TenantActor.handleOidc, a spy on the
 * bridge tells whether oidc-provider was involved), its twin to oidc-provider (TenantActor.bridge).
 * The two answers, ID tokens and stored artefacts (the successor refresh token, the access token,
 * the consumed token) must be alike in everything but the values that are new per token; each
 * side's tokens must then work on the other side. Every refusal is oidc-provider's own.
 */
import { randomBytes } from 'node:crypto';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { HttpRequest, HttpResponse } from '../../src/http/types.js';
import { bearerProtector } from '../../src/oidc/bearer-at-rest.js';
import type { TenantActor } from '../../src/tenancy/actor.js';
import { configChangedChannel } from '../../src/events/bus.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { HttpSession, type CodeFlowClient, type CodeFlowOptions } from '../helpers/code-flow.js';
import { userinfoRequest } from '../helpers/userinfo-parity.js';
import { createUser, type TestUser } from '../helpers/users.js';

const REDIRECT = 'http://127.0.0.1:65532/cb';

let t: TestApp;
let admin: string;
let user: TestUser;
let session: HttpSession;
let basic: CodeFlowClient;

type Json = Record<string, any>;

async function newClient(extra: Record<string, unknown> = {}): Promise<CodeFlowClient> {
  const res = await api(t, 'POST', '/api/v1/clients', {
    token: admin,
    body: {
      client_name: `rp ${randomBytes(3).toString('hex')}`,
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid profile email roles offline_access',
      first_party: true,
      ...extra,
    },
  });
  if (res.status !== 201) throw new Error(`client: ${res.status} ${res.text}`);
  return { client_id: res.json.data.client_id, client_secret: res.json.data.client_secret, redirect_uri: REDIRECT };
}

beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('svc:clients:write svc:clients:delete svc:users:write svc:resources:write');
  user = await createUser(t, { email_verified: true, nickname: 'ada' });
  session = new HttpSession(t.issuer, user);
  basic = await newClient();
});
afterAll(async () => t?.close());

const actor = (): Promise<TenantActor> => t.app.pool.get('default');

interface TokenRequest {
  client: CodeFlowClient;
  refreshToken: string;
  /** Send the secret in the body (client_secret_post) instead of the Authorization header. */
  post?: boolean;
  secret?: string;
  extra?: Record<string, string>;
  headers?: Record<string, string>;
}

function tokenRequest(o: TokenRequest): HttpRequest {
  const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: o.refreshToken, ...o.extra });
  const headers: Record<string, string> = { host: new URL(t.issuer).host, 'content-type': 'application/x-www-form-urlencoded', ...o.headers };
  const secret = o.secret ?? o.client.client_secret;
  if (!secret) form.set('client_id', o.client.client_id);
  else if (o.post) {
    form.set('client_id', o.client.client_id);
    form.set('client_secret', secret);
  } else headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(o.client.client_id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
  const body = Buffer.from(form.toString());
  headers['content-length'] = String(body.length);
  return { id: 'refresh-parity', method: 'POST', path: '/oidc/v1/token', rawQuery: '', headers, ip: '127.0.0.1', body, params: {} };
}

/** The product's answer, and whether oidc-provider was asked. */
async function viaProduct(req: HttpRequest): Promise<{ res: HttpResponse; direct: boolean; json: Json }> {
  const a = await actor();
  const spy = vi.spyOn(a, 'bridge');
  try {
    const res = await a.handleOidc(req);
    return { res, direct: spy.mock.calls.length === 0, json: JSON.parse(String(res.body)) };
  } finally {
    spy.mockRestore();
  }
}

async function viaStock(req: HttpRequest): Promise<{ res: HttpResponse; json: Json }> {
  const res = await (await actor()).bridge(req);
  return { res, json: JSON.parse(String(res.body)) };
}

const decode = (jwt: string) => jwt.split('.').slice(0, 2).map((p) => JSON.parse(Buffer.from(p, 'base64url').toString())) as [Json, Json];

/** A stored artefact's payload (refresh tokens under their keyed id, bearer-at-rest.ts). */
async function storedRow(model: 'RefreshToken' | 'AccessToken', value: string) {
  const id = model === 'RefreshToken' ? bearerProtector(t.app.ctx.sealer).storedId('default', model, value) : value;
  return t.app.ctx.storage.oidc.find('default', model, id);
}

/** Removes the members that are new per token, checking they are there. */
function shape(payload: Json, fresh: readonly string[]): Json {
  const out: Json = {};
  for (const [k, v] of Object.entries(payload)) {
    if (fresh.includes(k)) expect(v, k).toBeDefined();
    else out[k] = v;
  }
  return out;
}

/** Two refresh tokens of the same shape (same client, scope and session), each from its own sign-in. */
async function twins(client: CodeFlowClient, scope: string, opts: Partial<CodeFlowOptions> = {}) {
  const one = await session.tokens(client, { scope, ...opts });
  const two = await session.tokens(client, { scope, ...opts });
  expect(one.refresh_token && two.refresh_token).toBeTruthy();
  return [one.refresh_token!, two.refresh_token!] as const;
}

/** One refresh through each side, compared; returns both answers. */
async function compareRefresh(client: CodeFlowClient, scope: string, o: { post?: boolean; nonce?: string } = {}) {
  const [mine, theirs] = await twins(client, scope, o.nonce ? { nonce: o.nonce } : {});
  const product = await viaProduct(tokenRequest({ client, refreshToken: mine, post: o.post }));
  const stock = await viaStock(tokenRequest({ client, refreshToken: theirs, post: o.post }));
  expect(product.direct).toBe(true);
  expect(product.res.status).toBe(200);
  expect(stock.res.status).toBe(200);
  for (const h of ['content-type', 'cache-control']) expect(product.res.headers?.[h], h).toBe(stock.res.headers?.[h]);

  // The answer: the same members in the same order; equal but for the new token values.
  expect(Object.keys(product.json)).toEqual(Object.keys(stock.json));
  expect(shape(product.json, ['access_token', 'refresh_token', 'id_token'])).toEqual(shape(stock.json, ['access_token', 'refresh_token', 'id_token']));
  expect(product.json.access_token.length).toBe(stock.json.access_token.length);
  expect(product.json.refresh_token.length).toBe(stock.json.refresh_token.length);

  if (stock.json.id_token !== undefined) {
    const [ph, pp] = decode(product.json.id_token);
    const [sh, sp] = decode(stock.json.id_token);
    expect(ph).toEqual(sh);
    expect(Object.keys(pp)).toEqual(Object.keys(sp));
    expect(pp.exp - pp.iat).toBe(sp.exp - sp.iat);
    expect(shape(pp, ['iat', 'exp'])).toEqual(shape(sp, ['iat', 'exp']));
  }

  // Stored: the successor refresh token and the access token, alike but for ids and times.
  const [prt, srt] = [await storedRow('RefreshToken', product.json.refresh_token), await storedRow('RefreshToken', stock.json.refresh_token)];
  expect(Object.keys(prt!.payload)).toEqual(Object.keys(srt!.payload));
  const rtFresh = ['iat', 'exp', 'iiat', 'grantId', 'jti_sealed'];
  expect(shape(prt!.payload, rtFresh)).toEqual(shape(srt!.payload, rtFresh));
  expect((prt!.payload.exp as number) - (prt!.payload.iat as number)).toBe((srt!.payload.exp as number) - (srt!.payload.iat as number));
  const [pat, sat] = [await storedRow('AccessToken', product.json.access_token), await storedRow('AccessToken', stock.json.access_token)];
  expect(Object.keys(pat!.payload)).toEqual(Object.keys(sat!.payload));
  const atFresh = ['iat', 'exp', 'jti', 'grantId'];
  expect(shape(pat!.payload, atFresh)).toEqual(shape(sat!.payload, atFresh));
  expect(pat!.payload.jti).toBe(product.json.access_token);
  expect(pat!.expires_at).toBe(pat!.payload.exp);
  expect(prt!.expires_at).toBe(prt!.payload.exp);
  // Both used tokens are consumed.
  expect((await storedRow('RefreshToken', mine))?.consumed).toBe(true);
  expect((await storedRow('RefreshToken', theirs))?.consumed).toBe(true);
  return { product, stock };
}

describe('served directly, as oidc-provider answers', () => {
  it('openid offline_access with client_secret_basic; the product-issued tokens work at oidc-provider', async () => {
    const { product, stock } = await compareRefresh(basic, 'openid offline_access');
    const [, claims] = decode(product.json.id_token);
    expect(claims).toMatchObject({ sub: user.id, aud: basic.client_id, iss: t.issuer });
    expect(claims).not.toHaveProperty('nonce');

    // Each side's successor works on the other side, and the access token at oidc-provider's userinfo.
    const again = await viaStock(tokenRequest({ client: basic, refreshToken: product.json.refresh_token }));
    expect(again.res.status, String(again.res.body)).toBe(200);
    const cross = await viaProduct(tokenRequest({ client: basic, refreshToken: stock.json.refresh_token }));
    expect(cross).toMatchObject({ direct: true, res: { status: 200 } });
    const info = await (await actor()).bridge(userinfoRequest(new URL(t.issuer).host, product.json.access_token));
    expect(info.status).toBe(200);
    expect(JSON.parse(String(info.body))).toEqual({ sub: user.id });
  });

  it('profile, email and roles: the same claims in the ID token, the roles claim on the access token', async () => {
    const { product } = await compareRefresh(basic, 'openid profile email roles offline_access');
    const [, claims] = decode(product.json.id_token);
    expect(claims).toMatchObject({ sub: user.id, email: user.email, email_verified: true, nickname: 'ada', roles: ['user'] });
    expect((await storedRow('AccessToken', product.json.access_token))!.payload.extra).toEqual({ roles: ['user'] });
  });

  it('the nonce of the sign-in stays in the refreshed ID token', async () => {
    const { product } = await compareRefresh(basic, 'openid email offline_access', { nonce: 'n-0S6_WzA2Mj' });
    expect(decode(product.json.id_token)[1].nonce).toBe('n-0S6_WzA2Mj');
  });

  it('client_secret_post, a public client (none), a pairwise client, a client with a rotated secret (sgen)', async () => {
    await compareRefresh(await newClient({ token_endpoint_auth_method: 'client_secret_post' }), 'openid offline_access', { post: true });
    const spa = await newClient({ token_endpoint_auth_method: 'none' });
    expect(spa.client_secret).toBeUndefined();
    await compareRefresh(spa, 'openid offline_access');
    const pairwise = await newClient({ subject_type: 'pairwise' });
    const { product } = await compareRefresh(pairwise, 'openid email offline_access');
    expect(decode(product.json.id_token)[1].sub).not.toBe(user.id);

    const rotated = await newClient();
    const res = await api(t, 'POST', `/api/v1/clients/${rotated.client_id}/secret`, { token: admin });
    expect(res.status, res.text).toBe(200);
    rotated.client_secret = res.json.data.client_secret;
    const out = await compareRefresh(rotated, 'openid offline_access');
    expect((await storedRow('AccessToken', out.product.json.access_token))!.payload.extra).toEqual({ sgen: 1 });
  });

  it('the tenant custom claims in the ID token and on the access token', async () => {
    const put = await api(t, 'PUT', '/api/v1/claims', { token: admin, body: { claims: [{ name: 'tenant', value: 'acme' }, { name: 'nick', from: 'nickname' }] } });
    expect(put.status, put.text).toBe(200);
    try {
      await (await actor()).discovery(); // oidc-provider rebuilt with the new claims
      const { product } = await compareRefresh(basic, 'openid email offline_access');
      expect(decode(product.json.id_token)[1]).toMatchObject({ tenant: 'acme', nick: 'ada' });
      expect((await storedRow('AccessToken', product.json.access_token))!.payload.extra).toMatchObject({ tenant: 'acme', nick: 'ada' });
    } finally {
      expect((await api(t, 'PUT', '/api/v1/claims', { token: admin, body: { claims: [] } })).status).toBe(200);
    }
  });

  it('through the front door with openid-client, without oidc-provider', async () => {
    const tokens = await session.tokens(basic, { scope: 'openid email offline_access' });
    const config = new oidc.Configuration(
      { issuer: t.issuer, token_endpoint: `${t.issuer}/token`, userinfo_endpoint: `${t.issuer}/userinfo` },
      basic.client_id,
      basic.client_secret,
      oidc.ClientSecretBasic(basic.client_secret!),
    );
    oidc.allowInsecureRequests(config);
    const a = await actor();
    const spy = vi.spyOn(a, 'bridge');
    try {
      let rt = tokens.refresh_token!;
      for (let i = 0; i < 3; i++) {
        const next = await oidc.refreshTokenGrant(config, rt);
        expect(next.claims()).toMatchObject({ sub: user.id, email: user.email });
        expect(next.refresh_token).not.toBe(rt);
        rt = next.refresh_token!;
        expect(await oidc.fetchUserInfo(config, next.access_token, user.id)).toMatchObject({ sub: user.id, email: user.email });
      }
      expect(spy).not.toHaveBeenCalled();
      expect((await storedRow('RefreshToken', rt))!.payload.rotations).toBe(3);
    } finally {
      spy.mockRestore();
    }
  });

  it('a tenant on "conform" ID token claims gets openid\'s claims only, as from oidc-provider', async () => {
    const { storage, events, config } = t.app.ctx;
    await storage.tenantConfig.put('default', 'oidc', { id_token_claims: 'conform' });
    await events.publish(configChangedChannel('default', config.redis.key_prefix), { tenant: 'default', section: 'oidc', at: new Date().toISOString() });
    try {
      for (let i = 0; i < 100 && t.app.pool.peek('default')?.config.oidc.id_token_claims !== 'conform'; i++) await new Promise((r) => setTimeout(r, 20));
      await (await actor()).discovery();
      const { product } = await compareRefresh(basic, 'openid profile email offline_access');
      expect(decode(product.json.id_token)[1]).not.toHaveProperty('email');
    } finally {
      await storage.tenantConfig.put('default', 'oidc', {});
      await events.publish(configChangedChannel('default', config.redis.key_prefix), { tenant: 'default', section: 'oidc', at: new Date().toISOString() });
      for (let i = 0; i < 100 && t.app.pool.peek('default')?.config.oidc.id_token_claims === 'conform'; i++) await new Promise((r) => setTimeout(r, 20));
    }
  });
});

describe('refusals are oidc-provider\'s own', () => {
  it('a client_secret_basic client sending its secret in the body is served by oidc-provider, which allows that', async () => {
    const tokens = await session.tokens(basic, { scope: 'openid offline_access' });
    const out = await viaProduct(tokenRequest({ client: basic, refreshToken: tokens.refresh_token!, post: true }));
    expect(out).toMatchObject({ direct: false, res: { status: 200 } });
  });

  it('a consumed refresh token: invalid_grant, and the grant is revoked (its successor dies too)', async () => {
    const tokens = await session.tokens(basic, { scope: 'openid offline_access' });
    const first = await viaProduct(tokenRequest({ client: basic, refreshToken: tokens.refresh_token! }));
    expect(first).toMatchObject({ direct: true, res: { status: 200 } });
    const replay = await viaProduct(tokenRequest({ client: basic, refreshToken: tokens.refresh_token! }));
    expect(replay).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_grant' } });
    const successor = await viaProduct(tokenRequest({ client: basic, refreshToken: first.json.refresh_token }));
    expect(successor).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_grant' } });
  });

  it('another client\'s refresh token, an unknown one, an expired one: invalid_grant from oidc-provider, nothing consumed', async () => {
    const other = await newClient();
    const tokens = await session.tokens(basic, { scope: 'openid offline_access' });
    const rt = tokens.refresh_token!;
    const stolen = await viaProduct(tokenRequest({ client: other, refreshToken: rt }));
    expect(stolen).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_grant' } });
    const unknown = await viaProduct(tokenRequest({ client: basic, refreshToken: randomBytes(32).toString('base64url') }));
    expect(unknown).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_grant' } });
    expect((await storedRow('RefreshToken', rt))?.consumed).toBe(false);

    // Expired: the stored row rewritten with an exp in the past.
    const id = bearerProtector(t.app.ctx.sealer).storedId('default', 'RefreshToken', rt);
    const row = (await t.app.ctx.storage.oidc.find('default', 'RefreshToken', id))!;
    const past = Math.floor(Date.now() / 1000) - 5;
    await t.app.ctx.storage.oidc.upsert('default', 'RefreshToken', id, { ...row.payload, exp: past }, past + 3600);
    const old = await viaProduct(tokenRequest({ client: basic, refreshToken: rt }));
    expect(old).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_grant', error_description: 'grant request is invalid' } });
  });

  it('a wrong secret: the same 401 invalid_client (and challenge) as oidc-provider, the token left unused', async () => {
    const tokens = await session.tokens(basic, { scope: 'openid offline_access' });
    for (const post of [false, true]) {
      const req = tokenRequest({ client: basic, refreshToken: tokens.refresh_token!, secret: 'not-the-secret', post });
      const product = await viaProduct(req);
      const stock = await viaStock(req);
      expect(product.res.status).toBe(401);
      expect(product.json).toEqual(stock.json);
      expect(product.res.headers?.['www-authenticate']).toBe(stock.res.headers?.['www-authenticate']);
    }
    expect((await storedRow('RefreshToken', tokens.refresh_token!))?.consumed).toBe(false);
  });

  it('a locked user\'s refresh token stops working at once', async () => {
    const victim = await createUser(t, { email_verified: true });
    const theirs = new HttpSession(t.issuer, victim);
    const tokens = await theirs.tokens(basic, { scope: 'openid offline_access' });
    const lock = await api(t, 'POST', `/api/v1/users/${victim.id}/lock`, { token: admin });
    expect(lock.status, lock.text).toBeLessThan(300);
    const out = await viaProduct(tokenRequest({ client: basic, refreshToken: tokens.refresh_token! }));
    expect(out).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_grant' } });
  });

  it('a scope or resource parameter, a DPoP proof: handed to oidc-provider', async () => {
    const tokens = await session.tokens(basic, { scope: 'openid email offline_access' });
    const narrowed = await viaProduct(tokenRequest({ client: basic, refreshToken: tokens.refresh_token!, extra: { scope: 'openid' } }));
    expect(narrowed).toMatchObject({ direct: false, res: { status: 200 }, json: { scope: 'openid' } });
    const withResource = await viaProduct(tokenRequest({ client: basic, refreshToken: narrowed.json.refresh_token, extra: { resource: 'https://unknown.example/' } }));
    expect(withResource.direct).toBe(false);
    expect(withResource.json.error).toBe('invalid_target');
    const proof = await viaProduct(tokenRequest({ client: basic, refreshToken: narrowed.json.refresh_token, headers: { dpop: 'not-a-proof' } }));
    expect(proof).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_dpop_proof' } });
  });
});
