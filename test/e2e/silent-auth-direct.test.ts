/**
 * The direct silent re-authentication (src/oidc/silent-auth.ts, issue 17) against oidc-provider's
 * own answers. A user signs in once with openid-client's code flow (test/helpers/code-flow.ts);
 * then twin `prompt=none` authorization requests with that session cookie go to the product
 * (TenantActor.handleOidc; a spy on the bridge tells whether oidc-provider was asked) and to
 * oidc-provider (TenantActor.bridge). The redirects, their headers and cookies, the stored codes
 * and the re-saved session must be alike but for the new code and times; the product's code must
 * then be redeemable by openid-client with the same claims. Every unusual request is oidc-provider's.
 */
import { createHmac } from 'node:crypto';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { HttpRequest, HttpResponse } from '../../src/http/types.js';
import { protectBearerIds } from '../../src/oidc/bearer-at-rest.js';
import { api, type TestApp } from '../helpers/app.js';
import { HttpSession, codeFlowClient, type CodeFlowClient } from '../helpers/code-flow.js';
import { shape, type Json } from '../helpers/token-parity.js';
import { createUser, type TestUser } from '../helpers/users.js';
import { startUserFlowFixture, type UserFlowFixture } from '../helpers/user-flow-fixture.js';

const REDIRECT = 'http://127.0.0.1:65531/cb';
const FULL = 'openid profile email roles';

let t: TestApp;
let admin: string;
let user: TestUser;
let session: HttpSession;
let basic: CodeFlowClient;

let newClient: UserFlowFixture['newClient'];
let actor: UserFlowFixture['actor'];
const repo = () => protectBearerIds(t.app.ctx.storage.oidc, t.app.ctx.sealer);

beforeAll(async () => {
  ({ t, admin, user, session, basic, newClient, actor } = await startUserFlowFixture(REDIRECT));
  await session.tokens(basic, { scope: FULL });
});
afterAll(async () => t?.close());

const verifier = oidc.randomPKCECodeVerifier();
let challenge: string;
beforeAll(async () => {
  challenge = await oidc.calculatePKCECodeChallenge(verifier);
});

/** The session cookie pair of a browser's jar. */
function cookiesOf(s: HttpSession): { id: string; sig: string } {
  const jar = new Map(s.cookieHeader().split('; ').map((c) => [c.slice(0, c.indexOf('=')), c.slice(c.indexOf('=') + 1)]));
  return { id: jar.get('_session')!, sig: jar.get('_session.sig')! };
}

/** A prompt=none authorization request as the front door hands it to the actor. */
function authRequest(client: CodeFlowClient, params: Record<string, string | undefined> = {}, o: { cookie?: string; headers?: Record<string, string>; rawQuery?: string } = {}): HttpRequest {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code', scope: 'openid', state: 'st-1', prompt: 'none', code_challenge: challenge, code_challenge_method: 'S256', ...params })) {
    if (v !== undefined) q.set(k, v);
  }
  const headers: Record<string, string> = { host: new URL(t.issuer).host, accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', ...o.headers };
  const cookie = o.cookie ?? session.cookieHeader();
  if (cookie) headers.cookie = cookie;
  return { id: 'silent-auth', method: 'GET', path: '/oidc/v1/auth', rawQuery: o.rawQuery ?? q.toString(), headers, ip: '127.0.0.1', body: Buffer.alloc(0), params: {} };
}

interface Answer {
  res: HttpResponse;
  direct: boolean;
  location: URL | undefined;
}

async function viaProduct(req: HttpRequest): Promise<Answer> {
  const a = await actor();
  const spy = vi.spyOn(a, 'bridge');
  try {
    const res = await a.handleOidc(req);
    const loc = res.headers?.location;
    return { res, direct: spy.mock.calls.length === 0, location: typeof loc === 'string' ? new URL(loc) : undefined };
  } finally {
    spy.mockRestore();
  }
}

async function viaStock(req: HttpRequest): Promise<Answer> {
  const res = await (await actor()).bridge(req);
  const loc = res.headers?.location;
  return { res, direct: false, location: typeof loc === 'string' ? new URL(loc) : undefined };
}

const sessionRow = async (s: HttpSession) => (await repo().find('default', 'Session', cookiesOf(s).id))!;
const codeRow = async (code: string) => (await t.app.ctx.storage.oidc.find('default', 'AuthorizationCode', code))!;
const withoutExpires = (c: string) => c.replace(/; expires=[^;]*/, '');

/** Both redirects alike: status, headers (names, order, values), Location but for the code, cookies, body. */
function expectSameRedirect(product: Answer, stock: Answer): void {
  expect(product.direct).toBe(true);
  expect(stock.res.status, String(stock.res.body)).toBe(303);
  expect(product.res.status).toBe(303);
  const ph = product.res.headers!;
  const sh = stock.res.headers!;
  expect(Object.keys(ph)).toEqual(Object.keys(sh));
  for (const h of ['cache-control', 'content-type', 'content-length']) expect(ph[h], h).toBe(sh[h]);
  const [p, s] = [product.location!, stock.location!];
  expect(p.origin + p.pathname).toBe(s.origin + s.pathname);
  expect([...p.searchParams.keys()]).toEqual([...s.searchParams.keys()]);
  const pCode = p.searchParams.get('code')!;
  const sCode = s.searchParams.get('code')!;
  expect(pCode.length).toBe(sCode.length);
  expect(pCode).toMatch(/^[A-Za-z0-9_-]{43}$/);
  for (const [k, v] of s.searchParams) if (k !== 'code') expect(p.searchParams.get(k), k).toBe(v);
  expect(String(product.res.body).replace(pCode, 'CODE')).toBe(String(stock.res.body).replace(sCode, 'CODE'));
  const pc = ph['set-cookie'] as string[];
  const sc = sh['set-cookie'] as string[];
  expect(pc.map(withoutExpires)).toEqual(sc.map(withoutExpires));
  expect(pc).toHaveLength(2);
}

/** The stored codes alike but for the value and times; both sessions re-saved alike. */
async function expectSameStorage(product: Answer, stock: Answer, productSession: Json, stockSession: Json): Promise<void> {
  const pRow = await codeRow(product.location!.searchParams.get('code')!);
  const sRow = await codeRow(stock.location!.searchParams.get('code')!);
  expect(Object.keys(pRow.payload)).toEqual(Object.keys(sRow.payload));
  expect(shape(pRow.payload, ['iat', 'exp', 'jti'])).toEqual(shape(sRow.payload, ['iat', 'exp', 'jti']));
  expect((pRow.payload.exp as number) - (pRow.payload.iat as number)).toBe((sRow.payload.exp as number) - (sRow.payload.iat as number));
  expect(pRow.expires_at).toBe(pRow.payload.exp);
  expect(pRow.payload.jti).toBe(product.location!.searchParams.get('code'));
  expect(pRow.consumed).toBe(false);

  expect(Object.keys(productSession.payload)).toEqual(Object.keys(stockSession.payload));
  expect(shape(productSession.payload, ['exp', 'jti', 'jti_sealed'])).toEqual(shape(stockSession.payload, ['exp', 'jti', 'jti_sealed']));
  expect(productSession.expires_at).toBe(productSession.payload.exp);
  expect(Math.abs(productSession.payload.exp - stockSession.payload.exp)).toBeLessThanOrEqual(1);
  const expires = /expires=([^;]*)/.exec((product.res.headers!['set-cookie'] as string[])[0]!)![1]!;
  expect(Date.parse(expires) / 1000).toBe(productSession.payload.exp);
}

/** Twin requests (the product's first, so it re-saves the session as sign-in left it), compared. */
async function twin(client: CodeFlowClient, params: Record<string, string | undefined> = {}, s: HttpSession = session) {
  const cookie = s.cookieHeader();
  const product = await viaProduct(authRequest(client, params, { cookie }));
  const productSession = await sessionRow(s);
  const stock = await viaStock(authRequest(client, params, { cookie }));
  const stockSession = await sessionRow(s);
  expectSameRedirect(product, stock);
  await expectSameStorage(product, stock, productSession, stockSession);
  return { product, stock };
}

/** The code of a redirect, redeemed by openid-client; the ID token's claims. */
async function redeem(client: CodeFlowClient, location: URL, state: string | null = 'st-1', nonce?: string) {
  const config = new oidc.Configuration(
    { issuer: t.issuer, authorization_endpoint: `${t.issuer}/auth`, token_endpoint: `${t.issuer}/token` },
    client.client_id,
    client.client_secret,
    client.client_secret ? undefined : oidc.None(),
  );
  oidc.allowInsecureRequests(config);
  const tokens = await oidc.authorizationCodeGrant(config, location, { pkceCodeVerifier: verifier, expectedState: state ?? undefined, ...(nonce ? { expectedNonce: nonce } : {}) });
  return tokens.claims()!;
}

const withoutTimes = (c: Json) => shape(c, ['iat', 'exp']);

/** The request went to oidc-provider, and its answer is what oidc-provider answers by itself. */
async function expectDeclined(req: HttpRequest, expected: { status?: number; error?: string } = {}) {
  const product = await viaProduct(req);
  expect(product.direct, 'oidc-provider was not asked').toBe(false);
  if (expected.status !== undefined) expect(product.res.status).toBe(expected.status);
  if (expected.error !== undefined) expect(product.location?.searchParams.get('error')).toBe(expected.error);
  return product;
}

describe('served directly, as oidc-provider answers', () => {
  it('openid: the same redirect, cookies, stored code and session; the code redeems to the same claims', async () => {
    const { product, stock } = await twin(basic);
    expect(product.location!.searchParams.get('iss')).toBe(t.issuer);
    const mine = await redeem(basic, product.location!);
    const theirs = await redeem(basic, stock.location!);
    expect(withoutTimes(mine)).toEqual(withoutTimes(theirs));
    expect(mine.sub).toBe(user.id);
  });

  it('every granted scope, a nonce, in another order; a state and nonce of odd characters; without state; with response_mode=query; without Accept', async () => {
    const { product, stock } = await twin(basic, { scope: 'email openid roles profile', nonce: 'n-123' });
    const mine = await redeem(basic, product.location!, 'st-1', 'n-123');
    expect(mine).toMatchObject({ nonce: 'n-123', email: user.email });
    expect(withoutTimes(mine)).toEqual(withoutTimes(await redeem(basic, stock.location!, 'st-1', 'n-123')));
    const odd = await twin(basic, { state: 'a b+c/d?e=f&g#h é\u{1F600}', nonce: 'n <&> "x"' });
    expect(odd.product.location!.searchParams.get('state')).toBe('a b+c/d?e=f&g#h é\u{1F600}');
    await redeem(basic, odd.product.location!, 'a b+c/d?e=f&g#h é\u{1F600}', 'n <&> "x"');
    const noState = await twin(basic, { state: undefined, response_mode: 'query' });
    expect(noState.product.location!.searchParams.has('state')).toBe(false);
    await redeem(basic, noState.product.location!, null);
    const cookie = session.cookieHeader();
    const bare = await viaProduct({ ...authRequest(basic, {}, { cookie }), headers: { host: new URL(t.issuer).host, cookie } });
    const bareStock = await viaStock({ ...authRequest(basic, {}, { cookie }), headers: { host: new URL(t.issuer).host, cookie } });
    expectSameRedirect(bare, bareStock);
  });

  it('a redirect URI with a query of its own', async () => {
    const query = await codeFlowClient(t, admin, 'http://127.0.0.1:65531/cb?from=rp');
    // Signed in through the pages only (openid-client's exchange takes the redirect URI without its query).
    await session.authorize(`${t.issuer}/auth?${authRequest(query, { prompt: undefined }).rawQuery}`, query.redirect_uri);
    const { product } = await twin(query);
    expect(product.location!.searchParams.get('from')).toBe('rp');
  });

  it('offline_access is dropped as oidc-provider drops it under prompt=none (no refresh token)', async () => {
    const { product } = await twin(basic, { scope: 'openid offline_access email' });
    expect((await codeRow(product.location!.searchParams.get('code')!)).payload.scope).toBe('openid email');
  });

  it('a public client; a client with a back-channel logout URI (sid in the code); a client without PKCE where allowed', async () => {
    const spa = await newClient({ token_endpoint_auth_method: 'none' });
    await session.tokens(spa, { scope: 'openid' });
    const pub = await twin(spa);
    await redeem(spa, pub.product.location!);

    const bcl = await newClient({ backchannel_logout_uri: 'http://127.0.0.1:65531/bcl' });
    await session.tokens(bcl, { scope: 'openid email' });
    const withSid = await twin(bcl, { scope: 'openid email' });
    expect((await codeRow(withSid.product.location!.searchParams.get('code')!)).payload.sid).toBeTypeOf('string');

    const lax = await newClient({ require_pkce: false });
    await session.tokens(lax, { scope: 'openid' });
    const cookie = session.cookieHeader();
    const req = () => authRequest(lax, { code_challenge: undefined, code_challenge_method: undefined }, { cookie });
    const product = await viaProduct(req());
    const stock = await viaStock(req());
    expectSameRedirect(product, stock);
    expect((await codeRow(product.location!.searchParams.get('code')!)).payload).not.toHaveProperty('codeChallenge');
  });

  it('openid-client\'s silent renewal through the front door: no oidc-provider at /auth or /token', async () => {
    const a = await actor();
    const spy = vi.spyOn(a, 'bridge');
    try {
      const res = await fetch(`${t.issuer}/auth?${new URLSearchParams({ client_id: basic.client_id, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', state: 'st-1', prompt: 'none', code_challenge: challenge, code_challenge_method: 'S256' })}`, { headers: { cookie: session.cookieHeader() }, redirect: 'manual' });
      expect(res.status).toBe(303);
      const location = new URL(res.headers.get('location')!);
      expect(res.headers.getSetCookie()).toHaveLength(2);
      expect((await redeem(basic, location)).sub).toBe(user.id);
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
});

describe('everything else is oidc-provider\'s answer', () => {
  it('no cookie, a tampered signature, a signature under another tenant\'s key, an unsigned cookie: login_required', async () => {
    const { id, sig } = cookiesOf(session);
    await expectDeclined(authRequest(basic, {}, { cookie: '' }), { status: 303, error: 'login_required' });
    const flipped = (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1);
    await expectDeclined(authRequest(basic, {}, { cookie: `_session=${id}; _session.sig=${flipped}` }), { status: 303, error: 'login_required' });
    const otherKey = t.app.ctx.sealer.derive('cookies:another-tenant').toString('base64url');
    const foreign = createHmac('sha1', otherKey).update(`_session=${id}`).digest('base64url');
    await expectDeclined(authRequest(basic, {}, { cookie: `_session=${id}; _session.sig=${foreign}` }), { status: 303, error: 'login_required' });
    await expectDeclined(authRequest(basic, {}, { cookie: `_session=${id}` }), { status: 303, error: 'login_required' });
    // The genuine pair still serves.
    expect((await viaProduct(authRequest(basic, {}, { cookie: `_session=${id}; _session.sig=${sig}` }))).direct).toBe(true);
  });

  it('an expired session; a session of a disabled user; of a locked user', async () => {
    const other = await createUser(t, { email_verified: true });
    const s = new HttpSession(t.issuer, other);
    await s.tokens(basic, { scope: 'openid' });
    expect((await viaProduct(authRequest(basic, {}, { cookie: s.cookieHeader() }))).direct).toBe(true);

    const row = await sessionRow(s);
    const now = Math.floor(Date.now() / 1000);
    // Past oidc-provider's 15 s clock tolerance (within it, oidc-provider still serves the session; this path declines).
    await repo().upsert('default', 'Session', cookiesOf(s).id, { ...row.payload, exp: now - 1 }, now + 60);
    const tolerated = await expectDeclined(authRequest(basic, {}, { cookie: s.cookieHeader() }), { status: 303 });
    expect(tolerated.location?.searchParams.has('code')).toBe(true);
    await repo().upsert('default', 'Session', cookiesOf(s).id, { ...row.payload, exp: now - 60 }, now + 60);
    await expectDeclined(authRequest(basic, {}, { cookie: s.cookieHeader() }), { status: 303, error: 'login_required' });

    const disabled = await createUser(t, { email_verified: true });
    const ds = new HttpSession(t.issuer, disabled);
    await ds.tokens(basic, { scope: 'openid' });
    expect((await api(t, 'PATCH', `/api/v1/users/${disabled.id}`, { token: admin, body: { account_enabled: false } })).status).toBe(200);
    // Signing in again, as without a session (sign-in-config.ts interactionPrompts), not a server_error.
    await expectDeclined(authRequest(basic, {}, { cookie: ds.cookieHeader() }), { status: 303, error: 'login_required' });

    const locked = await createUser(t, { email_verified: true });
    const ls = new HttpSession(t.issuer, locked);
    await ls.tokens(basic, { scope: 'openid' });
    await t.app.ctx.storage.users.update('default', locked.id, { locked: true, locked_until: null });
    await expectDeclined(authRequest(basic, {}, { cookie: ls.cookieHeader() }), { status: 303, error: 'login_required' });
  });

  it('without prompt=none, a session of a locked user leads to the sign-in page, not to consent', async () => {
    // Locked as the lockout after failed sign-ins locks (disabling through the API ends the sessions).
    const user = await createUser(t, { email_verified: true });
    const us = new HttpSession(t.issuer, user);
    await us.tokens(basic, { scope: 'openid' });
    await t.app.ctx.storage.users.update('default', user.id, { locked: true, locked_until: null });
    // The interaction's location is relative, so the bridge is asked directly here.
    const res = await (await actor()).bridge(authRequest(basic, { prompt: undefined }, { cookie: us.cookieHeader() }));
    expect(res.status).toBe(303);
    const uid = /^\/oidc\/v1\/interaction\/([\w-]+)$/.exec(String(res.headers?.location))?.[1];
    expect(uid).toBeDefined();
    // The sign-in prompt (not consent for an account that may not sign in).
    const interaction = await t.app.ctx.storage.oidc.find('default', 'Interaction', uid!);
    expect(interaction?.payload.prompt).toMatchObject({ name: 'login', reasons: expect.arrayContaining(['account_unavailable']) });
  });

  it('a client without a grant in the session; a scope not granted yet: consent_required', async () => {
    const fresh = await newClient();
    await expectDeclined(authRequest(fresh), { status: 303, error: 'consent_required' });
    const narrow = await newClient();
    await session.tokens(narrow, { scope: 'openid' });
    expect((await viaProduct(authRequest(narrow))).direct).toBe(true);
    await expectDeclined(authRequest(narrow, { scope: 'openid email' }), { status: 303, error: 'consent_required' });
  });

  it('an unregistered redirect_uri, another client\'s id, an unknown client, a missing redirect_uri', async () => {
    const other = await newClient({ redirect_uris: ['http://127.0.0.1:65531/other'] });
    await expectDeclined(authRequest(basic, { redirect_uri: 'http://127.0.0.1:65531/evil' }), { status: 400 });
    await expectDeclined(authRequest({ ...basic, client_id: other.client_id }), { status: 400 });
    await expectDeclined(authRequest({ ...basic, client_id: 'no-such-client' }), { status: 400 });
    await expectDeclined(authRequest(basic, { redirect_uri: undefined }));
  });

  it('extra or repeated parameters, other prompts, response types and modes', async () => {
    const cases: Array<Record<string, string | undefined>> = [
      { login_hint: 'ada' },
      { max_age: '0' },
      { max_age: '3600' },
      { ui_locales: 'de' },
      { acr_values: 'urn:x' },
      { id_token_hint: 'x.y.z' },
      { claims: '{"id_token":{"email":null}}' },
      { resource: 'https://api.example/' },
      { request: 'x.y.z' },
      { request_uri: 'urn:ietf:params:oauth:request_uri:x' },
      { authorization_details: '[]' },
      { dpop_jkt: 'abc' },
      { registration: '{}' },
      { prompt: 'none login' },
      { prompt: undefined },
      { response_type: 'none' },
      { response_type: 'code id_token' },
      { response_mode: 'form_post' },
      { response_mode: 'fragment' },
      { scope: 'profile' },
      { scope: 'openid openid' },
      { scope: 'openid svc:clients:read' },
    ];
    for (const params of cases) await expectDeclined(authRequest(basic, params));
    const q = authRequest(basic).rawQuery;
    await expectDeclined(authRequest(basic, {}, { rawQuery: `${q}&state=again` }), { status: 303, error: 'invalid_request' });
    const post = authRequest(basic);
    await expectDeclined({ ...post, method: 'POST', rawQuery: '', headers: { ...post.headers, 'content-type': 'application/x-www-form-urlencoded' }, body: Buffer.from(q) });
    await expectDeclined(authRequest(basic, {}, { headers: { accept: 'application/json' } }));
  });

  it('plain PKCE, a challenge without a method, a short challenge, no PKCE for a public client, empty state or nonce', async () => {
    const spa = await newClient({ token_endpoint_auth_method: 'none' });
    await session.tokens(spa, { scope: 'openid' });
    await expectDeclined(authRequest(basic, { code_challenge_method: 'plain' }), { status: 303, error: 'invalid_request' });
    await expectDeclined(authRequest(basic, { code_challenge_method: undefined }), { status: 303, error: 'invalid_request' });
    await expectDeclined(authRequest(basic, { code_challenge: 'short' }), { status: 303, error: 'invalid_request' });
    await expectDeclined(authRequest(spa, { code_challenge: undefined, code_challenge_method: undefined }), { status: 303, error: 'invalid_request' });
    await expectDeclined(authRequest(basic, {}, { rawQuery: authRequest(basic).rawQuery.replace('state=st-1', 'state=') }));
    await expectDeclined(authRequest(basic, { nonce: '' }));
  });

  it('a native client, a client with default_max_age, an inactive client', async () => {
    const native = await codeFlowClient(t, admin, 'http://127.0.0.1/cb', { application_type: 'native', token_endpoint_auth_method: 'none' });
    await expectDeclined(authRequest(native));
    const maxAge = await newClient({ default_max_age: 3600 });
    await session.tokens(maxAge, { scope: 'openid' });
    await expectDeclined(authRequest(maxAge));
    const gone = await newClient();
    await session.tokens(gone, { scope: 'openid' });
    expect((await api(t, 'POST', `/api/v1/clients/${gone.client_id}/deactivate`, { token: admin })).status).toBe(200);
    await expectDeclined(authRequest(gone), { status: 400 });
  });
});
