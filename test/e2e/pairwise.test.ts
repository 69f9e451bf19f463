/**
 * Issue 19 item 6: `subject_type: pairwise` gives a user a different `sub` per sector (the redirect
 * host) and the same `sub` at every sign-in of that sector; public clients see the user's id.
 */
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { createUser, type TestUser } from '../helpers/users.js';

let t: TestApp;
let browser: Browser;
let rp: RpServer;
let user: TestUser;
let other: TestUser;

beforeAll(async () => {
  rp = await startRpServer();
  t = await startTestApp();
  browser = await launchBrowser();
  user = await createUser(t, { email_verified: true });
  other = await createUser(t, { email_verified: true });
});
afterAll(async () => {
  await browser?.close();
  await t?.close();
  await rp?.close();
});

async function rpFor(redirect: string, subjectType: 'public' | 'pairwise', scope = 'openid') {
  const token = await t.token('svc:clients:write');
  const res = await api(t, 'POST', '/api/v1/clients', {
    token,
    body: { client_name: `rp ${subjectType}`, redirect_uris: [redirect], grant_types: ['authorization_code'], scope, subject_type: subjectType, first_party: true },
  });
  if (res.status !== 201) throw new Error(res.text);
  const config = await oidc.discovery(new URL(t.issuer), res.json.data.client_id, res.json.data.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
  return { config, redirect };
}

async function subjectOf(client: { config: oidc.Configuration; redirect: string }, who: TestUser): Promise<string> {
  return (await signIn(client, who)).claims()!.sub;
}

async function signIn(client: { config: oidc.Configuration; redirect: string }, who: TestUser, params: Record<string, string> = {}) {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const verifier = oidc.randomPKCECodeVerifier();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(client.config, { redirect_uri: client.redirect, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', nonce, ...params });
    await page.goto(url.href);
    await page.getByLabel('E-mail').fill(who.email);
    await page.getByLabel('Password').fill(who.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${client.redirect}**`);
    return await oidc.authorizationCodeGrant(client.config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedNonce: nonce }, params.resource ? { resource: params.resource } : undefined);
  } finally {
    await context.close();
  }
}

describe('subject_type pairwise', () => {
  it('differs per sector, is stable per user, and never is the user id', async () => {
    const port = new URL(rp.origin).port;
    const a = await rpFor(`http://localhost:${port}/a`, 'pairwise');
    const a2 = await rpFor(`http://localhost:${port}/other-path`, 'pairwise');
    const b = await rpFor(`http://127.0.0.1:${port}/b`, 'pairwise');
    const pub = await rpFor(`http://localhost:${port}/p`, 'public');

    const atA = await subjectOf(a, user);
    expect(atA).not.toBe(user.id);
    expect(await subjectOf(a, user)).toBe(atA); // stable across sign-ins
    expect(await subjectOf(a2, user)).toBe(atA); // same sector (host), another client
    const atB = await subjectOf(b, user);
    expect(atB).not.toBe(atA);
    expect(atB).not.toBe(user.id);
    expect(await subjectOf(a, other)).not.toBe(atA); // another user, same sector
    expect(await subjectOf(pub, user)).toBe(user.id);
  });
});

describe('a pairwise client with an API resource', () => {
  it("has its JWT access token introspect as active with the sector's subject (the user is the grant's account)", async () => {
    const ORDERS = 'https://orders.example.com/';
    const made = await api(t, 'POST', '/api/v1/resources', { token: await t.token('svc:resources:write'), body: { identifier: ORDERS, name: 'Orders', scopes: [{ name: 'read:orders' }] } });
    expect(made.status, made.text).toBe(201);
    const client = await rpFor(`http://localhost:${new URL(rp.origin).port}/orders`, 'pairwise', 'openid read:orders');
    const tokens = await signIn(client, user, { scope: 'openid read:orders', resource: ORDERS });
    const sub = tokens.claims()!.sub;
    expect(sub).not.toBe(user.id);
    const info = await oidc.tokenIntrospection(client.config, tokens.access_token);
    expect(info).toMatchObject({ active: true, sub, aud: ORDERS, scope: 'read:orders' });
  });
});

