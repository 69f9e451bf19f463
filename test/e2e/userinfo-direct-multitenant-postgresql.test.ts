/**
 * The direct userinfo path (src/oidc/userinfo.ts) in multi-tenant mode on PostgreSQL + Redis: a
 * user's token of one tenant is served at that tenant without oidc-provider, and at another tenant
 * (which shares the database, the Redis and the process) it is handed to oidc-provider, which does
 * not know it: the same invalid_token answer from both, through the actor and the front door.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, dropRedisKeys, startTestApp, type TestApp } from '../helpers/app.js';
import { HttpSession, loopbackFetch, type CodeFlowClient } from '../helpers/code-flow.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { send } from '../helpers/tenant-http.js';
import { compareUserinfo, userinfoRequest } from '../helpers/userinfo-parity.js';

const run = randomBytes(3).toString('hex');
const REDIRECT = 'http://127.0.0.1:65531/cb';

describe('userinfo across tenants (PostgreSQL + Redis)', () => {
  let t: TestApp;
  let port: number;
  let prefix: string;
  const acme = `acme-${run}`;
  const globex = `globex-${run}`;
  const user = { email: `ada-${run}@example.com`, password: 'Correct-Horse-Battery-9' };
  let userId: string;
  let client: CodeFlowClient;
  const hostOf = (tenant: string) => `${tenant}.localhost:${port}`;
  const issuerOf = (tenant: string) => `http://${hostOf(tenant)}/oidc/v1`;

  beforeAll(async () => {
    prefix = uniquePrefix('userinfo');
    t = await startTestApp({ MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', REDIS_URL: SHARED_REDIS_URL, REDIS_KEY_PREFIX: prefix });
    port = t.app.port;
    const basic = `Basic ${Buffer.from(`${BOOTSTRAP_ID}:${BOOTSTRAP_SECRET}`).toString('base64')}`;
    const issued = await send(port, 'POST', '/oidc/v1/token', { tenant: '_platforms', headers: { authorization: basic }, form: { grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope: 'svc:tenants:write svc:cross-tenant:write svc:users:write svc:clients:write' } });
    const token = issued.json.access_token as string;
    for (const slug of [acme, globex]) expect((await send(port, 'POST', '/api/v1/tenants', { token, body: { slug, display_name: slug } })).status).toBe(201);
    // The same e-mail at both tenants: two users, two ids.
    for (const tenant of [acme, globex]) {
      const res = await send(port, 'POST', '/api/v1/users', { tenant, token, body: { ...user, email_verified: true } });
      expect(res.status, res.text).toBe(201);
      if (tenant === acme) userId = res.json.data.id;
    }
    const created = await send(port, 'POST', '/api/v1/clients', {
      tenant: acme,
      token,
      body: { client_name: 'RP', redirect_uris: [REDIRECT], grant_types: ['authorization_code'], scope: 'openid email', first_party: true },
    });
    expect(created.status, created.text).toBe(201);
    client = { client_id: created.json.data.client_id, client_secret: created.json.data.client_secret, redirect_uri: REDIRECT };
  });
  afterAll(async () => {
    await t?.close();
    if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
  });

  it('is served at its own tenant and refused, by oidc-provider, at another', async () => {
    const tokens = await new HttpSession(issuerOf(acme), user, loopbackFetch(port)).tokens(client, { scope: 'openid email' });
    const own = await compareUserinfo(await t.app.pool.get(acme), userinfoRequest(hostOf(acme), tokens.access_token));
    expect(own).toMatchObject({ direct: true, status: 200, json: { sub: userId, email: user.email } });

    // Built first, so a decline is the path's decision and not a provider still to build.
    const other = await t.app.pool.get(globex);
    await other.discovery();
    const foreign = await compareUserinfo(other, userinfoRequest(hostOf(globex), tokens.access_token));
    expect(foreign).toMatchObject({ direct: false, status: 401, json: { error: 'invalid_token' } });

    // Through the front door: by subdomain and by the tenant header.
    const there = await send(port, 'GET', '/oidc/v1/userinfo', { sub: acme, token: tokens.access_token });
    expect(there.status).toBe(200);
    expect(there.json).toEqual(own.json);
    for (const target of [{ sub: globex }, { tenant: globex }]) {
      const res = await send(port, 'GET', '/oidc/v1/userinfo', { ...target, token: tokens.access_token });
      expect(res.status).toBe(401);
      expect(res.json).toEqual(foreign.json);
      expect(res.headers['www-authenticate']).toBe(foreign.res.headers?.['www-authenticate']);
    }
  });
});
