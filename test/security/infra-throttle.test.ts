/**
 * Issue 12 item 11: client authentication was not throttled (2,344 wrong Basic secrets a second),
 * nor was typing device user codes (300 wrong codes in 0.6 s; RFC 8628 section 5.1).
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_FAILURES_PER_SOURCE, USER_CODE_FAILURES_PER_SOURCE } from '../../src/oidc/auth-throttle.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createClient } from '../helpers/users.js';
import { awayFromWindowEdge } from '../helpers/fixed-window.js';

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

describe('throttles', () => {
  let t: TestApp;
  let client: Record<string, any>;
  beforeAll(async () => {
    // Behind a trusted proxy on loopback, so the tests can speak for several client addresses.
    t = await startTestApp({ HTTP_TRUSTED_PROXIES: '127.0.0.0/8' });
    client = await createClient(t, { client_name: 'svc', grant_types: ['client_credentials', 'urn:ietf:params:oauth:grant-type:device_code'], scope: 'openid' });
  });
  afterAll(async () => t?.close());

  const token = async (secret: string, ip: string, path = '/oidc/v1/token') => {
    const res = await fetch(`${t.url}${path}`, {
      method: 'POST',
      headers: { authorization: basic(client.client_id, secret), 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
      body: /\/token\/?$/i.test(path) ? 'grant_type=client_credentials&scope=openid' : 'token=abc',
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, string> };
  };

  it('answers 429 to an address that keeps failing client authentication, whatever the endpoint', async () => {
    await awayFromWindowEdge(60);
    for (let i = 0; i < CLIENT_FAILURES_PER_SOURCE; i++) {
      const res = await token(`wrong-${i}`, '6.6.6.6', i % 2 ? '/oidc/v1/token' : '/oidc/v1/token/introspection');
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('invalid_client');
    }
    const blocked = await token('wrong-x', '6.6.6.6');
    expect(blocked.status).toBe(429);
    expect(blocked.retryAfter).toMatch(/^\d+$/);
    // Even the right secret is not tried from that address now: no oracle while throttled.
    expect((await token(client.client_secret, '6.6.6.6')).status).toBe(429);
    // The real client elsewhere is unaffected.
    const real = await token(client.client_secret, '203.0.113.7');
    expect(real.status, JSON.stringify(real.body)).toBe(200);
  });

  it('counts every spelling oidc-provider serves as its endpoint (case, a trailing slash) as that endpoint', async () => {
    await awayFromWindowEdge(60);
    const spellings = ['/oidc/v1/token/', '/oidc/v1/TOKEN', '/oidc/v1/Token/Introspection/', '/oidc/v1/token'];
    for (let i = 0; i < CLIENT_FAILURES_PER_SOURCE; i++) {
      const res = await token(`wrong-${i}`, '6.6.5.5', spellings[i % spellings.length]);
      expect(res.status).toBe(401);
    }
    for (const path of spellings) expect((await token('wrong-x', '6.6.5.5', path)).status, path).toBe(429);
    expect((await token(client.client_secret, '6.6.5.5', '/oidc/v1/token/')).status).toBe(429);
    // Elsewhere the spelling works as oidc-provider's endpoint, through the same fast paths.
    const other = await token(client.client_secret, '203.0.113.9', '/oidc/v1/TOKEN/');
    expect(other.status, JSON.stringify(other.body)).toBe(200);
  });

  it("counts wrong secrets on the actor's direct client_credentials path (a token for the Management API) too", async () => {
    const direct = async (secret: string) => {
      const res = await fetch(`${t.url}/oidc/v1/token`, {
        method: 'POST',
        headers: { authorization: basic(client.client_id, secret), 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '8.8.4.4' },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope: 'svc:clients:read' }),
      });
      await res.arrayBuffer();
      return res.status;
    };
    await awayFromWindowEdge(60);
    for (let i = 0; i < CLIENT_FAILURES_PER_SOURCE; i++) expect(await direct(`wrong-${i}`)).toBe(401);
    expect(await direct('wrong-again')).toBe(429);
  });

  it('counts a client assertion sent without client_id against the client it names (RFC 7523 makes client_id optional)', async () => {
    const jwtClient = await createClient(t, { client_name: 'hs256', grant_types: ['client_credentials'], scope: 'openid', token_endpoint_auth_method: 'client_secret_jwt' });
    const assertion = async (secret: string) => {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: jwtClient.client_id, sub: jwtClient.client_id, aud: t.issuer, iat: now, exp: now + 60, jti: randomUUID() })
        .setProtectedHeader({ alg: 'HS256' })
        .sign(new TextEncoder().encode(secret));
    };
    const post = async (secret: string) => {
      const body = new URLSearchParams({ grant_type: 'client_credentials', scope: 'openid', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: await assertion(secret) });
      const res = await fetch(`${t.url}/oidc/v1/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '7.7.7.7' }, body });
      await res.arrayBuffer();
      return res.status;
    };
    await awayFromWindowEdge(60);
    for (let i = 0; i < CLIENT_FAILURES_PER_SOURCE; i++) expect(await post(`wrong-secret-${i}-0123456789abcdef`)).toBe(401);
    expect(await post('another-wrong-secret-0123456789abcdef')).toBe(429);
    expect(await post(jwtClient.client_secret)).toBe(429); // no oracle while throttled
  });

  it('answers 429 after repeated wrong device user codes from one address', async () => {
    const enter = async (code: string, ip: string, lang = 'en', path = '/device') => {
      const page = await fetch(`${t.issuer}${path}`, { headers: { 'x-forwarded-for': ip } });
      const html = await page.text();
      const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
      const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
      const action = /<form[^>]+action="([^"]+)"/.exec(html)?.[1] ?? `${t.issuer}${path}`;
      const res = await fetch(new URL(action, t.issuer), {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip, 'accept-language': lang },
        body: new URLSearchParams({ xsrf, user_code: code }),
        redirect: 'manual',
      });
      return { status: res.status, body: await res.text() };
    };
    await awayFromWindowEdge(600);
    for (let i = 0; i < USER_CODE_FAILURES_PER_SOURCE; i++) {
      const res = await enter(`BCDF-GHJ${'KLMNPQRSTV'[i]}`, '6.6.6.7');
      expect(res.status).toBe(400);
    }
    const blocked = await enter('BCDF-GHJK', '6.6.6.7');
    expect(blocked.status).toBe(429);
    expect(blocked.body).toContain('Too many attempts');
    // The refusal is one of the tenant's pages: its stylesheet, in the visitor's language.
    expect(blocked.body).toContain('rel="stylesheet"');
    const french = await enter('BCDF-GHJK', '6.6.6.7', 'fr');
    expect(french.status).toBe(429);
    expect(french.body).toContain('<html lang="fr"');
    expect(french.body).toContain('Trop de tentatives');
    expect((await enter('BCDF-GHJK', '203.0.113.8')).status).toBe(400);
    // oidc-provider serves /device/ and /DEVICE as /device: the limit holds there too.
    expect((await enter('BCDF-GHJK', '6.6.6.7', 'en', '/device/')).status).toBe(429);
    expect((await enter('BCDF-GHJK', '6.6.6.7', 'en', '/DEVICE')).status).toBe(429);
  });
});
