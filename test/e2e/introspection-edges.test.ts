/**
 * Introspection of what oidc-provider alone used to answer badly (RFC 7662 2.2: a token the
 * server does not consider active is `{"active": false}`, never an error):
 * - a user's access and refresh tokens whose client was deactivated or deleted, introspected by
 *   another client: a 500 before (oidc-provider looked the gone client up for its subject type);
 * - an unsigned (`alg: none`) JWT: 400 unsupported_token_type before, as oidc-provider refuses
 *   anything structured it did not take for its own.
 * - a user's opaque access token for an API resource since deleted: active before (the direct path
 *   already refused such client_credentials tokens), and again when another resource took its
 *   identifier.
 * The pairwise case shows the policy still lets a live client's token through with its pairwise sub.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type TestApp } from '../helpers/app.js';
import { introspect, postForm } from '../helpers/oauth.js';
import { startUserFlowFixture, type UserFlowFixture } from '../helpers/user-flow-fixture.js';

const REDIRECT = 'http://127.0.0.1:65531/cb';

let f: UserFlowFixture;
let t: TestApp;

beforeAll(async () => {
  f = await startUserFlowFixture(REDIRECT, 'svc:clients:write svc:clients:delete svc:users:write svc:resources:write svc:resources:delete');
  t = f.t;
});
afterAll(async () => f?.t.close());

async function userTokens(extra: Record<string, unknown> = {}) {
  const client = await f.newClient(extra);
  const tokens = await f.session.tokens(client, { scope: 'openid offline_access' });
  return { client, access: tokens.access_token, refresh: tokens.refresh_token!, sub: tokens.claims()!.sub };
}

describe('introspection of a user token whose client is gone', () => {
  it('answers active: false once the client is deactivated, to another client', async () => {
    const { client, access, refresh } = await userTokens();
    expect((await introspect(t, access)).json).toMatchObject({ active: true, client_id: client.client_id });
    expect((await introspect(t, refresh)).json).toMatchObject({ active: true, client_id: client.client_id });

    expect((await api(t, 'POST', `/api/v1/clients/${client.client_id}/deactivate`, { token: f.admin })).status).toBe(200);
    for (const token of [access, refresh]) {
      const res = await introspect(t, token);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ active: false });
    }
    // Active again: so are its tokens (deactivation is a switch, not a revocation).
    expect((await api(t, 'POST', `/api/v1/clients/${client.client_id}/activate`, { token: f.admin })).status).toBe(200);
    expect((await introspect(t, access)).json).toMatchObject({ active: true });
  });

  it('answers active: false once the client is deleted', async () => {
    const { client, access, refresh } = await userTokens();
    expect((await api(t, 'DELETE', `/api/v1/clients/${client.client_id}`, { token: f.admin })).status).toBe(204);
    for (const token of [access, refresh]) expect(await introspect(t, token)).toMatchObject({ status: 200, json: { active: false } });
  });

  it("still gives a live pairwise client's token its pairwise subject", async () => {
    const { access, sub } = await userTokens({ subject_type: 'pairwise' });
    expect(sub).not.toBe(f.user.id);
    expect((await introspect(t, access)).json).toMatchObject({ active: true, sub });
  });
});

describe('introspection of an unsigned JWT', () => {
  const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url');

  it('answers active: false to an authenticated client, and still refuses an unauthenticated one', async () => {
    const now = Math.floor(Date.now() / 1000);
    const payload = Buffer.from(JSON.stringify({ iss: t.issuer, sub: 'x', aud: 'urn:svc:api:v1', client_id: 'bootstrap-admin', scope: 'svc:clients:read', iat: now, exp: now + 600 })).toString('base64url');
    for (const token of [`${header}.${payload}.`, 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.']) {
      expect(await introspect(t, token)).toMatchObject({ status: 200, json: { active: false } });
    }
    // No client authentication: oidc-provider's invalid_request (no client_id), as for any token.
    const anonymous = await postForm(t, '/token/introspection', { token: `${header}.${payload}.` });
    expect(anonymous.status).toBe(400);
    expect(anonymous.json).toMatchObject({ error: 'invalid_request' });
    const wrong = await introspect(t, `${header}.${payload}.`, { id: 'bootstrap-admin', secret: 'wrong-secret-value' });
    expect(wrong).toMatchObject({ status: 401, json: { error: 'invalid_client' } });
  });
});

describe('introspection of a user token for a deleted API resource', () => {
  it('answers active: false once the resource is deleted, and still after another resource takes its identifier', async () => {
    const API = 'https://inventory.example/api';
    const resource = { identifier: API, name: 'Inventory', scopes: [{ name: 'inv:read' }], token_format: 'opaque' };
    const created = await api(t, 'POST', '/api/v1/resources', { token: f.admin, body: resource });
    expect(created.status).toBe(201);
    const client = await f.newClient({ scope: 'openid offline_access inv:read' });
    const tokens = await f.session.tokens(client, { scope: 'openid inv:read', resource: API });
    expect(tokens.access_token.split('.')).toHaveLength(1);
    expect((await introspect(t, tokens.access_token)).json).toMatchObject({ active: true, aud: API, scope: 'inv:read' });

    expect((await api(t, 'DELETE', `/api/v1/resources/${(created.json as { data: { id: string } }).data.id}`, { token: f.admin })).status).toBe(204);
    expect((await introspect(t, tokens.access_token)).json).toEqual({ active: false });
    // Issued before the new resource existed (past the second of its creation): not its token.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await api(t, 'POST', '/api/v1/resources', { token: f.admin, body: { ...resource, name: 'Another API' } })).status).toBe(201);
    expect((await introspect(t, tokens.access_token)).json).toEqual({ active: false });
  });
});
