/**
 * A user's Management API token the way the console gets one: openid-client as the relying party,
 * authorization code + PKCE at the tenant's authorization endpoint with resource=urn:svc:api:v1,
 * the user signing in through the real sign-in (and consent) pages over HTTP with a cookie jar
 * (code-flow.ts HttpSession): the subject of these tests is the token, and the pages have their
 * browser walks elsewhere. The redirect URI is a loopback address nothing listens on (allowed with
 * NODE_ENV=test): the flow stops at the redirect to it and takes the code from there.
 */
import * as oidc from 'openid-client';
import type { TestApp } from './app.js';
import { HttpSession } from './code-flow.js';

export const MANAGEMENT = 'urn:svc:api:v1';
export const RP = 'http://127.0.0.1:65533';
export const REDIRECT = `${RP}/cb`;

export interface SignedIn {
  config: oidc.Configuration;
  tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers;
  /** The signed-in session: its cookies are the user's session at the service. */
  session: HttpSession;
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
 * Signs `user` in through `client` and exchanges the code. `consent` answers the consent page with
 * Allow (third-party clients); first-party clients skip it. A built-in client's redirect URI is the
 * service's own page: the flow stops at the redirect to it, before that page could redeem the code.
 */
export async function signInForToken(
  t: TestApp,
  client: RelyingParty,
  user: { email: string; password: string },
  opts: { scope: string; resource?: string | null; consent?: boolean; issuer?: string } = { scope: 'openid' },
): Promise<SignedIn> {
  const issuer = opts.issuer ?? t.issuer;
  const redirect = client.redirect ?? REDIRECT;
  const config = await rpConfig(issuer, client);
  const session = new HttpSession(issuer, user);
  session.consent = opts.consent ?? false;
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
  const callback = await session.authorize(oidc.buildAuthorizationUrl(config, params).href, redirect);
  const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
  return { config, tokens, session };
}

/** The claims of a JWT, unverified (the service verifies; tests only read). */
export function claimsOf(jwt: string): Record<string, any> {
  return JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString());
}
