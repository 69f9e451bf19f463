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
import type { HttpRequest } from '../../src/http/types.js';
import { bearerProtector } from '../../src/oidc/bearer-at-rest.js';
import { configChangedChannel } from '../../src/events/bus.js';
import { api, type TestApp } from '../helpers/app.js';
import { HttpSession, type CodeFlowClient, type CodeFlowOptions } from '../helpers/code-flow.js';
import { userinfoRequest } from '../helpers/userinfo-parity.js';
import {
  decodeJwt,
  expectAlike,
  storedRow as storedRowOf,
  tokenRequest as tokenRequestOf,
  viaProduct as viaProductOf,
  viaStock as viaStockOf,
  spentOnce,
} from '../helpers/token-parity.js';
import { createUser, type TestUser } from '../helpers/users.js';
import { startUserFlowFixture, type UserFlowFixture } from '../helpers/user-flow-fixture.js';

const REDIRECT = 'http://127.0.0.1:65532/cb';

let t: TestApp;
let admin: string;
let user: TestUser;
let session: HttpSession;
let basic: CodeFlowClient;


let newClient: UserFlowFixture['newClient'];
let actor: UserFlowFixture['actor'];

beforeAll(async () => {
  ({ t, admin, user, session, basic, newClient, actor } = await startUserFlowFixture(REDIRECT, 'svc:clients:write svc:clients:delete svc:users:write svc:resources:write'));
});
afterAll(async () => t?.close());


interface RefreshRequest {
  client: CodeFlowClient;
  refreshToken: string;
  post?: boolean;
  secret?: string;
  extra?: Record<string, string>;
  headers?: Record<string, string>;
}

const tokenRequest = (o: RefreshRequest): HttpRequest =>
  tokenRequestOf(t, { client: o.client, form: { grant_type: 'refresh_token', refresh_token: o.refreshToken, ...o.extra }, post: o.post, secret: o.secret, headers: o.headers });
const viaProduct = async (req: HttpRequest) => viaProductOf(await actor(), req);
const viaStock = async (req: HttpRequest) => viaStockOf(await actor(), req);
const storedRow = (model: 'RefreshToken' | 'AccessToken', value: string) => storedRowOf(t, model, value);
const decode = decodeJwt;

/** Two refresh tokens of the same shape (same client, scope and session), each from its own sign-in. */
async function twins(client: CodeFlowClient, scope: string, opts: Partial<CodeFlowOptions> = {}) {
  const one = await session.tokens(client, { scope, ...opts });
  const two = await session.tokens(client, { scope, ...opts });
  expect(one.refresh_token && two.refresh_token).toBeTruthy();
  return [one.refresh_token!, two.refresh_token!] as const;
}

/** One refresh through each side, compared (token-parity.ts expectAlike); returns both answers. */
async function compareRefresh(client: CodeFlowClient, scope: string, o: { post?: boolean; nonce?: string; headers?: Record<string, string> } = {}) {
  const [mine, theirs] = await twins(client, scope, o.nonce ? { nonce: o.nonce } : {});
  const product = await viaProduct(tokenRequest({ client, refreshToken: mine, post: o.post, headers: o.headers }));
  const stock = await viaStock(tokenRequest({ client, refreshToken: theirs, post: o.post, headers: o.headers }));
  await expectAlike(t, product, stock);
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

  it('from a browser: CORS for an origin of the client, as oidc-provider sends it', async () => {
    const spa = await newClient({ token_endpoint_auth_method: 'none' });
    const { product } = await compareRefresh(spa, 'openid offline_access', { headers: { origin: 'http://127.0.0.1:65532' } });
    expect(product.res.headers).toMatchObject({ 'access-control-allow-origin': 'http://127.0.0.1:65532', vary: 'Origin' });
  });

  it('a client_secret_basic client sending its secret in the body (oidc-provider allows either)', async () => {
    await compareRefresh(basic, 'openid offline_access', { post: true });
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
  it('a consumed refresh token: invalid_grant, and the grant is revoked (its successor dies too)', async () => {
    const tokens = await session.tokens(basic, { scope: 'openid offline_access' });
    const first = await viaProduct(tokenRequest({ client: basic, refreshToken: tokens.refresh_token! }));
    expect(first).toMatchObject({ direct: true, res: { status: 200 } });
    const replay = await viaProduct(tokenRequest({ client: basic, refreshToken: tokens.refresh_token! }));
    expect(replay).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_grant' } });
    const successor = await viaProduct(tokenRequest({ client: basic, refreshToken: first.json.refresh_token }));
    expect(successor).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_grant' } });
  });

  it('the same refresh token twice at the same moment: one answer, the other invalid_grant, and the grant revoked (the answered successor dies too)', async () => {
    const tokens = await session.tokens(basic, { scope: 'openid offline_access' });
    const won = await spentOnce(() => viaProduct(tokenRequest({ client: basic, refreshToken: tokens.refresh_token! })));
    const successor = await viaProduct(tokenRequest({ client: basic, refreshToken: won.json.refresh_token }));
    expect(successor).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_grant' } });
  });

  it('oidc-provider\'s own refresh, twice at the same moment: one answer, the other invalid_grant, the grant revoked', async () => {
    const tokens = await session.tokens(basic, { scope: 'openid offline_access' });
    const won = await spentOnce(() => viaStock(tokenRequest({ client: basic, refreshToken: tokens.refresh_token! })));
    const successor = await viaProduct(tokenRequest({ client: basic, refreshToken: won.json.refresh_token }));
    expect(successor).toMatchObject({ res: { status: 400 }, json: { error: 'invalid_grant' } });
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

  it('hostile values whose first characters go into the stored id: invalid_grant, no 500, the real token untouched', async () => {
    const tokens = await session.tokens(basic, { scope: 'openid offline_access' });
    const rt = tokens.refresh_token!;
    const stored = bearerProtector(t.app.ctx.sealer).storedId('default', 'RefreshToken', rt);
    const hostile = [
      rt.slice(0, 8) + randomBytes(26).toString('base64url'), // the real token's time prefix, another tail
      `${rt.slice(0, 7)}\u{1F642}${rt.slice(9)}`, // a surrogate pair cut by the prefix
      `${rt.slice(0, 4)}\u0000${rt.slice(5)}`,
      "x'); DELETE FROM oidc_payloads; --",
      stored, // the stored id itself
      `h1.${stored.slice(11)}`, // the plain keyed hash it would have had before
      rt.slice(0, 8),
    ];
    for (const value of hostile) {
      const out = await viaProduct(tokenRequest({ client: basic, refreshToken: value }));
      expect(out, value.slice(0, 40)).toMatchObject({ res: { status: 400 }, json: { error: 'invalid_grant' } });
    }
    // Oversized: oidc-provider refuses the parameter before any look-up.
    const long = await viaProduct(tokenRequest({ client: basic, refreshToken: 'h'.repeat(100_000) }));
    expect(long).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_request' } });
    expect((await storedRow('RefreshToken', rt))?.consumed).toBe(false);
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

  it('an origin the client did not register: oidc-provider\'s invalid_request, the token left unused', async () => {
    const tokens = await session.tokens(basic, { scope: 'openid offline_access' });
    const out = await viaProduct(tokenRequest({ client: basic, refreshToken: tokens.refresh_token!, headers: { origin: 'https://evil.example' } }));
    expect(out).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_request' } });
    expect(out.res.headers?.['access-control-allow-origin']).toBeUndefined();
    expect((await storedRow('RefreshToken', tokens.refresh_token!))?.consumed).toBe(false);
  });

  it('a scope parameter, a DPoP proof: handed to oidc-provider; a resource it would refuse only after consuming the token: refused first', async () => {
    const tokens = await session.tokens(basic, { scope: 'openid email offline_access' });
    const narrowed = await viaProduct(tokenRequest({ client: basic, refreshToken: tokens.refresh_token!, extra: { scope: 'openid' } }));
    expect(narrowed).toMatchObject({ direct: false, res: { status: 200 }, json: { scope: 'openid' } });
    // refresh-resource.ts: invalid_target without oidc-provider, the token left unused.
    const withResource = await viaProduct(tokenRequest({ client: basic, refreshToken: narrowed.json.refresh_token, extra: { resource: 'https://unknown.example/' } }));
    expect(withResource).toMatchObject({ direct: true, res: { status: 400 }, json: { error: 'invalid_target', error_description: 'resource indicator is missing, or unknown' } });
    expect((await storedRow('RefreshToken', narrowed.json.refresh_token))?.consumed).toBe(false);
    const proof = await viaProduct(tokenRequest({ client: basic, refreshToken: narrowed.json.refresh_token, headers: { dpop: 'not-a-proof' } }));
    expect(proof).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_dpop_proof' } });
  });
});
