/**
 * Issue 19 items 1-3 for users: authorization code + PKCE with `resource=<identifier>` (openid-client
 * as the relying party, Chromium as the user) gives an access token for the tenant's API that a
 * jose resource server accepts, and the `roles` scope puts the user's role in the ID and access
 * tokens (or the resource's include_roles in its access tokens only).
 */
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { launchBrowser } from '../helpers/browser.js';
import { startProtectedApi, type ProtectedApi } from '../helpers/resource-server.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { createUser, type TestUser } from '../helpers/users.js';

const ORDERS = 'https://orders.example.com/';
const REPORTS = 'https://reports.example.com/';

let t: TestApp;
let browser: Browser;
let rp: RpServer;
let user: TestUser;
let config: oidc.Configuration;
let redirect: string;
let orders: ProtectedApi;
let reports: ProtectedApi;

beforeAll(async () => {
  rp = await startRpServer();
  redirect = `${rp.origin}/cb`;
  t = await startTestApp();
  browser = await launchBrowser();
  const admin = await t.token('svc:resources:write svc:clients:write');
  for (const body of [
    { identifier: ORDERS, name: 'Orders', scopes: [{ name: 'read:orders', description: 'Read your orders' }] },
    { identifier: REPORTS, name: 'Reports', scopes: [{ name: 'read:reports', description: 'Read reports' }], include_roles: true },
  ]) {
    const res = await api(t, 'POST', '/api/v1/resources', { token: admin, body });
    if (res.status !== 201) throw new Error(res.text);
  }
  user = await createUser(t, { role: 'admin', email_verified: true });
  const client = await api(t, 'POST', '/api/v1/clients', {
    token: admin,
    body: { client_name: 'Shop', application_type: 'web', redirect_uris: [redirect], grant_types: ['authorization_code'], scope: 'openid profile roles read:orders read:reports' },
  });
  if (client.status !== 201) throw new Error(client.text);
  config = await oidc.discovery(new URL(t.issuer), client.json.data.client_id, client.json.data.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
  orders = await startProtectedApi({ issuer: t.issuer, audience: ORDERS, requiredScope: 'read:orders' });
  reports = await startProtectedApi({ issuer: t.issuer, audience: REPORTS, requiredScope: 'read:reports' });
});
afterAll(async () => {
  await orders?.close();
  await reports?.close();
  await browser?.close();
  await t?.close();
  await rp?.close();
});

/** One sign-in with consent; the token response. */
async function signIn(params: Record<string, string>) {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirect,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
      ...params,
    });
    await page.goto(url.href);
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${redirect}**`);
    return await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
  } finally {
    await context.close();
  }
}

describe('authorization code with a resource indicator', () => {
  it('gives an access token for the resource with the roles claim; the ID token has it too', async () => {
    const tokens = await signIn({ scope: 'openid roles read:orders', resource: ORDERS });
    const at = decodeJwt(tokens.access_token);
    expect(at).toMatchObject({ aud: ORDERS, sub: user.id, scope: 'read:orders', roles: ['admin'] });
    expect(tokens.claims()).toMatchObject({ sub: user.id, roles: ['admin'] });
    const call = await orders.call(tokens.access_token);
    expect(call.status).toBe(200);
    expect(call.body).toMatchObject({ sub: user.id, roles: ['admin'] });
    // Not for another resource, and not for the Management API.
    expect((await reports.call(tokens.access_token)).status).toBe(401);
    expect((await api(t, 'GET', '/api/v1/clients', { token: tokens.access_token })).status).toBe(401);
  });

  it('without the roles scope there is no roles claim; include_roles adds it to that resource only', async () => {
    const plain = await signIn({ scope: 'openid read:orders', resource: ORDERS });
    expect(decodeJwt(plain.access_token).roles).toBeUndefined();
    expect(plain.claims()!.roles).toBeUndefined();
    const withRoles = await signIn({ scope: 'openid read:reports', resource: REPORTS });
    expect(decodeJwt(withRoles.access_token)).toMatchObject({ aud: REPORTS, roles: ['admin'] });
    expect(withRoles.claims()!.roles).toBeUndefined();
    expect((await reports.call(withRoles.access_token)).status).toBe(200);
  });

  it('the userinfo endpoint returns roles with the roles scope', async () => {
    const tokens = await signIn({ scope: 'openid profile roles' });
    const info = await oidc.fetchUserInfo(config, tokens.access_token, user.id);
    expect(info.roles).toEqual(['admin']);
  });

  it('an unknown resource is refused with invalid_target', async () => {
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: redirect, scope: 'openid', resource: 'https://unknown.example/', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' });
    const res = await fetch(url, { redirect: 'manual' });
    const location = new URL(res.headers.get('location')!);
    expect(location.searchParams.get('error')).toBe('invalid_target');
  });
});

describe('custom claims in tokens', () => {
  it('puts the configured claims in the ID token, userinfo and the access token, and never replaces reserved ones', async () => {
    const admin = await t.token('svc:resources:write');
    const put = await api(t, 'PUT', '/api/v1/claims', {
      token: admin,
      body: { claims: [{ name: 'tenant', value: 'acme' }, { name: 'https://acme.example/uid', from: 'id' }, { name: 'provider', from: 'auth_provider' }, { name: 'nick', from: 'nickname' }] },
    });
    expect(put.status).toBe(200);
    const tokens = await signIn({ scope: 'openid profile read:orders', resource: ORDERS });
    const id = tokens.claims()!;
    expect(id).toMatchObject({ sub: user.id, tenant: 'acme', 'https://acme.example/uid': user.id, provider: 'local', iss: t.issuer });
    // The user has no nickname: no claim rather than null.
    expect('nick' in id).toBe(false);
    const at = decodeJwt(tokens.access_token);
    expect(at).toMatchObject({ aud: ORDERS, sub: user.id, tenant: 'acme', provider: 'local' });
    const plain = await signIn({ scope: 'openid profile' });
    const info = await oidc.fetchUserInfo(config, plain.access_token, user.id);
    expect(info).toMatchObject({ sub: user.id, tenant: 'acme', 'https://acme.example/uid': user.id });
    // Clearing the list removes them at once.
    expect((await api(t, 'PUT', '/api/v1/claims', { token: admin, body: { claims: [] } })).status).toBe(200);
    const after = await signIn({ scope: 'openid', resource: ORDERS });
    expect(after.claims()!.tenant).toBeUndefined();
  });
});

describe('hostile resource definitions on the consent page', () => {
  // A scope without a description is shown by its name (one with a description by that: resource-scopes-audienceless.test.ts).
  it('shows a scope name full of markup as text, runs nothing, and stays accessible', async () => {
    const evil = '<img/src=x/onerror=alert(1)>';
    const admin = await t.token('svc:resources:write svc:clients:write');
    const created = await api(t, 'POST', '/api/v1/resources', { token: admin, body: { identifier: 'https://evil.example/', name: '<script>alert(2)</script>', scopes: [{ name: evil }] } });
    expect(created.status, created.text).toBe(201);
    const client = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: '<i>Evil</i>', redirect_uris: [redirect], grant_types: ['authorization_code'], scope: `openid ${evil}` } });
    expect(client.status, client.text).toBe(201);
    const cfg = await oidc.discovery(new URL(t.issuer), client.json.data.client_id, client.json.data.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      let dialogs = 0;
      page.on('dialog', (d) => {
        dialogs++;
        void d.dismiss();
      });
      const verifier = oidc.randomPKCECodeVerifier();
      const url = oidc.buildAuthorizationUrl(cfg, { redirect_uri: redirect, scope: `openid ${evil}`, resource: 'https://evil.example/', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
      await page.goto(url.href);
      await page.getByLabel('E-mail').fill(user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      const allow = page.getByRole('button', { name: 'Allow' });
      await allow.waitFor();
      expect(await page.locator('body').innerText()).toContain(evil);
      expect(await page.locator('img').count()).toBe(0);
      expect(await seriousViolations(page)).toEqual([]);
      await allow.click();
      await page.waitForURL(`${redirect}**`);
      const tokens = await oidc.authorizationCodeGrant(cfg, new URL(page.url()), { pkceCodeVerifier: verifier });
      expect(decodeJwt(tokens.access_token)).toMatchObject({ aud: 'https://evil.example/', scope: evil });
      expect(dialogs).toBe(0);
    } finally {
      await context.close();
    }
  });
});
