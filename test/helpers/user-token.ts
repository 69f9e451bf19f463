/**
 * A user's Management API token the way the console gets one: openid-client as the relying party,
 * authorization code + PKCE at the tenant's authorization endpoint with resource=urn:svc:api:v1,
 * the user signing in on the real sign-in page in headless Chromium. The redirect URI is a
 * loopback address nothing listens on (allowed with NODE_ENV=test); a page route answers it.
 */
import * as oidc from 'openid-client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { TestApp } from './app.js';

export const MANAGEMENT = 'urn:svc:api:v1';
export const RP = 'http://127.0.0.1:65533';
export const REDIRECT = `${RP}/cb`;

export interface SignedIn {
  config: oidc.Configuration;
  tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers;
  context: BrowserContext;
  page: Page;
}

export interface RelyingParty {
  client_id: string;
  client_secret?: string;
  redirect?: string;
}

/** openid-client's configuration for a stored client (confidential or public) of `issuer`. */
export async function rpConfig(issuer: string, client: RelyingParty): Promise<oidc.Configuration> {
  const opts = { execute: [oidc.allowInsecureRequests] };
  return client.client_secret
    ? oidc.discovery(new URL(issuer), client.client_id, client.client_secret, undefined, opts)
    : oidc.discovery(new URL(issuer), client.client_id, undefined, oidc.None(), opts);
}

/**
 * Signs `user` in through `client` and exchanges the code. `consent` clicks the consent page's
 * primary button (third-party clients); first-party clients skip it.
 */
export async function signInForToken(
  t: TestApp,
  browser: Browser,
  client: RelyingParty,
  user: { email: string; password: string },
  opts: { scope: string; resource?: string | null; consent?: boolean; issuer?: string } = { scope: 'openid' },
): Promise<SignedIn> {
  const redirect = client.redirect ?? REDIRECT;
  const config = await rpConfig(opts.issuer ?? t.issuer, client);
  const context = await browser.newContext();
  const page = await context.newPage();
  const serviceOrigin = new URL(opts.issuer ?? t.issuer).origin;
  let callback: string | undefined;
  if (new URL(redirect).origin === serviceOrigin) {
    // A built-in client's callback is the service's own page, which would redeem the code: follow
    // the sign-in's redirects with the page's cookies instead and stop before the callback.
    await page.route('**/interaction/*/login', async (route) => {
      let res = await route.fetch({ maxRedirects: 0 });
      let location = res.headers().location;
      while (location && !location.startsWith(redirect)) {
        res = await page.request.get(new URL(location, serviceOrigin).href, { maxRedirects: 0 });
        location = res.headers().location;
      }
      callback = location;
      await route.fulfill({ status: 200, contentType: 'text/plain', body: 'signed in' });
    });
  } else {
    await page.route(`${new URL(redirect).origin}/**`, (route) => route.fulfill({ status: 200, body: 'rp' }));
  }
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const params: Record<string, string> = {
    redirect_uri: redirect,
    scope: opts.scope,
    state,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  };
  if (opts.resource !== null) params.resource = opts.resource ?? MANAGEMENT;
  await page.goto(oidc.buildAuthorizationUrl(config, params).href);
  await page.getByLabel('E-mail').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  if (opts.consent) await page.getByRole('button', { name: /allow|continue/i }).click();
  if (new URL(redirect).origin === serviceOrigin) await page.getByText('signed in').waitFor();
  else await page.waitForURL(`${redirect}**`);
  const tokens = await oidc.authorizationCodeGrant(config, new URL(callback ?? page.url()), { pkceCodeVerifier: verifier, expectedState: state });
  return { config, tokens, context, page };
}

/** The claims of a JWT, unverified (the service verifies; tests only read). */
export function claimsOf(jwt: string): Record<string, any> {
  return JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString());
}
