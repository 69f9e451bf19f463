/**
 * The direct refresh grant and code exchange (src/oidc/refresh-grant.ts, code-grant.ts) in
 * multi-tenant mode on PostgreSQL + Redis: a refresh token and a code of one tenant are served at
 * that tenant without oidc-provider, and at another tenant (same database, Redis and process, a
 * client of its own) they are handed to oidc-provider, which does not know them: invalid_grant.
 */
import { randomBytes } from 'node:crypto';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TenantActor } from '../../src/tenancy/actor.js';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, dropRedisKeys, startTestApp, type TestApp } from '../helpers/app.js';
import { HttpSession, loopbackFetch, type CodeFlowClient } from '../helpers/code-flow.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { send } from '../helpers/tenant-http.js';
import { tokenRequest, viaProduct } from '../helpers/token-parity.js';

const run = randomBytes(3).toString('hex');
const REDIRECT = 'http://127.0.0.1:65534/cb';

describe('user grants across tenants (PostgreSQL + Redis)', () => {
  let t: TestApp;
  let port: number;
  let prefix: string;
  const acme = `acme-${run}`;
  const globex = `globex-${run}`;
  const user = { email: `ada-${run}@example.com`, password: 'Correct-Horse-Battery-9' };
  const clients: Record<string, CodeFlowClient> = {};
  const hostOf = (tenant: string) => `${tenant}.localhost:${port}`;
  const issuerOf = (tenant: string) => `http://${hostOf(tenant)}/oidc/v1`;
  /** The token request as `tenant`'s actor sees it, from `client`. */
  const at = async (tenant: string, client: CodeFlowClient, form: Record<string, string>) => {
    const actor: TenantActor = await t.app.pool.get(tenant);
    await actor.discovery(); // built, so a decline is the path's decision
    const req = tokenRequest(t, { client, form });
    req.headers.host = hostOf(tenant);
    return viaProduct(actor, req);
  };

  beforeAll(async () => {
    prefix = uniquePrefix('grants');
    t = await startTestApp({ MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', REDIS_URL: SHARED_REDIS_URL, REDIS_KEY_PREFIX: prefix });
    port = t.app.port;
    const basic = `Basic ${Buffer.from(`${BOOTSTRAP_ID}:${BOOTSTRAP_SECRET}`).toString('base64')}`;
    const issued = await send(port, 'POST', '/oidc/v1/token', { tenant: '_platforms', headers: { authorization: basic }, form: { grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope: 'svc:tenants:write svc:cross-tenant:write svc:users:write svc:clients:write' } });
    const token = issued.json.access_token as string;
    for (const tenant of [acme, globex]) {
      expect((await send(port, 'POST', '/api/v1/tenants', { token, body: { slug: tenant, display_name: tenant } })).status).toBe(201);
      expect((await send(port, 'POST', '/api/v1/users', { tenant, token, body: { ...user, email_verified: true } })).status).toBe(201);
      const created = await send(port, 'POST', '/api/v1/clients', {
        tenant,
        token,
        body: { client_name: 'RP', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], scope: 'openid email offline_access', first_party: true },
      });
      expect(created.status, created.text).toBe(201);
      clients[tenant] = { client_id: created.json.data.client_id, client_secret: created.json.data.client_secret, redirect_uri: REDIRECT };
    }
  });
  afterAll(async () => {
    await t?.close();
    if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
  });

  it('a refresh token is served at its own tenant and refused, by oidc-provider, at another', async () => {
    const tokens = await new HttpSession(issuerOf(acme), user, loopbackFetch(port)).tokens(clients[acme]!, { scope: 'openid email offline_access' });
    const foreign = await at(globex, clients[globex]!, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! });
    expect(foreign).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_grant' } });
    const own = await at(acme, clients[acme]!, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! });
    expect(own).toMatchObject({ direct: true, res: { status: 200 } });
    expect(own.json.refresh_token).toEqual(expect.any(String));
  });

  it('a code is refused at another tenant and still redeemable at its own', async () => {
    const session = new HttpSession(issuerOf(acme), user, loopbackFetch(port));
    const config = new oidc.Configuration({ issuer: issuerOf(acme), authorization_endpoint: `${issuerOf(acme)}/auth` }, clients[acme]!.client_id, clients[acme]!.client_secret);
    oidc.allowInsecureRequests(config);
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid email', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const code = (await session.authorize(url.href, REDIRECT)).searchParams.get('code')!;
    const form = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier };
    expect(await at(globex, clients[globex]!, form)).toMatchObject({ direct: false, res: { status: 400 }, json: { error: 'invalid_grant' } });
    expect(await at(acme, clients[acme]!, form)).toMatchObject({ direct: true, res: { status: 200 } });
  });
});
