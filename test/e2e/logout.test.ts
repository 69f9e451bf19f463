/**
 * RP-initiated logout and back-channel logout: the end-session page in Chromium, the state echoed
 * to the registered post_logout_redirect_uri, the logout_token received by a local receiver and
 * verified against the served JWKS, prompt=none before and after.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { createClient, createUser, type TestUser } from '../helpers/users.js';


interface Receiver {
  server: Server;
  url: string;
  tokens: string[];
  /** Status codes to answer with, in order; 200 after they run out. */
  script: number[];
}

async function startReceiver(script: number[] = []): Promise<Receiver> {
  const r: Receiver = { server: createServer(), url: '', tokens: [], script };
  r.server.on('request', (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      r.tokens.push(new URLSearchParams(body).get('logout_token') ?? '');
      res.statusCode = r.script.shift() ?? 200;
      res.end();
    });
  });
  await new Promise<void>((resolve) => r.server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(r.server.address() as AddressInfo).port}/backchannel`;
  return r;
}

describe('logout', () => {
  let t: TestApp;
  let browser: Browser;
  let user: TestUser;
  let rp: RpServer;
  let APP: string;

  beforeAll(async () => {
    rp = await startRpServer();
    APP = rp.origin;
    t = await startTestApp();
    browser = await launchBrowser();
    user = await createUser(t);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rp?.close();
  });

  async function setup(receiver: Receiver) {
    const client = await createClient(t, {
      client_name: 'Logout App',
      redirect_uris: [`${APP}/cb`],
      post_logout_redirect_uris: [`${APP}/bye`],
      backchannel_logout_uri: receiver.url,
      first_party: true,
      scope: 'openid profile',
    });
    const config = await oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
    const page = await (await browser.newContext()).newPage();
    return { client, config, page };
  }

  async function authorize(page: Page, config: oidc.Configuration, extra: Record<string, string> = {}) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: `${APP}/cb`, scope: 'openid profile', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, ...extra });
    await page.goto(url.href);
    return { verifier, state };
  }

  it('ends the session, echoes state, delivers a verifiable logout_token, and prompt=none then needs a login', async () => {
    const receiver = await startReceiver();
    const { client, config, page } = await setup(receiver);
    const first = await authorize(page, config);
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${APP}/cb**`);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: first.verifier, expectedState: first.state });
    const sid = tokens.claims()!.sid as string;
    expect(sid).toBeTruthy();

    // During the session prompt=none answers with a code.
    const silent = await authorize(page, config, { prompt: 'none' });
    await page.waitForURL(`${APP}/cb**`);
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    expect(new URL(page.url()).searchParams.get('state')).toBe(silent.state);

    const end = oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: `${APP}/bye`, state: 'bye-state' });
    await page.goto(end.href);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${APP}/bye**`);
    expect(new URL(page.url()).searchParams.get('state')).toBe('bye-state');

    // Back-channel: delivered once, verifies against the published keys, claims of CONTRACT.md.
    await expect.poll(() => receiver.tokens.length, { timeout: 5000 }).toBe(1);
    const token = receiver.tokens[0]!;
    const { payload } = await jwtVerify(token, createRemoteJWKSet(new URL(`${t.url}/oidc/v1/jwks`)), { issuer: t.issuer, audience: client.client_id });
    expect(decodeProtectedHeader(token).typ).toBe('logout+jwt');
    expect(payload.sub).toBe(user.id);
    expect(payload.sid).toBe(sid);
    expect(payload.exp! - payload.iat!).toBe(120);
    expect(payload.jti).toBeTruthy();
    expect(payload.events).toEqual({ 'http://schemas.openid.net/event/backchannel-logout': {} });

    // After logout prompt=none needs a login again.
    const after = await authorize(page, config, { prompt: 'none' });
    await page.waitForURL(`${APP}/cb**`);
    const params = new URL(page.url()).searchParams;
    expect(params.get('error')).toBe('login_required');
    expect(params.get('state')).toBe(after.state);

    const logouts = await t.app.ctx.storage.audit.list('default', { type: 'logout', user_id: user.id }, { limit: 5, include_count: true });
    expect(logouts.total_count).toBe(1);
    // Named like the user's login entries, so the audit log's user filter finds the logout too.
    expect(logouts.items[0]).toMatchObject({ username: user.email, client_id: client.client_id });
    expect((await t.app.ctx.storage.audit.list('default', { type: 'logout', username: user.email }, { limit: 5, include_count: true })).total_count).toBe(1);
    await expect
      .poll(async () => (await t.app.ctx.storage.audit.list('default', { type: 'backchannel_logout', client_id: client.client_id }, { limit: 5, include_count: true })).total_count)
      .toBe(1);
    receiver.server.close();
    await page.context().close();
  });

  it('refuses a post_logout_redirect_uri that is not registered', async () => {
    const receiver = await startReceiver();
    const { config, page } = await setup(receiver);
    const end = oidc.buildEndSessionUrl(config, { post_logout_redirect_uri: `${APP}/elsewhere`, state: 's' });
    const res = await page.goto(end.href);
    expect(res!.status()).toBe(400);
    expect(page.url()).not.toContain('/elsewhere');
    receiver.server.close();
    await page.context().close();
  });

  it('retries back-channel delivery at 0 s, 2 s and 10 s and audits each attempt', async () => {
    const receiver = await startReceiver([500, 503]);
    const { client, config, page } = await setup(receiver);
    const { verifier, state } = await authorize(page, config);
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${APP}/cb**`);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state });
    const started = Date.now();
    await page.goto(oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: `${APP}/bye` }).href);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${APP}/bye**`);
    await expect.poll(() => receiver.tokens.length, { timeout: 15000, interval: 250 }).toBe(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(9500);
    const attempts = await t.app.ctx.storage.audit.list('default', { type: 'backchannel_logout', client_id: client.client_id }, { limit: 10, include_count: true });
    expect(attempts.total_count).toBe(3);
    expect(attempts.items.map((e) => e.status).sort()).toEqual(['success', 'warning', 'warning']);
    receiver.server.close();
    await page.context().close();
  }, 30000);
});
