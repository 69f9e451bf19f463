import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, api, startTestApp, type TestApp } from '../helpers/app.js';
import { head, openRaw } from '../helpers/raw-http.js';
import { RESOURCE, bootstrap, introspect, peekJwt, postForm, requestToken, serviceClient, tokenFor, type Credentials } from '../helpers/oauth.js';

const ALL_CLIENT_SCOPES = 'svc:clients:read svc:clients:write svc:clients:delete';

let t: TestApp;
let admin: string;
let jwks: ReturnType<typeof createRemoteJWKSet>;

beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token(ALL_CLIENT_SCOPES);
  jwks = createRemoteJWKSet(new URL(`${t.issuer}/jwks`));
});
afterAll(async () => t?.close());

async function verify(token: string) {
  return jwtVerify(token, jwks, { issuer: t.issuer, audience: RESOURCE, typ: 'at+jwt' });
}

describe('discovery and client credentials with openid-client', () => {
  it('discovers the issuer and gets a verifiable Management token for the bootstrap client', async () => {
    const config = await client.discovery(new URL(t.issuer), BOOTSTRAP_ID, BOOTSTRAP_SECRET, client.ClientSecretBasic(BOOTSTRAP_SECRET), {
      execute: [client.allowInsecureRequests],
    });
    const meta = config.serverMetadata();
    expect(meta.issuer).toBe(t.issuer);
    expect(meta.token_endpoint).toBe(`${t.issuer}/token`);
    expect(meta.jwks_uri).toBe(`${t.issuer}/jwks`);
    expect(meta.introspection_endpoint).toBe(`${t.issuer}/token/introspection`);
    expect(meta.grant_types_supported).toContain('client_credentials');
    expect(meta.scopes_supported).toEqual(expect.arrayContaining(['openid', 'svc:clients:read']));
    // RFC 8414 2: an omitted introspection or revocation list would mean client_secret_basic alone.
    const methods = ['none', 'client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt'];
    for (const endpoint of ['token', 'introspection', 'revocation'] as const) {
      expect([...(meta[`${endpoint}_endpoint_auth_methods_supported`] as string[])].sort(), endpoint).toEqual([...methods].sort());
      expect(meta[`${endpoint}_endpoint_auth_signing_alg_values_supported`], endpoint).toEqual(meta.token_endpoint_auth_signing_alg_values_supported);
    }

    const before = Math.floor(Date.now() / 1000);
    const tokens = await client.clientCredentialsGrant(config, { scope: 'svc:clients:read svc:clients:write', resource: RESOURCE });
    expect(tokens.token_type).toBe('bearer'); // openid-client lower-cases it; the raw value is checked below
    expect(tokens.expires_in).toBe(3600);
    expect(tokens.scope).toBe('svc:clients:read svc:clients:write');

    const remote = createRemoteJWKSet(new URL(meta.jwks_uri!));
    const { payload, protectedHeader } = await jwtVerify(tokens.access_token, remote, { issuer: t.issuer, audience: RESOURCE, typ: 'at+jwt' });
    expect(protectedHeader.alg).toBe('RS256');
    expect(payload.sub).toBe(BOOTSTRAP_ID);
    expect(payload.client_id).toBe(BOOTSTRAP_ID);
    expect(payload.scope).toBe('svc:clients:read svc:clients:write');
    expect(payload.aud).toBe(RESOURCE);
    expect(payload.exp).toBeGreaterThanOrEqual(before + 3600);
    expect(payload.exp).toBeLessThanOrEqual(before + 3601 + 5);
    expect(typeof payload.jti).toBe('string');

    // The token works on the Management API.
    const list = await api(t, 'GET', '/api/v1/clients', { token: tokens.access_token });
    expect(list.status).toBe(200);
  });

  it('answers the raw token response with token_type exactly Bearer and no-store', async () => {
    const res = await requestToken(t, bootstrap, 'svc:clients:read');
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'svc:clients:read' });
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('accepts client_secret_post too for a client registered with it, and Basic for it (they stand in for each other, as on every path)', async () => {
    const c = await serviceClient(t, admin, 'svc:clients:read', { token_endpoint_auth_method: 'client_secret_post' });
    const res = await postForm(t, '/token', { grant_type: 'client_credentials', resource: RESOURCE, scope: 'svc:clients:read', client_id: c.id, client_secret: c.secret });
    expect(res.status).toBe(200);
    expect((await verify(res.json.access_token)).payload.client_id).toBe(c.id);
    const viaBasic = await requestToken(t, c, 'svc:clients:read');
    expect(viaBasic.status).toBe(200);
    expect((await verify(viaBasic.json.access_token)).payload.client_id).toBe(c.id);
    // A wrong secret is refused either way.
    expect((await requestToken(t, { id: c.id, secret: 'not-the-secret' }, 'svc:clients:read')).json.error).toBe('invalid_client');
  });

  it("gets a Management token with openid-client's default client authentication (client_secret_post) for a client created with the default (client_secret_basic)", async () => {
    const c = await serviceClient(t, admin, 'svc:clients:read');
    expect(c.data.token_endpoint_auth_method).toBe('client_secret_basic');
    const config = await client.discovery(new URL(t.issuer), c.id, c.secret, undefined, { execute: [client.allowInsecureRequests] });
    const tokens = await client.clientCredentialsGrant(config, { scope: 'svc:clients:read', resource: RESOURCE });
    expect((await verify(tokens.access_token)).payload).toMatchObject({ client_id: c.id, scope: 'svc:clients:read' });
    expect((await api(t, 'GET', '/api/v1/clients', { token: tokens.access_token })).status).toBe(200);
  });
});

describe('signing algorithms', () => {
  it.each(['ES256', 'EdDSA'] as const)('a client with id_token_signed_response_alg %s gets an access token signed with it that verifies', async (alg) => {
    const c = await serviceClient(t, admin, 'svc:clients:read', { id_token_signed_response_alg: alg });
    expect(c.data.id_token_signed_response_alg).toBe(alg);
    const token = await tokenFor(t, c, 'svc:clients:read');
    expect(decodeProtectedHeader(token).alg).toBe(alg);
    const { payload, protectedHeader } = await verify(token);
    expect(protectedHeader.alg).toBe(alg);
    expect(payload).toMatchObject({ sub: c.id, client_id: c.id, scope: 'svc:clients:read', aud: RESOURCE });
    const jwksDoc = (await (await fetch(`${t.url}/oidc/v1/jwks`)).json()) as { keys: Array<{ kid: string; alg: string }> };
    expect(jwksDoc.keys.find((k: { kid: string }) => k.kid === protectedHeader.kid)).toMatchObject({ alg, use: 'sig' });
    expect((await api(t, 'GET', '/api/v1/clients', { token })).status).toBe(200);
  });

  it('publishes only public key material', async () => {
    const jwksDoc = (await (await fetch(`${t.url}/oidc/v1/jwks`)).json()) as { keys: Array<{ kid: string; alg: string }> };
    expect(jwksDoc.keys.map((k: { alg: string }) => k.alg).sort()).toEqual(['ES256', 'EdDSA', 'RS256']);
    for (const k of jwksDoc.keys) {
      for (const priv of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(k).not.toHaveProperty(priv);
      expect(k.kid).toEqual(expect.any(String));
    }
  });
});

describe('introspection', () => {
  it('reports an active token with sub, client_id, scope, exp (openid-client)', async () => {
    const token = await t.token('svc:clients:read');
    const config = new client.Configuration(
      { issuer: t.issuer, introspection_endpoint: `${t.issuer}/token/introspection` },
      BOOTSTRAP_ID,
      undefined,
      client.ClientSecretBasic(BOOTSTRAP_SECRET),
    );
    client.allowInsecureRequests(config);
    const info = await client.tokenIntrospection(config, token);
    expect(info.active).toBe(true);
    expect(info.sub).toBe(BOOTSTRAP_ID);
    expect(info.client_id).toBe(BOOTSTRAP_ID);
    expect(info.scope).toBe('svc:clients:read');
    expect(info.exp).toBe(peekJwt(token).payload.exp);
  });

  it('reports garbage and foreign tokens inactive', async () => {
    for (const token of ['not-a-token', 'a.b.c', `${(await t.token('svc:clients:read')).slice(0, -4)}AAAA`]) {
      const res = await introspect(t, token);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ active: false });
    }
  });

  it('requires client authentication', async () => {
    const token = await t.token('svc:clients:read');
    const anonymous = await postForm(t, '/token/introspection', { token });
    expect([400, 401]).toContain(anonymous.status);
    expect(['invalid_request', 'invalid_client']).toContain(anonymous.json.error);
    expect(anonymous.json).not.toHaveProperty('active');
    const wrong = await introspect(t, token, { id: BOOTSTRAP_ID, secret: 'wrong-secret-value' });
    expect(wrong.status).toBe(401);
    expect(wrong.json.error).toBe('invalid_client');
  });

  describe('a client token stops being active', () => {
    let c: Credentials;
    let token: string;
    beforeAll(async () => {
      c = await serviceClient(t, admin, 'svc:clients:read');
    });
    const fresh = async () => {
      token = await tokenFor(t, c, 'svc:clients:read');
      const res = await introspect(t, token);
      expect(res.json).toMatchObject({ active: true, sub: c.id, client_id: c.id, scope: 'svc:clients:read', exp: peekJwt(token).payload.exp });
    };

    it('after its secret is regenerated', async () => {
      await fresh();
      const regen = await api(t, 'POST', `/api/v1/clients/${c.id}/secret`, { token: admin });
      expect(regen.status).toBe(200);
      expect((await introspect(t, token)).json).toEqual({ active: false });
      expect((await api(t, 'GET', '/api/v1/clients', { token })).status).toBe(401);
      c = { ...c, secret: regen.json.data.client_secret };
      await fresh(); // a token under the new secret is active
    });

    it('after the client is deactivated', async () => {
      await fresh();
      expect((await api(t, 'POST', `/api/v1/clients/${c.id}/deactivate`, { token: admin })).status).toBe(200);
      expect((await introspect(t, token)).json).toEqual({ active: false });
      expect((await api(t, 'GET', '/api/v1/clients', { token })).status).toBe(401);
      expect((await api(t, 'POST', `/api/v1/clients/${c.id}/activate`, { token: admin })).status).toBe(200);
    });

    it('after the client is deleted', async () => {
      await fresh();
      expect((await api(t, 'DELETE', `/api/v1/clients/${c.id}`, { token: admin })).status).toBe(204);
      expect((await introspect(t, token)).json).toEqual({ active: false });
      expect((await api(t, 'GET', '/api/v1/clients', { token })).status).toBe(401);
    });
  });

  describe('an opaque client_credentials token (no resource) stops being active, as a JWT one does', () => {
    let c: Credentials;
    let opaque: string;
    let jwt: string;
    beforeAll(async () => {
      c = await serviceClient(t, admin, 'svc:clients:read');
    });
    /** An opaque token (oidc-provider's ClientCredentials) and a JWT one of the client, both active. */
    const fresh = async () => {
      const res = await postForm(t, '/token', { grant_type: 'client_credentials' }, c);
      expect(res.status).toBe(200);
      opaque = res.json.access_token;
      expect(() => peekJwt(opaque)).toThrow();
      jwt = await tokenFor(t, c, 'svc:clients:read');
      expect((await introspect(t, opaque)).json).toMatchObject({ active: true, client_id: c.id, token_type: 'Bearer' });
      expect((await introspect(t, jwt)).json.active).toBe(true);
    };

    it('after its secret is regenerated', async () => {
      await fresh();
      const regen = await api(t, 'POST', `/api/v1/clients/${c.id}/secret`, { token: admin });
      expect(regen.status).toBe(200);
      expect((await introspect(t, opaque)).json).toEqual({ active: false });
      expect((await introspect(t, jwt)).json).toEqual({ active: false });
      c = { ...c, secret: regen.json.data.client_secret };
      await fresh(); // tokens under the new secret are active
    });

    it('after the client is deactivated, also once it is activated again', async () => {
      await fresh();
      expect((await api(t, 'POST', `/api/v1/clients/${c.id}/deactivate`, { token: admin })).status).toBe(200);
      expect((await introspect(t, opaque)).json).toEqual({ active: false });
      expect((await introspect(t, jwt)).json).toEqual({ active: false });
      // Deactivation ends the tokens issued so far (it bumps the secret generation): reactivating
      // does not bring them back, for either format.
      expect((await api(t, 'POST', `/api/v1/clients/${c.id}/activate`, { token: admin })).status).toBe(200);
      expect((await introspect(t, opaque)).json).toEqual({ active: false });
      expect((await introspect(t, jwt)).json).toEqual({ active: false });
      await fresh(); // new tokens are active
    });

    it('after the client is deleted', async () => {
      await fresh();
      expect((await api(t, 'DELETE', `/api/v1/clients/${c.id}`, { token: admin })).status).toBe(204);
      expect((await introspect(t, opaque)).json).toEqual({ active: false });
      expect((await introspect(t, jwt)).json).toEqual({ active: false });
    });
  });
});

describe('token endpoint errors', () => {
  it('gives invalid_client to a deactivated client and to a deleted one', async () => {
    const c = await serviceClient(t, admin, 'svc:clients:read');
    expect((await requestToken(t, c, 'svc:clients:read')).status).toBe(200);
    await api(t, 'POST', `/api/v1/clients/${c.id}/deactivate`, { token: admin });
    const deactivated = await requestToken(t, c, 'svc:clients:read');
    expect(deactivated.status).toBe(401);
    expect(deactivated.json.error).toBe('invalid_client');
    // Without the Management resource the request goes to oidc-provider: same answer.
    const plain = await postForm(t, '/token', { grant_type: 'client_credentials' }, c);
    expect(plain.json.error).toBe('invalid_client');

    await api(t, 'POST', `/api/v1/clients/${c.id}/activate`, { token: admin });
    expect((await requestToken(t, c, 'svc:clients:read')).status).toBe(200);
    await api(t, 'DELETE', `/api/v1/clients/${c.id}`, { token: admin });
    const deleted = await requestToken(t, c, 'svc:clients:read');
    expect(deleted.status).toBe(401);
    expect(deleted.json.error).toBe('invalid_client');
    expect((await postForm(t, '/token', { grant_type: 'client_credentials' }, c)).json.error).toBe('invalid_client');
  });

  it('gives invalid_scope for a scope the client is not allowed', async () => {
    const c = await serviceClient(t, admin, 'svc:clients:read');
    const res = await requestToken(t, c, 'svc:clients:read svc:clients:write');
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_scope');
    expect(res.json).not.toHaveProperty('access_token');
    expect((await requestToken(t, bootstrap, 'svc:clients:read svc:not-a-scope')).json.error).toBe('invalid_scope');
  });

  it('gives unsupported_grant_type for an unknown grant type', async () => {
    const res = await postForm(t, '/token', { grant_type: 'urn:example:made-up', resource: RESOURCE }, bootstrap);
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('unsupported_grant_type');
  });

  it('gives unauthorized_client when the client may not use client_credentials', async () => {
    const c = await serviceClient(t, admin, 'svc:clients:read', { grant_types: ['authorization_code'], redirect_uris: ['https://app.example/cb'] });
    const res = await requestToken(t, c, 'svc:clients:read');
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('unauthorized_client');
  });

  it('gives unauthorized_client for every grant the client is not registered for (RFC 6749 5.2)', async () => {
    // A client_credentials-only client trying the code, refresh and device grants (oidc-provider's paths).
    const c = await serviceClient(t, admin, 'svc:clients:read', { grant_types: ['client_credentials'] });
    for (const form of [
      { grant_type: 'authorization_code', code: 'x'.repeat(43), redirect_uri: 'https://app.example/cb', code_verifier: 'v'.repeat(43) },
      { grant_type: 'refresh_token', refresh_token: 'x'.repeat(43) },
      { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: 'x'.repeat(43) },
    ]) {
      const res = await postForm(t, '/token', form, c);
      expect(res.status, form.grant_type).toBe(400);
      expect(res.json.error, form.grant_type).toBe('unauthorized_client');
    }
    const device = await postForm(t, '/device/auth', { scope: 'openid' }, c);
    expect(device.status).toBe(400);
    expect(device.json.error).toBe('unauthorized_client');
  });

  it('answers a wrong secret or an unknown client with 401 invalid_client and a Basic challenge', async () => {
    for (const creds of [
      { id: BOOTSTRAP_ID, secret: 'not-the-secret' },
      { id: 'no-such-client', secret: 'whatever' },
    ]) {
      const res = await requestToken(t, creds, 'svc:clients:read');
      expect(res.status).toBe(401);
      expect(res.json.error).toBe('invalid_client');
      expect(res.headers.get('www-authenticate')).toMatch(/^Basic/);
      expect(res.json).not.toHaveProperty('access_token');
    }
  });

  it('refuses a token request without client authentication or with a wrong content type', async () => {
    expect((await postForm(t, '/token', { grant_type: 'client_credentials', resource: RESOURCE })).json.error).toBe('invalid_request');
    const res = await fetch(`${t.url}/oidc/v1/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${BOOTSTRAP_ID}:${BOOTSTRAP_SECRET}`).toString('base64')}` },
      body: JSON.stringify({ grant_type: 'client_credentials', resource: RESOURCE }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('invalid_request');
  });
});

describe('request size', () => {
  it('answers a token request body over 1 MiB with an OAuth error (413) and closes the connection', async () => {
    const conn = await openRaw(t.app.port);
    await conn.write(head('POST', '/oidc/v1/token', t.app.port, { 'content-type': 'application/x-www-form-urlencoded', 'content-length': 1024 * 1024 + 1 }));
    await conn.write('grant_type=client_credentials&scope=');
    const res = await conn.response;
    expect(res.status).toBe(413);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(res.body)).toMatchObject({ error: 'invalid_request' });
    await conn.closed;
  });
});

describe('discovery and JWKS caching', () => {
  it.each([
    ['/oidc/v1/.well-known/openid-configuration', /^application\/json/],
    ['/oidc/v1/jwks', /^application\/jwk-set\+json/],
  ])('%s is cacheable and revalidates with ETag / If-None-Match', async (path, type) => {
    const first = await fetch(`${t.url}${path}`);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toMatch(type);
    expect(first.headers.get('cache-control')).toMatch(/public/);
    expect(first.headers.get('cache-control')).toMatch(/max-age=\d+/);
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^"[^"]+"$/);
    const body = await first.text();
    expect(JSON.parse(body)).toBeTypeOf('object');

    const again = await fetch(`${t.url}${path}`, { headers: { 'if-none-match': etag! } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    expect(again.headers.get('etag')).toBe(etag);

    const changed = await fetch(`${t.url}${path}`, { headers: { 'if-none-match': '"something-else"' } });
    expect(changed.status).toBe(200);
    expect(await changed.text()).toBe(body);
  });
});
