/**
 * A refresh_token request with a bad `resource` (RFC 8707 section 2, RFC 6749 section 5.2):
 * invalid_target without consuming the refresh token or touching its grant, so the client's retry
 * with the right resource is served rather than taken for a replay (src/oidc/refresh-resource.ts).
 * openid-client is the relying party; the grants come from the code flow with resource indicators
 * of resources defined through the Management API.
 */
import { exportJWK, generateKeyPair } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type TestApp } from '../helpers/app.js';
import type { CodeFlowClient, HttpSession } from '../helpers/code-flow.js';
import { storedRow } from '../helpers/token-parity.js';
import { startUserFlowFixture } from '../helpers/user-flow-fixture.js';

const REDIRECT = 'http://127.0.0.1:65531/cb';
const ORDERS = 'https://orders.example.com/';
const REPORTS = 'https://reports.example.com/';
const UNKNOWN = 'resource indicator is missing, or unknown';

let t: TestApp;
let admin: string;
let session: HttpSession;
let client: CodeFlowClient;
let config: oidc.Configuration;
let newClient: (extra?: Record<string, unknown>) => Promise<CodeFlowClient>;

async function createResource(identifier: string, scope: string): Promise<string> {
  const res = await api(t, 'POST', '/api/v1/resources', { token: admin, body: { identifier, name: scope, scopes: [{ name: scope, description: scope }] } });
  if (res.status !== 201) throw new Error(res.text);
  return res.json.data.id as string;
}

function configFor(secret: string, clientId = client.client_id, auth?: oidc.ClientAuth): oidc.Configuration {
  const c = new oidc.Configuration(
    { issuer: t.issuer, authorization_endpoint: `${t.issuer}/auth`, token_endpoint: `${t.issuer}/token`, introspection_endpoint: `${t.issuer}/token/introspection` },
    clientId,
    secret,
    auth,
  );
  oidc.allowInsecureRequests(c);
  return c;
}

/** The code flow with one or more resource indicators; the code is redeemed for `exchangeFor`. */
async function signIn(scope: string, resources: string[], exchangeFor = resources[0]!, c = config) {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const params = new URLSearchParams({ redirect_uri: REDIRECT, scope, state, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
  for (const r of resources) params.append('resource', r);
  const callback = await session.authorize(oidc.buildAuthorizationUrl(c, params).href, REDIRECT);
  const tokens = await oidc.authorizationCodeGrant(c, callback, { pkceCodeVerifier: verifier, expectedState: state }, { resource: exchangeFor });
  expect(tokens.refresh_token).toBeTruthy();
  return { accessToken: tokens.access_token, refreshToken: tokens.refresh_token! };
}

/** A refresh through openid-client: the token response, or the OAuth error it was refused with. */
async function refresh(refreshToken: string, resources: string[] = [], c = config) {
  const params = new URLSearchParams();
  for (const r of resources) params.append('resource', r);
  try {
    return { ok: await oidc.refreshTokenGrant(c, refreshToken, params) };
  } catch (err) {
    if (err instanceof oidc.ResponseBodyError) return { status: err.status, error: err.error, description: err.error_description, cache: err.response.headers.get('cache-control') };
    throw err;
  }
}

const active = async (token: string) => (await oidc.tokenIntrospection(config, token)).active;
const unused = async (refreshToken: string) => (await storedRow(t, 'RefreshToken', refreshToken))?.consumed === false;

beforeAll(async () => {
  ({ t, admin, session, newClient } = await startUserFlowFixture(REDIRECT, 'svc:clients:write svc:users:write svc:resources:write svc:resources:delete'));
  await createResource(ORDERS, 'read:orders');
  await createResource(REPORTS, 'read:reports');
  client = await newClient({ scope: 'openid offline_access read:orders read:reports' });
  config = configFor(client.client_secret!);
});
afterAll(async () => t?.close());

describe('refresh_token with a resource indicator', () => {
  it('an unknown resource is invalid_target; the retry with the right one (or none) is served and the grant lives on', async () => {
    const first = await signIn('openid offline_access read:orders', [ORDERS]);
    const refused = await refresh(first.refreshToken, ['https://nope.example/']);
    expect(refused).toMatchObject({ status: 400, error: 'invalid_target', description: UNKNOWN, cache: 'no-store' });
    expect(await unused(first.refreshToken)).toBe(true);

    const retried = await refresh(first.refreshToken, [ORDERS]);
    expect(retried.ok?.access_token).toBeTruthy();
    expect(await active(first.accessToken)).toBe(true);
    // And once more without a resource (the granted one applies).
    const again = await refresh(retried.ok!.refresh_token!);
    expect(again.ok?.access_token).toBeTruthy();
    expect(await active(first.accessToken)).toBe(true);
  });

  it('a resource of the tenant outside the grant is invalid_target, not invalid_grant; the token stays usable', async () => {
    const first = await signIn('openid offline_access read:orders', [ORDERS]);
    expect(await refresh(first.refreshToken, [REPORTS])).toMatchObject({ status: 400, error: 'invalid_target', description: UNKNOWN });
    expect(await refresh(first.refreshToken, [ORDERS, REPORTS])).toMatchObject({
      status: 400,
      error: 'invalid_target',
      description: 'only a single resource indicator value must be requested/resolved during Access Token Request',
    });
    expect(await unused(first.refreshToken)).toBe(true);
    expect((await refresh(first.refreshToken)).ok?.access_token).toBeTruthy();
    expect(await active(first.accessToken)).toBe(true);
  });

  it('a grant of two resources: none named is invalid_target; a deleted one is invalid_target and the other still refreshes', async () => {
    const reports = await createResource('https://reports2.example.com/', 'read:reports');
    const first = await signIn('openid offline_access read:orders read:reports', [ORDERS, 'https://reports2.example.com/']);
    expect(await refresh(first.refreshToken)).toMatchObject({ status: 400, error: 'invalid_target' });
    expect(await unused(first.refreshToken)).toBe(true);

    expect((await api(t, 'DELETE', `/api/v1/resources/${reports}`, { token: admin })).status).toBe(204);
    expect(await refresh(first.refreshToken, ['https://reports2.example.com/'])).toMatchObject({ status: 400, error: 'invalid_target', description: UNKNOWN });
    expect(await unused(first.refreshToken)).toBe(true);
    const orders = await refresh(first.refreshToken, [ORDERS]);
    expect(orders.ok?.access_token).toBeTruthy();
    expect(await active(orders.ok!.access_token)).toBe(true);
  });

  it('a wrong client secret with a bad resource is invalid_client; the token stays usable', async () => {
    const first = await signIn('openid offline_access read:orders', [ORDERS]);
    expect(await refresh(first.refreshToken, ['https://nope.example/'], configFor('not-the-secret'))).toMatchObject({ status: 401, error: 'invalid_client' });
    expect(await unused(first.refreshToken)).toBe(true);
    expect((await refresh(first.refreshToken, [ORDERS])).ok?.access_token).toBeTruthy();
    expect(await active(first.accessToken)).toBe(true);
  });

  it('private_key_jwt: the assertion is verified once (a good resource is served by oidc-provider), a bad resource is invalid_target', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', use: 'sig', alg: 'ES256' };
    const pk = await newClient({ scope: 'openid offline_access read:orders', token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [jwk] } });
    const pkConfig = configFor('', pk.client_id, oidc.PrivateKeyJwt({ key: privateKey, kid: 'k1' }));
    const first = await signIn('openid offline_access read:orders', [ORDERS], ORDERS, pkConfig);
    expect(await refresh(first.refreshToken, ['https://nope.example/'], pkConfig)).toMatchObject({ status: 400, error: 'invalid_target', description: UNKNOWN });
    expect(await unused(first.refreshToken)).toBe(true);
    // Checked here without authenticating, then authenticated once by oidc-provider: a second
    // check of the same assertion would be a replay (invalid_client).
    const served = await refresh(first.refreshToken, [ORDERS], pkConfig);
    expect(served.ok?.access_token).toBeTruthy();
  });
});
