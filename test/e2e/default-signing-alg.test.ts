/**
 * The ID tokens of a client that names no `id_token_signed_response_alg`: RS256 (OpenID Connect's
 * default, which openid-client expects of such a client) when the key store has it, otherwise the
 * first algorithm of `security.key_store.algorithms`. With oidc-provider's own default (RS256
 * always) a store without RS256 left such a client unable to sign in or start the device flow.
 */
import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postForm } from '../helpers/oauth.js';
import { startUserFlowFixture, type UserFlowFixture } from '../helpers/user-flow-fixture.js';

const REDIRECT = 'http://127.0.0.1:65530/cb';

describe.each([
  ['ES256', 'ES256'],
  ['EdDSA,ES256', 'EdDSA'],
  ['EdDSA,RS256', 'RS256'],
])('SECURITY_KEY_STORE_ALGORITHMS=%s', (algorithms, first) => {
  let f: UserFlowFixture;
  beforeAll(async () => {
    f = await startUserFlowFixture(REDIRECT, 'svc:clients:write svc:users:write', { SECURITY_KEY_STORE_ALGORITHMS: algorithms });
  });
  afterAll(async () => f?.t.close());

  it(`signs the ID tokens of a client without an algorithm with ${first}, on the code flow and on refresh`, async () => {
    const client = await f.newClient();
    // openid-client checks the ID token's alg against the client's metadata (RS256 when unnamed).
    const tokens = await f.session.tokens(client, { scope: 'openid offline_access', idTokenAlg: first });
    expect(decodeProtectedHeader(tokens.id_token!).alg).toBe(first);
    const refreshed = await postForm(f.t, '/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! }, { id: client.client_id, secret: client.client_secret! });
    expect(refreshed.status).toBe(200);
    expect(decodeProtectedHeader(refreshed.json.id_token).alg).toBe(first);
  });

  it('lets such a client start the device flow', async () => {
    const client = await f.newClient({ grant_types: ['urn:ietf:params:oauth:grant-type:device_code'], redirect_uris: [] });
    const res = await postForm(f.t, '/device/auth', { scope: 'openid' }, { id: client.client_id, secret: client.client_secret! });
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(res.json).toMatchObject({ device_code: expect.any(String), user_code: expect.any(String) });
  });
});
