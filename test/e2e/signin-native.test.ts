/**
 * Native clients, end to end: authorization code + PKCE in headless Chromium (the system browser
 * of a native app) with openid-client as the app. A custom-scheme redirect cannot be followed by
 * the browser, so the final 303 Location is captured and handed to openid-client, as the OS would
 * hand it to the app. Also: a loopback redirect on a port chosen at run time (RFC 8252 7.3), the
 * refusal of requests without PKCE (spec 1.1 rule 1) and of custom schemes that are not
 * reverse-domain names (spec 1.1 rule 2).
 */
import { createServer, type Server } from 'node:http';
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { createClient, createUser, type TestUser } from '../helpers/users.js';

const CUSTOM_REDIRECT = 'com.example.app:/callback';
const SCOPE = 'openid profile email';

describe('native client: authorization code + PKCE', () => {
  let t: TestApp;
  let browser: Browser;
  let user: TestUser;

  beforeAll(async () => {
    t = await startTestApp();
    browser = await launchBrowser();
    user = await createUser(t, { email_verified: true });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** Public client: no secret, token_endpoint_auth_method none. */
  function discover(clientId: string): Promise<oidc.Configuration> {
    return oidc.discovery(new URL(t.issuer), clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
  }

  async function pkceRequest(config: oidc.Configuration, redirectUri: string) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: SCOPE,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url, verifier, state, nonce };
  }

  async function signIn(page: Page) {
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  it('completes the flow for a custom-scheme redirect: the 303 Location carries the code to the app', async () => {
    const client = await createClient(t, {
      client_name: 'Native App',
      application_type: 'native',
      redirect_uris: [CUSTOM_REDIRECT],
      grant_types: ['authorization_code'],
      scope: SCOPE,
    });
    expect(client.token_endpoint_auth_method).toBe('none');
    expect(client.client_secret).toBeUndefined();
    const config = await discover(client.client_id);
    const { url, verifier, state, nonce } = await pkceRequest(config, CUSTOM_REDIRECT);

    const context = await browser.newContext();
    const page = await context.newPage();
    // The browser cannot open com.example.app:, so watch for the redirect that leads there.
    const handedToApp = new Promise<string>((resolve) => {
      page.on('response', (r) => {
        const location = r.headers()['location'];
        if (r.status() === 303 && location?.startsWith(`${CUSTOM_REDIRECT}?`)) resolve(location);
      });
    });
    await page.goto(url.href);
    await signIn(page);
    // Not first-party: the consent page comes next.
    await page.getByRole('button', { name: 'Allow' }).click();
    const location = await Promise.race([handedToApp, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no redirect to the custom scheme')), 10000))]);
    await context.close();

    const callback = new URL(location);
    expect(callback.protocol).toBe('com.example.app:');
    expect(callback.pathname).toBe('/callback');
    expect(callback.searchParams.get('code')).toBeTruthy();
    expect(callback.searchParams.get('state')).toBe(state);
    expect(callback.searchParams.get('iss')).toBe(t.issuer);

    const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.access_token).toBeTruthy();
    const claims = tokens.claims()!;
    expect(claims.sub).toBe(user.id);
    expect(claims.aud).toBe(client.client_id);
    expect(claims.iss).toBe(t.issuer);
    expect(claims.nonce).toBe(nonce);
    const info = await oidc.fetchUserInfo(config, tokens.access_token, user.id);
    expect(info.email).toBe(user.email);

    // The code is bound to the verifier: a second exchange (even with the right verifier) fails.
    await expect(oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce })).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('refuses a code exchange with the wrong PKCE verifier', async () => {
    const client = await createClient(t, { client_name: 'Native App 2', application_type: 'native', redirect_uris: [CUSTOM_REDIRECT], first_party: true, scope: SCOPE });
    const config = await discover(client.client_id);
    const { url, state, nonce } = await pkceRequest(config, CUSTOM_REDIRECT);
    const context = await browser.newContext();
    const page = await context.newPage();
    const handedToApp = new Promise<string>((resolve) => {
      page.on('response', (r) => {
        const location = r.headers()['location'];
        if (r.status() === 303 && location?.startsWith(`${CUSTOM_REDIRECT}?`)) resolve(location);
      });
    });
    await page.goto(url.href);
    await signIn(page); // first-party: no consent page
    const callback = new URL(await handedToApp);
    await context.close();
    expect(callback.searchParams.get('code')).toBeTruthy();
    await expect(
      oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: oidc.randomPKCECodeVerifier(), expectedState: state, expectedNonce: nonce }),
    ).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('completes the flow for a loopback redirect on a port chosen at run time', async () => {
    // Registered without a port; the app listens on whatever port it gets (RFC 8252 7.3).
    const client = await createClient(t, {
      client_name: 'Desktop App',
      application_type: 'native',
      redirect_uris: ['http://127.0.0.1/callback'],
      first_party: true,
      scope: SCOPE,
    });
    const received: URL[] = [];
    const server: Server = createServer((req, res) => {
      received.push(new URL(req.url ?? '/', 'http://127.0.0.1'));
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('You can close this window.');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as { port: number }).port;
      const redirectUri = `http://127.0.0.1:${port}/callback`;
      const config = await discover(client.client_id);
      const { url, verifier, state, nonce } = await pkceRequest(config, redirectUri);

      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(url.href);
      await signIn(page);
      await page.waitForURL((u) => u.href.startsWith(redirectUri));
      expect(await page.textContent('body')).toContain('You can close this window.');
      await context.close();

      const callbacks = received.filter((u) => u.pathname === '/callback');
      expect(callbacks).toHaveLength(1);
      const callback = new URL(`${redirectUri}${callbacks[0]!.search}`);
      expect(callback.searchParams.get('state')).toBe(state);
      const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
      expect(tokens.claims()!.sub).toBe(user.id);
      expect(tokens.claims()!.aud).toBe(client.client_id);
      const info = await oidc.fetchUserInfo(config, tokens.access_token, user.id);
      expect(info.email).toBe(user.email);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('rejects authorization requests without PKCE or with plain PKCE (spec 1.1 rules 1 and 3)', async () => {
    const client = await createClient(t, { client_name: 'Native No PKCE', application_type: 'native', redirect_uris: [CUSTOM_REDIRECT, 'http://127.0.0.1/callback'], first_party: true, scope: SCOPE });
    for (const redirectUri of [CUSTOM_REDIRECT, 'http://127.0.0.1:53682/callback']) {
      for (const extra of [{}, { code_challenge: 'x'.repeat(43), code_challenge_method: 'plain' }] as Record<string, string>[]) {
        const res = await fetch(
          `${t.url}/oidc/v1/auth?` + new URLSearchParams({ client_id: client.client_id, response_type: 'code', scope: 'openid', redirect_uri: redirectUri, state: 'st-1', ...extra }),
          { redirect: 'manual' },
        );
        expect(res.status).toBe(303);
        const location = new URL(res.headers.get('location')!);
        expect(`${location.protocol}${location.host ? `//${location.host}` : ''}${location.pathname}`).toBe(redirectUri);
        expect(location.searchParams.get('error')).toBe('invalid_request');
        expect(location.searchParams.get('code')).toBeNull();
        expect(location.searchParams.get('state')).toBe('st-1');
        expect(location.searchParams.get('iss')).toBe(t.issuer);
      }
    }

    // And a code obtained with PKCE cannot be redeemed without the verifier.
    const config = await discover(client.client_id);
    const { url, state } = await pkceRequest(config, CUSTOM_REDIRECT);
    const context = await browser.newContext();
    const page = await context.newPage();
    const handedToApp = new Promise<string>((resolve) => {
      page.on('response', (r) => {
        const location = r.headers()['location'];
        if (r.status() === 303 && location?.startsWith(`${CUSTOM_REDIRECT}?`)) resolve(location);
      });
    });
    await page.goto(url.href);
    await signIn(page);
    const callback = new URL(await handedToApp);
    await context.close();
    expect(callback.searchParams.get('state')).toBe(state);
    const res = await fetch(`${t.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', client_id: client.client_id, code: callback.searchParams.get('code')!, redirect_uri: CUSTOM_REDIRECT }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_grant');
  });

  it('refuses a custom scheme that is not a reverse-domain name at client creation (spec 1.1 rule 2)', async () => {
    const token = await t.token('svc:clients:write');
    const res = await api(t, 'POST', '/api/v1/clients', { token, body: { client_name: 'Bad Native', application_type: 'native', redirect_uris: ['myapp:/cb'] } });
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.json.type).toBe('urn:svc:error:validation');
    expect(res.json.errors.map((e: { field: string }) => e.field)).toContain('redirect_uris.0');

    // Its reverse-domain counterpart is accepted, and is a public client.
    const ok = await api(t, 'POST', '/api/v1/clients', { token, body: { client_name: 'Good Native', application_type: 'native', redirect_uris: ['com.example.myapp:/cb'] } });
    expect(ok.status).toBe(201);
    expect(ok.json.data.token_endpoint_auth_method).toBe('none');
  });
});
