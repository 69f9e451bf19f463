/**
 * A user flow without `resource` gets an access token without an audience (userinfo's): an API
 * resource's scope asked for there is not granted into it (docs/decisions.md "Which scopes a client
 * gets", RFC 8707), on oidc-provider's path and on the product's direct code and refresh paths
 * alike; with `resource=` the scope goes into that resource's token, as before.
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type TestApp } from '../helpers/app.js';
import type { CodeFlowClient, HttpSession } from '../helpers/code-flow.js';
import { introspect } from '../helpers/oauth.js';
import { bearerProtector } from '../../src/oidc/bearer-at-rest.js';
import { decodeJwt, expectAlike, storedRow, tokenRequest, viaProduct, viaStock } from '../helpers/token-parity.js';
import { startUserFlowFixture, type UserFlowFixture } from '../helpers/user-flow-fixture.js';

const REDIRECT = 'http://127.0.0.1:65521/cb';
const ORDERS = 'https://orders.example.com/';
const HOSTILE = 'https://hostile.example.com/';

let t: TestApp;
let session: HttpSession;
let shop: CodeFlowClient;
let actor: UserFlowFixture['actor'];
let thirdParty: CodeFlowClient;

beforeAll(async () => {
  let admin: string;
  let newClient: UserFlowFixture['newClient'];
  ({ t, admin, session, newClient, actor } = await startUserFlowFixture(REDIRECT, 'svc:clients:write svc:users:write svc:resources:write'));
  const res = await api(t, 'POST', '/api/v1/resources', { token: admin, body: { identifier: ORDERS, name: 'Orders', scopes: [{ name: 'read:orders', description: 'Read your orders' }], token_format: 'opaque' } });
  if (res.status !== 201) throw new Error(res.text);
  const hostile = await api(t, 'POST', '/api/v1/resources', { token: admin, body: { identifier: HOSTILE, name: 'Hostile', scopes: [{ name: 'read:hostile', description: '<img src=x onerror=alert(1)>"&' }] } });
  if (hostile.status !== 201) throw new Error(hostile.text);
  shop = await newClient({ scope: 'openid profile offline_access read:orders' });
  thirdParty = await newClient({ scope: 'openid profile offline_access read:orders read:hostile', first_party: false });
});
afterAll(async () => t?.close());

/** A code for `shop` through the sign-in pages (PKCE S256). */
async function codeFor(scope: string, extra: Record<string, string> = {}, client = shop) {
  const config = new oidc.Configuration({ issuer: t.issuer, authorization_endpoint: `${t.issuer}/auth` }, client.client_id, client.client_secret);
  oidc.allowInsecureRequests(config);
  const verifier = oidc.randomPKCECodeVerifier();
  const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope, state: oidc.randomState(), code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', prompt: 'consent', ...extra });
  const callback = await session.authorize(url.href, REDIRECT);
  const code = callback.searchParams.get('code');
  if (!code) throw new Error(`no code: ${callback.href}`);
  return tokenRequest(t, { client, form: { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier } });
}

const refreshRequest = (refreshToken: string, extra: Record<string, string> = {}) =>
  tokenRequest(t, { client: shop, form: { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra } });

describe('a resource scope asked for without resource', () => {
  it('is not in the userinfo token, on the direct code path and on oidc-provider alike', async () => {
    session.consent = true;
    const a = await actor();
    const product = await viaProduct(a, await codeFor('openid read:orders offline_access'));
    const stock = await viaStock(a, await codeFor('openid read:orders offline_access'));
    await expectAlike(t, product, stock);
    for (const answer of [product, stock]) {
      expect(answer.json.scope).toBe('openid offline_access');
      // Introspection (by another client too) shows no resource scope and no audience.
      const seen = await introspect(t, answer.json.access_token);
      expect(seen.json).toMatchObject({ active: true, scope: 'openid offline_access' });
      expect(seen.json.aud).toBeUndefined();
    }

    // Refreshed without resource: still none, on both paths.
    const refreshed = await viaProduct(a, refreshRequest(product.json.refresh_token));
    const refreshedStock = await viaStock(a, refreshRequest(stock.json.refresh_token));
    await expectAlike(t, refreshed, refreshedStock);
    expect(refreshed.json.scope).toBe('openid offline_access');
    expect((await introspect(t, refreshed.json.access_token)).json).toMatchObject({ active: true, scope: 'openid offline_access' });
  });

  it('a refresh token issued before this rule (its scope and its grant name the resource scope) gives none either, on both paths', async () => {
    session.consent = true;
    const a = await actor();
    const tokens = [(await viaStock(a, await codeFor('openid read:orders offline_access'))).json, (await viaStock(a, await codeFor('openid read:orders offline_access'))).json];
    // As such a token and grant were stored: the resource scope in the token's scope and the grant's OIDC scope.
    for (const token of tokens) {
      const row = (await storedRow(t, 'RefreshToken', token.refresh_token))!;
      const id = bearerProtector(t.app.ctx.sealer).storedId('default', 'RefreshToken', token.refresh_token);
      await t.app.ctx.storage.oidc.upsert('default', 'RefreshToken', id, { ...row.payload, scope: 'openid read:orders offline_access' }, row.expires_at);
      const grantId = String(row.payload.grantId);
      const grant = (await t.app.ctx.storage.oidc.find('default', 'Grant', grantId))!;
      const openid = grant.payload.openid as { scope: string };
      expect(openid.scope.split(' ')).toContain('read:orders');
    }
    const product = await viaProduct(a, refreshRequest(tokens[0]!.refresh_token));
    const stock = await viaStock(a, refreshRequest(tokens[1]!.refresh_token));
    await expectAlike(t, product, stock);
    expect(product.json.scope).toBe('openid offline_access');
    expect((await introspect(t, product.json.access_token)).json).toMatchObject({ active: true, scope: 'openid offline_access' });
  });

  it('is not on the consent page, which lists what the token will carry; with resource it is, described as its resource describes it', async () => {
    session.consent = true;
    await codeFor('openid profile read:orders', {}, thirdParty);
    const withoutResource = session.consentPages.at(-1)!;
    expect(withoutResource).toMatch(/<ul class="scopes">[\s\S]*<\/ul>/);
    expect(withoutResource).not.toContain('read:orders');
    expect(withoutResource).not.toContain('Read your orders');
    await codeFor('openid profile read:orders', { resource: ORDERS }, thirdParty);
    // Asked for with its resource, the scope is listed with the description the resource gives it.
    const withResource = session.consentPages.at(-1)!;
    expect(withResource).toContain('<li>Read your orders</li>');
    expect(withResource).not.toContain('read:orders');
  });

  it('a description with markup is shown as text', async () => {
    session.consent = true;
    await codeFor('openid read:hostile', { resource: HOSTILE }, thirdParty);
    const page = session.consentPages.at(-1)!;
    expect(page).toContain('<li>&lt;img src=x onerror=alert(1)&gt;&quot;&amp;</li>');
    expect(page).not.toContain('<img src=x');
  });

  it('alone, without openid: nothing is granted (access_denied)', async () => {
    session.consent = true;
    await expect(codeFor('read:orders')).rejects.toThrow(/access_denied/);
  });
});

describe('a resource scope asked for with resource', () => {
  it('goes into the token for that resource, at sign-in and at refresh for it', async () => {
    session.consent = true;
    const a = await actor();
    const signedIn = await viaProduct(a, await codeFor('openid read:orders offline_access', { resource: ORDERS }));
    expect(signedIn.res.status, String(signedIn.res.body)).toBe(200);
    expect(signedIn.json.scope).toBe('read:orders');
    expect(decodeJwt(signedIn.json.id_token)[1]).toMatchObject({ aud: shop.client_id });
    expect((await introspect(t, signedIn.json.access_token)).json).toMatchObject({ active: true, scope: 'read:orders', aud: ORDERS });

    const forOrders = await viaProduct(a, refreshRequest(signedIn.json.refresh_token, { resource: ORDERS }));
    expect(forOrders.res.status, String(forOrders.res.body)).toBe(200);
    expect((await introspect(t, forOrders.json.access_token)).json).toMatchObject({ active: true, scope: 'read:orders', aud: ORDERS });
  });
});
