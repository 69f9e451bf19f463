/**
 * The direct code exchange (src/oidc/code-grant.ts, issue 17) against oidc-provider's own answers.
 * A code can be redeemed once, so each case runs two authorization requests with the same client,
 * scope and session (openid-client builds them, with PKCE): one code goes to the product
 * (TenantActor.handleOidc; a spy on the bridge tells whether oidc-provider was asked), its twin to
 * oidc-provider (TenantActor.bridge). The answers, ID tokens and stored tokens must be alike
 * (test/helpers/token-parity.ts); every refusal is oidc-provider's own.
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { HttpRequest } from '../../src/http/types.js';
import { Sealer } from '../../src/keys/sealer.js';
import { api, type TestApp } from '../helpers/app.js';
import { HttpSession, type CodeFlowClient } from '../helpers/code-flow.js';
import { decodeJwt, expectAlike, spentOnce, storedRow, tokenRequest, viaProduct, viaStock } from '../helpers/token-parity.js';
import { userinfoRequest } from '../helpers/userinfo-parity.js';
import type { TestUser } from '../helpers/users.js';
import { startUserFlowFixture, type UserFlowFixture } from '../helpers/user-flow-fixture.js';

const REDIRECT = 'http://127.0.0.1:65533/cb';

let t: TestApp;
let admin: string;
let user: TestUser;
let session: HttpSession;
let basic: CodeFlowClient;

let newClient: UserFlowFixture['newClient'];
let actor: UserFlowFixture['actor'];

beforeAll(async () => {
  ({ t, admin, user, session, basic, newClient, actor } = await startUserFlowFixture(REDIRECT));
});
afterAll(async () => t?.close());


interface Code {
  code: string;
  verifier: string;
}

/** An authorization code for `client` (PKCE S256), through the sign-in pages on the shared session. */
async function codeFor(client: CodeFlowClient, scope: string, extra: Record<string, string> = {}): Promise<Code> {
  const config = new oidc.Configuration({ issuer: t.issuer, authorization_endpoint: `${t.issuer}/auth` }, client.client_id, client.client_secret);
  oidc.allowInsecureRequests(config);
  const verifier = oidc.randomPKCECodeVerifier();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: client.redirect_uri,
    scope,
    state: oidc.randomState(),
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...extra,
  });
  const callback = await session.authorize(url.href, client.redirect_uri);
  const code = callback.searchParams.get('code');
  if (!code) throw new Error(`no code: ${callback.href}`);
  return { code, verifier };
}

interface Exchange {
  client: CodeFlowClient;
  code: Code;
  post?: boolean;
  secret?: string;
  form?: Record<string, string | undefined>;
  headers?: Record<string, string>;
}

function exchange(o: Exchange): HttpRequest {
  const form: Record<string, string> = {};
  for (const [k, v] of Object.entries({ grant_type: 'authorization_code', code: o.code.code, redirect_uri: o.client.redirect_uri, code_verifier: o.code.verifier, ...o.form })) {
    if (v !== undefined) form[k] = v;
  }
  return tokenRequest(t, { client: o.client, form, post: o.post, secret: o.secret, headers: o.headers });
}

/** One code exchange through each side, compared; returns both answers. */
async function compareExchange(client: CodeFlowClient, scope: string, o: { post?: boolean; extra?: Record<string, string>; headers?: Record<string, string> } = {}) {
  const mine = await codeFor(client, scope, o.extra);
  const theirs = await codeFor(client, scope, o.extra);
  const a = await actor();
  const product = await viaProduct(a, exchange({ client, code: mine, post: o.post, headers: o.headers }));
  const stock = await viaStock(a, exchange({ client, code: theirs, post: o.post, headers: o.headers }));
  await expectAlike(t, product, stock);
  expect((await storedRow(t, 'AuthorizationCode', mine.code))?.consumed).toBe(true);
  expect((await storedRow(t, 'AuthorizationCode', theirs.code))?.consumed).toBe(true);
  return { product, stock };
}

describe('served directly, as oidc-provider answers', () => {
  it('openid only: an access and an ID token, no refresh token; the access token works at oidc-provider', async () => {
    const { product } = await compareExchange(basic, 'openid');
    expect(product.json).not.toHaveProperty('refresh_token');
    expect(decodeJwt(product.json.id_token)[1]).toMatchObject({ sub: user.id, aud: basic.client_id, iss: t.issuer });
    const info = await (await actor()).bridge(userinfoRequest(new URL(t.issuer).host, product.json.access_token));
    expect(info.status).toBe(200);
    expect(JSON.parse(String(info.body))).toEqual({ sub: user.id });
  });

  it('the session the code is bound to is read as stored: its sealed id is not decrypted (issue 17)', async () => {
    const code = await codeFor(basic, 'openid');
    const a = await actor();
    const unseal = vi.spyOn(Sealer.prototype, 'unseal');
    try {
      const product = await viaProduct(a, exchange({ client: basic, code }));
      expect(product).toMatchObject({ direct: true, res: { status: 200 } });
      // The code expires with its session, so the session was read (and had to hold the grant).
      expect((await storedRow(t, 'AuthorizationCode', code.code))?.payload.expiresWithSession).toBe(true);
      expect(unseal).not.toHaveBeenCalled();
    } finally {
      unseal.mockRestore();
    }
  });

  it('offline_access with profile, email and roles: a refresh token too, which oidc-provider accepts', async () => {
    const { product } = await compareExchange(basic, 'openid profile email roles offline_access');
    expect(decodeJwt(product.json.id_token)[1]).toMatchObject({ email: user.email, nickname: 'ada', roles: ['user'] });
    const refreshed = await viaStock(await actor(), tokenRequest(t, { client: basic, form: { grant_type: 'refresh_token', refresh_token: product.json.refresh_token } }));
    expect(refreshed.res.status, String(refreshed.res.body)).toBe(200);
  });

  it('a nonce; client_secret_post; a public client; a pairwise client; a client without the refresh grant', async () => {
    const { product } = await compareExchange(basic, 'openid email', { extra: { nonce: 'n-Zm9vYmFy' } });
    expect(decodeJwt(product.json.id_token)[1].nonce).toBe('n-Zm9vYmFy');
    await compareExchange(await newClient({ token_endpoint_auth_method: 'client_secret_post' }), 'openid offline_access', { post: true });
    await compareExchange(await newClient({ token_endpoint_auth_method: 'none' }), 'openid offline_access');
    const pairwise = await compareExchange(await newClient({ subject_type: 'pairwise' }), 'openid email');
    expect(decodeJwt(pairwise.product.json.id_token)[1].sub).not.toBe(user.id);
    const noRefresh = await compareExchange(await newClient({ grant_types: ['authorization_code'], scope: 'openid email' }), 'openid email');
    expect(noRefresh.product.json).not.toHaveProperty('refresh_token');
  });

  it('an SPA\'s exchange from its origin gets CORS for it; another origin is oidc-provider\'s refusal', async () => {
    const spa = await newClient({ token_endpoint_auth_method: 'none' });
    const { product } = await compareExchange(spa, 'openid', { headers: { origin: 'http://127.0.0.1:65533' } });
    expect(product.res.headers).toMatchObject({ 'access-control-allow-origin': 'http://127.0.0.1:65533', vary: 'Origin' });
    const code = await codeFor(spa, 'openid');
    const refused = await viaProduct(await actor(), exchange({ client: spa, code, headers: { origin: 'https://evil.example' } }));
    expect(refused).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_request' } });
    expect((await storedRow(t, 'AuthorizationCode', code.code))?.consumed).toBe(false);
  });

  it('openid-client\'s code flow through the front door, without oidc-provider at the token endpoint', async () => {
    const a = await actor();
    const spy = vi.spyOn(a, 'bridge');
    try {
      const tokens = await session.tokens(basic, { scope: 'openid email offline_access', nonce: 'n-abc' });
      expect(tokens.claims()).toMatchObject({ sub: user.id, email: user.email, nonce: 'n-abc' });
      const tokenCalls = spy.mock.calls.filter(([req]) => req.path.endsWith('/token'));
      expect(tokenCalls).toHaveLength(0);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('refusals are oidc-provider\'s own', () => {
  it('a reused code: invalid_grant, and the grant is revoked (the first access token dies)', async () => {
    const code = await codeFor(basic, 'openid');
    const first = await viaProduct(await actor(), exchange({ client: basic, code }));
    expect(first).toMatchObject({ direct: true, res: { status: 200 } });
    const again = await viaProduct(await actor(), exchange({ client: basic, code }));
    expect(again).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_grant' } });
    const info = await (await actor()).handleOidc(userinfoRequest(new URL(t.issuer).host, first.json.access_token));
    expect(info.status).toBe(401);
  });

  it('a code exchanged twice at the same moment: one answer, the other invalid_grant, and the grant revoked (the answered tokens die too)', async () => {
    const code = await codeFor(basic, 'openid offline_access');
    const a = await actor();
    const won = await spentOnce(() => viaProduct(a, exchange({ client: basic, code })));
    expect((await a.handleOidc(userinfoRequest(new URL(t.issuer).host, won.json.access_token))).status).toBe(401);
    const refreshed = await viaProduct(a, tokenRequest(t, { client: basic, form: { grant_type: 'refresh_token', refresh_token: won.json.refresh_token } }));
    expect(refreshed).toMatchObject({ res: { status: 400 }, json: { error: 'invalid_grant' } });
  });

  it('oidc-provider\'s own exchange, twice at the same moment: one answer, the other invalid_grant, the grant revoked', async () => {
    const code = await codeFor(basic, 'openid');
    const a = await actor();
    const won = await spentOnce(() => viaStock(a, exchange({ client: basic, code })));
    expect((await a.handleOidc(userinfoRequest(new URL(t.issuer).host, won.json.access_token))).status).toBe(401);
  });

  it('a wrong verifier, a missing verifier, another redirect_uri, no redirect_uri, another client: oidc-provider refuses, the code stays unused', async () => {
    const other = await newClient();
    const code = await codeFor(basic, 'openid');
    const cases: Array<[Exchange, string]> = [
      [{ client: basic, code, form: { code_verifier: oidc.randomPKCECodeVerifier() } }, 'invalid_grant'],
      [{ client: basic, code, form: { code_verifier: undefined } }, 'invalid_grant'],
      [{ client: basic, code, form: { code_verifier: 'short' } }, 'invalid_request'],
      [{ client: basic, code, form: { redirect_uri: 'http://127.0.0.1:65533/other' } }, 'invalid_grant'],
      [{ client: other, code }, 'invalid_grant'],
    ];
    for (const [req, error] of cases) {
      const out = await viaProduct(await actor(), exchange(req));
      expect(out, JSON.stringify(req.form)).toMatchObject({ direct: false, res: { status: 400 }, json: { error } });
    }
    expect((await storedRow(t, 'AuthorizationCode', code.code))?.consumed).toBe(false);
    // Then the right exchange still works, directly.
    expect(await viaProduct(await actor(), exchange({ client: basic, code }))).toMatchObject({ direct: true, res: { status: 200 } });
  });

  it('a redirect URI removed from the client while the user signed in: its code is refused (invalid_grant), unused', async () => {
    const client = await newClient({ redirect_uris: [REDIRECT, 'http://127.0.0.1:65533/kept'] });
    const code = await codeFor(client, 'openid');
    const patched = await api(t, 'PATCH', `/api/v1/clients/${client.client_id}`, { token: admin, body: { redirect_uris: ['http://127.0.0.1:65533/kept'] } });
    expect(patched.status).toBe(200);
    const out = await viaProduct(await actor(), exchange({ client, code }));
    expect(out).toMatchObject({ res: { status: 400 }, json: { error: 'invalid_grant' } });
    expect((await storedRow(t, 'AuthorizationCode', code.code))?.consumed).toBe(false);
  });

  it('a wrong secret: the same 401 invalid_client as oidc-provider, the code unused', async () => {
    const code = await codeFor(basic, 'openid');
    const req = exchange({ client: basic, code, secret: 'wrong-secret' });
    const product = await viaProduct(await actor(), req);
    const stock = await viaStock(await actor(), req);
    expect(product.res.status).toBe(401);
    expect(product.json).toEqual(stock.json);
    expect(product.res.headers?.['www-authenticate']).toBe(stock.res.headers?.['www-authenticate']);
    expect((await storedRow(t, 'AuthorizationCode', code.code))?.consumed).toBe(false);
  });

  it('a DPoP proof or a resource parameter: handed to oidc-provider', async () => {
    const code = await codeFor(basic, 'openid');
    const proof = await viaProduct(await actor(), exchange({ client: basic, code, headers: { dpop: 'not-a-proof' } }));
    expect(proof).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_dpop_proof' } });
    const target = await viaProduct(await actor(), exchange({ client: basic, code, form: { resource: 'https://unknown.example/' } }));
    expect(target.direct).toBe(false);
    expect(target.json.error).toBe('invalid_target');
  });
});
