/**
 * Issue 19: a third-party verifier (Apache mod_auth_openidc, test/helpers/mod-auth-openidc.ts)
 * accepts our token for its resource with the right scope and refuses one for another resource,
 * from another issuer, without the scope, expired, or with no token. Needs Debian's
 * libapache2-mod-auth-openidc (installed by .ci/run).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, freePort, startTestApp, type TestApp } from '../helpers/app.js';
import { apacheAvailable, startApacheRs, type ApacheRs } from '../helpers/mod-auth-openidc.js';
import { forgeToken, postForm, serviceClient, type Credentials } from '../helpers/oauth.js';

const ORDERS = 'https://orders.example.com/';
let t: TestApp;
let apache: ApacheRs;
let backend: Credentials;

beforeAll(async () => {
  if (!apacheAvailable()) throw new Error('Apache mod_auth_openidc is missing: apt-get install apache2 libapache2-mod-auth-openidc (.ci/run does)');
  t = await startTestApp();
  const admin = await t.token('svc:resources:write svc:clients:write');
  for (const body of [
    { identifier: ORDERS, name: 'Orders', scopes: [{ name: 'read:orders' }, { name: 'write:orders' }], signing_alg: 'RS256' },
    { identifier: 'https://billing.example.com/', name: 'Billing', scopes: [{ name: 'read:invoices' }], signing_alg: 'RS256' },
  ]) {
    expect((await api(t, 'POST', '/api/v1/resources', { token: admin, body })).status).toBe(201);
  }
  backend = await serviceClient(t, admin, 'read:orders write:orders read:invoices');
  const jwks = (await (await fetch(`${t.issuer}/jwks`)).json()) as { keys: Array<Record<string, unknown>> };
  apache = await startApacheRs({ port: await freePort(), issuer: t.issuer, jwks, audience: ORDERS, scope: 'read:orders' });
});
afterAll(async () => {
  await apache?.close();
  await t?.close();
});

const issue = async (resource: string, scope: string) => {
  const res = await postForm(t, '/token', { grant_type: 'client_credentials', resource, scope }, backend);
  expect(res.status, JSON.stringify(res.json)).toBe(200);
  return res.json.access_token as string;
};

describe('mod_auth_openidc as the resource server', () => {
  it('accepts a token for its identifier with the scope', async () => {
    expect(await apache.call(await issue(ORDERS, 'read:orders write:orders'))).toBe(200);
  });

  it('refuses no token, a token without the scope, for another resource, expired, or forged', async () => {
    expect(await apache.call()).toBe(401);
    expect(await apache.call(await issue(ORDERS, 'write:orders'))).toBe(401);
    expect(await apache.call(await issue('https://billing.example.com/', 'read:invoices'))).toBe(401);
    expect(await apache.call(await t.token('svc:clients:read'))).toBe(401);
    const now = Math.floor(Date.now() / 1000);
    // Signed with the issuer's own current key, so only the expiry is wrong.
    const expired = await forgeToken(t, { aud: ORDERS, scope: 'read:orders', iat: now - 1200, exp: now - 600 }, { alg: 'RS256' });
    expect(await apache.call(expired)).toBe(401);
    const fresh = await forgeToken(t, { aud: ORDERS, scope: 'read:orders' }, { alg: 'RS256' });
    expect(await apache.call(fresh)).toBe(200); // the control: the same forging path with a valid exp passes
    expect(await apache.call(await forgeToken(t, { aud: ORDERS, scope: 'read:orders' }, { alg: 'RS256', foreignKey: true }))).toBe(401);
  });

  it("refuses another issuer's token for the same identifier", async () => {
    const other = await startTestApp();
    try {
      const admin = await other.token('svc:resources:write svc:clients:write');
      expect((await api(other, 'POST', '/api/v1/resources', { token: admin, body: { identifier: ORDERS, name: 'Orders', scopes: [{ name: 'read:orders' }], signing_alg: 'RS256' } })).status).toBe(201);
      const c = await serviceClient(other, admin, 'read:orders');
      const res = await postForm(other, '/token', { grant_type: 'client_credentials', resource: ORDERS, scope: 'read:orders' }, c);
      expect(res.status).toBe(200);
      expect(await apache.call(res.json.access_token)).toBe(401);
    } finally {
      await other.close();
    }
  });
});
