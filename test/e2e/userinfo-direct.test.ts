/**
 * The direct userinfo path (src/oidc/userinfo.ts, issue 17) against oidc-provider's own answers:
 * real user tokens from the code flow + PKCE (openid-client), each userinfo request answered by
 * the product (TenantActor.handleOidc) and by oidc-provider (TenantActor.bridge), compared in
 * status, body bytes and the headers a client reads. A spy on the bridge tells which served: the
 * plain cases must be answered without oidc-provider, everything else must be handed to it.
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { HttpRequest } from '../../src/http/types.js';
import type { TenantActor } from '../../src/tenancy/actor.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { HttpSession, codeFlowClient, type CodeFlowClient } from '../helpers/code-flow.js';
import { compareUserinfo, userinfoRequest, type UserinfoRequest } from '../helpers/userinfo-parity.js';
import { createUser, type TestUser } from '../helpers/users.js';

const REDIRECT = 'http://127.0.0.1:65531/cb';
const ORDERS = 'https://orders.example.com/api';

let t: TestApp;
let admin: string;
let user: TestUser;
let session: HttpSession;
let web: CodeFlowClient;

const newClient = (extra: Record<string, unknown> = {}): Promise<CodeFlowClient> => codeFlowClient(t, admin, REDIRECT, { post_logout_redirect_uris: ['http://127.0.0.1:65531/bye'], scope: 'openid profile email roles offline_access read:orders', ...extra });

beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('svc:clients:write svc:users:write svc:resources:write');
  const created = await api(t, 'POST', '/api/v1/resources', { token: admin, body: { identifier: ORDERS, name: 'Orders', scopes: [{ name: 'read:orders', description: 'Read orders' }], token_format: 'opaque' } });
  if (created.status !== 201) throw new Error(created.text);
  user = await createUser(t, { email_verified: true, nickname: 'ada' });
  session = new HttpSession(t.issuer, user);
  web = await newClient();
});
afterAll(async () => t?.close());

const actor = (): Promise<TenantActor> => t.app.pool.get('default');

const request = (token: string | undefined, o: UserinfoRequest = {}): HttpRequest => userinfoRequest(new URL(t.issuer).host, token, o);
const compare = async (req: HttpRequest) => compareUserinfo(await actor(), req);

async function tokenFor(client: CodeFlowClient, scope: string, extra: { resource?: string; dpop?: CryptoKeyPair; who?: HttpSession } = {}) {
  return (extra.who ?? session).tokens(client, { scope, ...(extra.resource ? { resource: extra.resource } : {}), ...(extra.dpop ? { dpop: extra.dpop } : {}) });
}

describe('served directly, byte for byte as oidc-provider', () => {
  it('scope openid: the subject only', async () => {
    const tokens = await tokenFor(web, 'openid');
    const out = await compare(request(tokens.access_token));
    expect(out).toMatchObject({ direct: true, status: 200, json: { sub: user.id } });
    expect(Object.keys(out.json)).toEqual(['sub']);
    expect(out.res.headers).toMatchObject({ 'cache-control': 'no-store', 'content-type': 'application/json; charset=utf-8', 'access-control-allow-origin': '*' });
  });

  it('scope openid profile email (and offline_access: a token that outlives the session)', async () => {
    const tokens = await tokenFor(web, 'openid profile email offline_access');
    const out = await compare(request(tokens.access_token));
    expect(out.direct).toBe(true);
    expect(out.json).toMatchObject({ sub: user.id, email: user.email, email_verified: true, name: 'Ada Lovelace', given_name: 'Ada', family_name: 'Lovelace', nickname: 'ada' });
    expect(typeof out.json.updated_at).toBe('number');
  });

  it('the roles scope and the tenant custom claims', async () => {
    const put = await api(t, 'PUT', '/api/v1/claims', { token: admin, body: { claims: [{ name: 'tenant', value: 'acme' }, { name: 'nick', from: 'nickname' }, { name: 'https://acme.example/uid', from: 'id' }] } });
    expect(put.status, put.text).toBe(200);
    try {
      await (await actor()).discovery(); // oidc-provider rebuilt with the new claims
      const tokens = await tokenFor(web, 'openid email roles');
      const out = await compare(request(tokens.access_token));
      expect(out.direct).toBe(true);
      expect(out.json).toEqual({ sub: user.id, roles: ['user'], tenant: 'acme', nick: 'ada', 'https://acme.example/uid': user.id, email: user.email, email_verified: true });
    } finally {
      expect((await api(t, 'PUT', '/api/v1/claims', { token: admin, body: { claims: [] } })).status).toBe(200);
    }
  });

  it('a pairwise client gets its sector subject, the same as in its ID token', async () => {
    const pairwise = await newClient({ subject_type: 'pairwise' });
    const tokens = await tokenFor(pairwise, 'openid email');
    const out = await compare(request(tokens.access_token));
    expect(out.direct).toBe(true);
    expect(out.json.sub).not.toBe(user.id);
    expect(out.json.sub).toBe(tokens.claims()!.sub);
  });

  it('POST with the token in the header and an unrelated form body; a lower-case scheme', async () => {
    const tokens = await tokenFor(web, 'openid');
    for (const req of [
      request(tokens.access_token, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'foo=bar' }),
      request(tokens.access_token, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded; charset=UTF-8' }, body: '' }),
      request(tokens.access_token, { method: 'POST' }),
      request(undefined, { headers: { authorization: `bearer ${tokens.access_token}` } }),
    ]) {
      expect(await compare(req)).toMatchObject({ direct: true, status: 200, json: { sub: user.id } });
    }
  });

  it('an origin of the client gets CORS for it; another origin is oidc-provider\'s refusal', async () => {
    const tokens = await tokenFor(web, 'openid');
    const ok = await compare(request(tokens.access_token, { headers: { origin: 'http://127.0.0.1:65531' } }));
    expect(ok).toMatchObject({ direct: true, status: 200 });
    expect(ok.res.headers?.['access-control-allow-origin']).toBe('http://127.0.0.1:65531');
    const refused = await compare(request(tokens.access_token, { headers: { origin: 'https://evil.example' } }));
    expect(refused).toMatchObject({ direct: false, status: 400, json: { error: 'invalid_request' } });
  });

  it('through the front door with openid-client, without oidc-provider', async () => {
    const tokens = await tokenFor(web, 'openid email');
    const config = new oidc.Configuration({ issuer: t.issuer, userinfo_endpoint: `${t.issuer}/userinfo` }, web.client_id, web.client_secret);
    oidc.allowInsecureRequests(config);
    const a = await actor();
    const spy = vi.spyOn(a, 'bridge');
    try {
      const info = await oidc.fetchUserInfo(config, tokens.access_token, user.id);
      expect(info).toMatchObject({ sub: user.id, email: user.email });
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
});

describe('handed to oidc-provider, with its answer', () => {
  it('a revoked token', async () => {
    const tokens = await tokenFor(web, 'openid');
    const revoke = await fetch(`${t.issuer}/token/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${web.client_id}:${web.client_secret}`).toString('base64')}` },
      body: new URLSearchParams({ token: tokens.access_token }),
    });
    expect(revoke.status).toBe(200);
    expect(await compare(request(tokens.access_token))).toMatchObject({ direct: false, status: 401, json: { error: 'invalid_token' } });
  });

  it('an expired token, and one just past its expiry (inside oidc-provider\'s clock tolerance)', async () => {
    const { storage } = t.app.ctx;
    const now = Math.floor(Date.now() / 1000);
    for (const [exp, status] of [
      [now - 100, 401],
      [now - 2, 200],
    ] as const) {
      const tokens = await tokenFor(web, 'openid offline_access');
      const row = await storage.oidc.find('default', 'AccessToken', tokens.access_token);
      expect(row).toBeDefined();
      await storage.oidc.upsert('default', 'AccessToken', tokens.access_token, { ...row!.payload, exp }, now + 60);
      expect(await compare(request(tokens.access_token))).toMatchObject({ direct: false, status });
    }
  });

  it('a token whose session ended (it expires with the session)', async () => {
    const other = await createUser(t, { email_verified: true });
    const own = new HttpSession(t.issuer, other);
    const tokens = await tokenFor(web, 'openid', { who: own });
    expect((await compare(request(tokens.access_token))).direct).toBe(true);
    const { storage } = t.app.ctx;
    for (const s of await storage.oidc.listSessions('default', { accountId: other.id })) await storage.oidc.destroy('default', 'Session', s.id);
    expect(await compare(request(tokens.access_token))).toMatchObject({ direct: false, status: 401, json: { error: 'invalid_token' } });
  });

  it('a deactivated client', async () => {
    const rp = await newClient();
    const tokens = await tokenFor(rp, 'openid');
    expect((await compare(request(tokens.access_token))).direct).toBe(true);
    expect((await api(t, 'POST', `/api/v1/clients/${rp.client_id}/deactivate`, { token: admin })).status).toBe(200);
    expect(await compare(request(tokens.access_token))).toMatchObject({ direct: false, status: 401, json: { error: 'invalid_token' } });
  });

  it('a deleted user', async () => {
    const gone = await createUser(t, { email_verified: true });
    const tokens = await tokenFor(web, 'openid', { who: new HttpSession(t.issuer, gone) });
    expect((await compare(request(tokens.access_token))).direct).toBe(true);
    const del = await api(t, 'DELETE', `/api/v1/users/${gone.id}`, { token: await t.token('svc:users:delete') });
    expect(del.status, del.text).toBe(204);
    expect(await compare(request(tokens.access_token))).toMatchObject({ direct: false, status: 401, json: { error: 'invalid_token' } });
  });

  it('a disabled user and a deleted client', async () => {
    const off = await createUser(t, { email_verified: true });
    const tokens = await tokenFor(web, 'openid offline_access', { who: new HttpSession(t.issuer, off) });
    expect((await compare(request(tokens.access_token))).direct).toBe(true);
    const patched = await api(t, 'PATCH', `/api/v1/users/${off.id}`, { token: admin, body: { account_enabled: false } });
    expect(patched.status, patched.text).toBe(200);
    expect(await compare(request(tokens.access_token))).toMatchObject({ direct: false, status: 401, json: { error: 'invalid_token' } });

    const rp = await newClient();
    const own = await tokenFor(rp, 'openid offline_access');
    expect((await compare(request(own.access_token))).direct).toBe(true);
    expect((await api(t, 'DELETE', `/api/v1/clients/${rp.client_id}`, { token: await t.token('svc:clients:delete') })).status).toBe(204);
    expect(await compare(request(own.access_token))).toMatchObject({ direct: false, status: 401, json: { error: 'invalid_token' } });
  });

  it('malformed or missing Authorization headers, unknown tokens', async () => {
    const tokens = await tokenFor(web, 'openid');
    for (const headers of [
      {},
      { authorization: 'Bearer' },
      { authorization: `Bearer  ${tokens.access_token}` },
      { authorization: `Bearer ${tokens.access_token} ` },
      { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` },
      { authorization: `DPoP ${tokens.access_token}` },
      { authorization: 'Bearer not-a-token-we-issued' },
      { authorization: `Bearer ${tokens.access_token}x` },
    ]) {
      const out = await compare(request(undefined, { headers }));
      expect(out.direct, JSON.stringify(headers)).toBe(false);
      expect([400, 401]).toContain(out.status);
    }
  });

  it('the token in the body or the query, a scope parameter, a JSON body', async () => {
    const tokens = await tokenFor(web, 'openid');
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    for (const [req, status] of [
      [request(undefined, { method: 'POST', headers: form, body: `access_token=${tokens.access_token}` }), 200],
      [request(tokens.access_token, { method: 'POST', headers: form, body: `access_token=${tokens.access_token}` }), 400],
      [request(tokens.access_token, { method: 'POST', headers: form, body: 'scope=openid' }), 200],
      [request(tokens.access_token, { method: 'POST', headers: form, body: 'scope=openid%20email' }), 403],
      [request(tokens.access_token, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }), 400],
      [request(tokens.access_token, { rawQuery: 'scope=openid' }), 200],
      [request(undefined, { rawQuery: `access_token=${tokens.access_token}` }), 400],
    ] as const) {
      expect(await compare(req), `${req.method} ${req.rawQuery} ${req.body.toString()}`).toMatchObject({ direct: false, status });
    }
  });

  it('a token of a resource server (resource indicator), one with an audience, a Management API token', async () => {
    // The resource's opaque token is stored like a userinfo token, with the resource's scopes only.
    const orders = await tokenFor(web, 'openid read:orders', { resource: ORDERS });
    const stored = await t.app.ctx.storage.oidc.find('default', 'AccessToken', orders.access_token);
    expect(stored?.payload).toMatchObject({ aud: ORDERS, scope: 'read:orders' });
    expect(await compare(request(orders.access_token))).toMatchObject({ direct: false, status: 403, json: { error: 'insufficient_scope' } });
    // An audience on a token that has openid: oidc-provider refuses it for userinfo.
    const plain = await tokenFor(web, 'openid offline_access');
    const row = await t.app.ctx.storage.oidc.find('default', 'AccessToken', plain.access_token);
    await t.app.ctx.storage.oidc.upsert('default', 'AccessToken', plain.access_token, { ...row!.payload, aud: ORDERS }, row!.expires_at);
    expect(await compare(request(plain.access_token))).toMatchObject({ direct: false, status: 401, json: { error: 'invalid_token' } });
    const management = await t.token('svc:clients:read');
    expect(await compare(request(management))).toMatchObject({ direct: false, status: 401, json: { error: 'invalid_token' } });
  });

  it('a DPoP-bound token: with its proof (through the front door) and as a plain Bearer token', async () => {
    const keys = await oidc.randomDPoPKeyPair('ES256');
    const tokens = await tokenFor(web, 'openid email', { dpop: keys });
    expect(tokens.token_type.toLowerCase()).toBe('dpop');
    expect(await compare(request(tokens.access_token))).toMatchObject({ direct: false, status: 401, json: { error: 'invalid_token' } });

    const config = new oidc.Configuration({ issuer: t.issuer, userinfo_endpoint: `${t.issuer}/userinfo` }, web.client_id, web.client_secret);
    oidc.allowInsecureRequests(config);
    const a = await actor();
    const spy = vi.spyOn(a, 'bridge');
    try {
      const info = await oidc.fetchUserInfo(config, tokens.access_token, user.id, { DPoP: oidc.getDPoPHandle(config, keys) });
      expect(info).toMatchObject({ sub: user.id, email: user.email });
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });
});
