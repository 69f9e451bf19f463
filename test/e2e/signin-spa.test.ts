/// <reference lib="dom" />
/**
 * Single page app, end to end with a real SPA library: oidc-client-ts (its browser bundle) runs in
 * headless Chromium on its own origin (a tiny static server), configured as spec 1.1 rule 4 says
 * (authority, client_id, redirect_uri, scope, response_type=code, automaticSilentRenew). It covers
 * the redirect sign-in with PKCE, the token request from the SPA origin (CORS), silent renewal in a
 * hidden iframe with prompt=none, userinfo from the browser, and the refusal of requests without a
 * code challenge (spec 1.1 rule 1).
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import type { Browser, BrowserContext, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { createClient, createUser, type TestUser } from '../helpers/users.js';

const LIBRARY = readFileSync(fileURLToPath(new URL('../../node_modules/oidc-client-ts/dist/browser/oidc-client-ts.min.js', import.meta.url)));

/** What the page can read back about the user oidc-client-ts holds. */
interface SpaUser {
  access_token: string;
  id_token: string;
  refresh_token?: string;
  token_type: string;
  scope?: string;
  expires_in?: number;
  profile: Record<string, unknown>;
}

interface SpaServer {
  server: Server;
  port: number;
  /** http://localhost:<port> */
  origin: string;
  clientId: string;
}

/** The static SPA: index.html, app.js (the UserManager), callback.html, silent.html and the library. */
function startSpaServer(issuer: string): Promise<SpaServer> {
  const spa = { clientId: '' } as SpaServer;
  const appJs = () => `
window.spaSettings = {
  authority: ${JSON.stringify(issuer)},
  client_id: ${JSON.stringify(spa.clientId)},
  redirect_uri: location.origin + '/callback.html',
  silent_redirect_uri: location.origin + '/silent.html',
  scope: 'openid profile email',
  response_type: 'code',
  automaticSilentRenew: true,
  accessTokenExpiringNotificationTimeInSeconds: 60,
};
// A test may adjust settings for the next page loads of this tab.
Object.assign(window.spaSettings, JSON.parse(sessionStorage.getItem('spa_overrides') || '{}'));
if (!window.NO_MANAGER) {
  window.mgr = new oidc.UserManager(window.spaSettings);
  window.spaEvents = [];
  mgr.events.addUserLoaded((u) => spaEvents.push({ type: 'userLoaded', access_token: u.access_token }));
  mgr.events.addSilentRenewError((e) => spaEvents.push({ type: 'silentRenewError', message: String(e && e.message) }));
  window.readUser = async () => {
    const u = await mgr.getUser();
    return u && { access_token: u.access_token, id_token: u.id_token, refresh_token: u.refresh_token, token_type: u.token_type, scope: u.scope, expires_in: u.expires_in, profile: u.profile };
  };
}
`;
  const pages: Record<string, string> = {
    '/index.html': `<!doctype html><html><head><meta charset="utf-8"><title>SPA</title></head><body>
<button id="login">Log in</button><p id="status">idle</p>
<script src="/oidc-client-ts.min.js"></script><script src="/app.js"></script>
<script>
document.getElementById('login').addEventListener('click', () => {
  mgr.signinRedirect().catch((e) => { document.getElementById('status').textContent = 'error: ' + e.message; });
});
</script></body></html>`,
    '/callback.html': `<!doctype html><html><head><meta charset="utf-8"><title>SPA callback</title></head><body>
<p id="status">pending</p>
<script src="/oidc-client-ts.min.js"></script><script src="/app.js"></script>
<script>
mgr.signinRedirectCallback().then(
  () => { document.getElementById('status').textContent = 'signed-in'; },
  (e) => {
    window.callbackError = { error: e.error ?? null, error_description: e.error_description ?? null, message: String(e.message) };
    document.getElementById('status').textContent = 'error';
  },
);
</script></body></html>`,
    '/silent.html': `<!doctype html><html><head><meta charset="utf-8"><title>SPA silent</title></head><body>
<script>window.NO_MANAGER = true;</script>
<script src="/oidc-client-ts.min.js"></script><script src="/app.js"></script>
<script>new oidc.UserManager({ ...window.spaSettings, automaticSilentRenew: false }).signinSilentCallback();</script>
</body></html>`,
  };
  spa.server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const send = (type: string, body: string | Buffer) => {
      res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (path === '/oidc-client-ts.min.js') return send('text/javascript; charset=utf-8', LIBRARY);
    if (path === '/app.js') return send('text/javascript; charset=utf-8', appJs());
    const page = pages[path === '/' ? '/index.html' : path];
    if (page) return send('text/html; charset=utf-8', page);
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  });
  return new Promise((resolve, reject) => {
    spa.server.once('error', reject);
    spa.server.listen(0, '127.0.0.1', () => {
      const addr = spa.server.address();
      if (!addr || typeof addr !== 'object') return reject(new Error('no port'));
      spa.port = addr.port;
      spa.origin = `http://localhost:${addr.port}`;
      resolve(spa);
    });
  });
}

describe('spa client: oidc-client-ts in the browser', () => {
  let t: TestApp;
  let browser: Browser;
  let spa: SpaServer;
  let user: TestUser;
  let client: Record<string, any>;

  beforeAll(async () => {
    t = await startTestApp();
    browser = await launchBrowser();
    spa = await startSpaServer(t.issuer);
    user = await createUser(t, { email_verified: true });
    // Not first-party: the consent page (Allow) is part of the flow.
    client = await createClient(t, {
      client_name: 'Single Page App',
      application_type: 'spa',
      redirect_uris: [`${spa.origin}/callback.html`, `${spa.origin}/silent.html`],
      grant_types: ['authorization_code'],
      scope: 'openid profile email',
    });
    spa.clientId = client.client_id;
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => (spa?.server ? spa.server.close(resolve) : resolve(undefined)));
    await t?.close();
  });

  interface Traffic {
    /** Every response the page (and its frames) received from the provider. */
    responses: Response[];
  }

  async function openSpa(overrides: Record<string, unknown> = {}): Promise<{ context: BrowserContext; page: Page; traffic: Traffic }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const traffic: Traffic = { responses: [] };
    page.on('response', (r) => {
      if (r.url().startsWith(t.issuer)) traffic.responses.push(r);
    });
    await page.goto(`${spa.origin}/index.html`);
    if (Object.keys(overrides).length) {
      await page.evaluate((o) => sessionStorage.setItem('spa_overrides', JSON.stringify(o)), overrides);
      await page.reload();
    }
    return { context, page, traffic };
  }

  /** signinRedirect -> sign-in page -> consent page -> callback.html (signinRedirectCallback). */
  async function signInThroughSpa(page: Page): Promise<SpaUser> {
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL((u) => u.href.startsWith(`${t.issuer}/interaction/`), { timeout: 10000 }).catch(async (err) => {
      throw new Error(`signinRedirect did not reach the sign-in page (SPA status: ${await page.locator('#status').textContent().catch(() => '?')}): ${err}`);
    });
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.href.startsWith(`${spa.origin}/callback.html`));
    await page.waitForFunction(() => document.getElementById('status')?.textContent !== 'pending');
    const status = await page.locator('#status').textContent();
    if (status !== 'signed-in') throw new Error(`signinRedirectCallback failed: ${JSON.stringify(await page.evaluate(() => (window as any).callbackError))}`);
    const signedIn = (await page.evaluate(() => (window as any).readUser())) as SpaUser | null;
    expect(signedIn).not.toBeNull();
    return signedIn!;
  }

  async function verifyIdToken(idToken: string) {
    const jwks = createRemoteJWKSet(new URL(`${t.issuer}/jwks`));
    const { payload } = await jwtVerify(idToken, jwks, { issuer: t.issuer, audience: client.client_id });
    return payload;
  }

  it('signs in with signinRedirect + PKCE; the callback yields a user of the account with a verifiable ID token', async () => {
    const { context, page, traffic } = await openSpa();
    const signedIn = await signInThroughSpa(page);

    expect(signedIn.profile.sub).toBe(user.id);
    expect(signedIn.token_type.toLowerCase()).toBe('bearer');
    expect(signedIn.scope?.split(' ').sort()).toEqual(['email', 'openid', 'profile']);
    // Public client without offline_access: no refresh token, so renewal must go through the iframe.
    expect(signedIn.refresh_token).toBeFalsy();

    // The library only decodes the ID token (sub); the signature, issuer and audience are checked here.
    const claims = await verifyIdToken(signedIn.id_token);
    expect(claims.sub).toBe(user.id);
    expect(claims.exp).toBeGreaterThan(Date.now() / 1000);
    expect(signedIn.profile.iss ?? claims.iss).toBe(t.issuer);

    // The authorization request carried an S256 challenge (spec 1.1 rule 3).
    const authRequest = traffic.responses.map((r) => new URL(r.url())).find((u) => u.pathname.endsWith('/auth') && u.searchParams.has('client_id'));
    expect(authRequest?.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authRequest?.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);

    // The discovery document and the token response were read cross-origin by the library.
    const discovery = traffic.responses.find((r) => r.url().endsWith('/.well-known/openid-configuration'));
    expect(discovery?.headers()['access-control-allow-origin']).toBe('*');
    const token = traffic.responses.find((r) => r.url() === `${t.issuer}/token` && r.request().method() === 'POST');
    expect(token?.status()).toBe(200);
    expect((await token!.request().allHeaders())['origin']).toBe(spa.origin);
    expect(token?.headers()['access-control-allow-origin']).toBe(spa.origin);
    await context.close();
  });

  it('renews the user with signinSilent through a hidden iframe (prompt=none), without a sign-in page', async () => {
    const { context, page, traffic } = await openSpa();
    const first = await signInThroughSpa(page);
    const firstClaims = decodeJwt(first.id_token);
    const seen = traffic.responses.length;

    const renewed = (await page.evaluate(async () => {
      const u = await (window as any).mgr.signinSilent();
      return { access_token: u.access_token, id_token: u.id_token, profile: u.profile };
    })) as SpaUser;

    expect(renewed.access_token).toBeTruthy();
    expect(renewed.access_token).not.toBe(first.access_token);
    expect(renewed.profile.sub).toBe(user.id);
    const claims = await verifyIdToken(renewed.id_token);
    expect(claims.sub).toBe(user.id);
    // Same session, no new sign-in.
    expect(claims.auth_time).toBe(firstClaims.auth_time);
    expect(claims.iat).toBeGreaterThanOrEqual(firstClaims.iat!);

    // The renewal went through a frame, with prompt=none, straight back to silent.html with a code.
    const renewal = traffic.responses.slice(seen);
    const auth = renewal.find((r) => new URL(r.url()).pathname.endsWith('/auth'));
    expect(auth, 'no authorization request during signinSilent').toBeDefined();
    expect(auth!.frame()).not.toBe(page.mainFrame());
    const authUrl = new URL(auth!.url());
    expect(authUrl.searchParams.get('prompt')).toBe('none');
    expect(authUrl.searchParams.get('redirect_uri')).toBe(`${spa.origin}/silent.html`);
    expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(auth!.status()).toBe(303);
    const back = new URL(auth!.headers()['location']!);
    expect(`${back.origin}${back.pathname}`).toBe(`${spa.origin}/silent.html`);
    expect(back.searchParams.get('code')).toBeTruthy();
    expect(renewal.some((r) => r.url().includes('/interaction/'))).toBe(false);
    expect(renewal.find((r) => r.url() === `${t.issuer}/token`)?.headers()['access-control-allow-origin']).toBe(spa.origin);

    // The library now holds the renewed user.
    const stored = (await page.evaluate(() => (window as any).readUser())) as SpaUser;
    expect(stored.access_token).toBe(renewed.access_token);
    await context.close();
  });

  it('without a provider session, signinSilent fails with login_required instead of a framed sign-in page', async () => {
    const { context, page, traffic } = await openSpa();
    await signInThroughSpa(page);
    // The provider's session cookies go (as after a sign-out elsewhere); the SPA still holds its user.
    await context.clearCookies();
    const seen = traffic.responses.length;
    const started = Date.now();
    const outcome = await page.evaluate(async () => {
      try {
        await (window as any).mgr.signinSilent();
        return { ok: true };
      } catch (e: any) {
        return { ok: false, error: e.error ?? null, message: String(e.message) };
      }
    });
    expect(outcome).toMatchObject({ ok: false, error: 'login_required' });
    // Answered by a redirect to silent.html, not by the iframe timeout (10 s by default).
    expect(Date.now() - started).toBeLessThan(8000);
    const auth = traffic.responses.slice(seen).find((r) => new URL(r.url()).pathname.endsWith('/auth'));
    expect(auth?.status()).toBe(303);
    expect(new URL(auth!.headers()['location']!).searchParams.get('error')).toBe('login_required');
    expect(traffic.responses.slice(seen).some((r) => r.url().includes('/interaction/'))).toBe(false);
    await context.close();
  });

  it('automaticSilentRenew renews the access token on its own before it expires', async () => {
    // Access tokens live 3600 s; asking to be told 3597 s before expiry makes the renewal due at once.
    const { context, page, traffic } = await openSpa({ accessTokenExpiringNotificationTimeInSeconds: 3597 });
    const first = await signInThroughSpa(page);
    await page.waitForFunction((token) => (window as any).spaEvents.some((e: any) => e.type === 'silentRenewError' || (e.type === 'userLoaded' && e.access_token !== token)), first.access_token, { timeout: 20000 });
    const events = (await page.evaluate(() => (window as any).spaEvents)) as Array<{ type: string; access_token?: string; message?: string }>;
    expect(events.filter((e) => e.type === 'silentRenewError')).toEqual([]);
    const renewed = events.find((e) => e.type === 'userLoaded' && e.access_token !== first.access_token);
    expect(renewed?.access_token).toBeTruthy();
    const silentAuth = traffic.responses.find((r) => new URL(r.url()).searchParams.get('prompt') === 'none');
    expect(silentAuth?.status()).toBe(303);
    await context.close();
  });

  it('the access token reads userinfo from the SPA origin, and not from an origin the client did not register', async () => {
    const { context, page } = await openSpa();
    const signedIn = await signInThroughSpa(page);
    const userinfo = `${t.issuer}/userinfo`;

    const fromSpa = await page.evaluate(
      async ({ url, token }) => {
        const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      },
      { url: userinfo, token: signedIn.access_token },
    );
    expect(fromSpa.status).toBe(200);
    expect(fromSpa.body.sub).toBe(user.id);
    expect(fromSpa.body.email).toBe(user.email);
    expect(fromSpa.body.email_verified).toBe(true);

    // Same static app on http://127.0.0.1:<port>: a different origin, not among the redirect URIs.
    const other = await context.newPage();
    await other.goto(`http://127.0.0.1:${spa.port}/index.html`);
    const fromOther = await other.evaluate(
      async ({ url, token }) => {
        try {
          const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
          return { status: res.status, body: await res.text() };
        } catch (err) {
          return { error: String(err) };
        }
      },
      { url: userinfo, token: signedIn.access_token },
    );
    // clientBasedCORS: the browser refuses the cross-origin read (fetch rejects).
    expect(fromOther).toEqual({ error: expect.stringContaining('Failed to fetch') });
    await context.close();
  });

  it('refuses an authorization request without a code challenge (spec 1.1 rule 1)', async () => {
    // Through the library: oidc-client-ts with PKCE turned off gets the error at its callback.
    const { context, page } = await openSpa({ disablePKCE: true });
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL((u) => u.href.startsWith(`${spa.origin}/callback.html`));
    const callback = new URL(page.url());
    expect(callback.searchParams.get('error')).toBe('invalid_request');
    expect(callback.searchParams.get('error_description')).toMatch(/PKCE|code_challenge/);
    expect(callback.searchParams.get('code')).toBeNull();
    await page.waitForFunction(() => document.getElementById('status')?.textContent !== 'pending');
    expect(await page.locator('#status').textContent()).toBe('error');
    const error = await page.evaluate(() => (window as any).callbackError);
    expect(error.error).toBe('invalid_request');
    expect(await page.evaluate(() => (window as any).readUser())).toBeNull();
    await context.close();

    // And at the protocol level: the error goes back to the registered redirect URI with the state.
    const res = await fetch(
      `${t.url}/oidc/v1/auth?` +
        new URLSearchParams({ client_id: client.client_id, response_type: 'code', scope: 'openid', redirect_uri: `${spa.origin}/callback.html`, state: 'spa-state', nonce: 'n-1' }),
      { redirect: 'manual' },
    );
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(`${spa.origin}/callback.html`);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('state')).toBe('spa-state');
    expect(location.searchParams.get('iss')).toBe(t.issuer);
  });
});
