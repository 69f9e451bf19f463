/**
 * `_ops` answers JSON only (spec 1.5 "Reserved tenants"; docs/decisions.md `_ops`), whatever the
 * request's Accept says: a browser navigating to the relay with a bad state, or to a page path of a
 * tenant (`/auth`, `/account`, `/admin`, ...) on `_ops`, gets problem+json, never the HTML error
 * page the tenants draw; the stylesheet every tenant serves is not served there; nothing sets a
 * cookie. By header and by host, over HTTP and in Chromium.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropRedisKeys, startTestApp, type TestApp } from '../helpers/app.js';
import { expectProblem } from '../helpers/problem.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { send, type TenantRequest } from '../helpers/tenant-http.js';
import { TENANT_SUBDOMAINS, launchBrowser } from '../helpers/browser.js';

/** What Chromium sends when it navigates to a page. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
const CALLBACK = '/oidc/v1/social/up/callback';

describe('`_ops` answers JSON only, also to a browser (multi-tenant, PostgreSQL + Redis)', () => {
  let t: TestApp;
  let port: number;
  let prefix: string;
  let browser: Browser;

  beforeAll(async () => {
    prefix = uniquePrefix('opsjson');
    t = await startTestApp({ MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', REDIS_URL: SHARED_REDIS_URL, REDIS_KEY_PREFIX: prefix });
    port = t.app.port;
    browser = await launchBrowser([TENANT_SUBDOMAINS]);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
  });

  const ways: Array<[string, TenantRequest]> = [
    ['by header', { tenant: '_ops' }],
    ['by host', { sub: '_ops' }],
  ];

  for (const [how, to] of ways) {
    const html = (o: TenantRequest = {}): TenantRequest => ({ ...to, ...o, headers: { accept: BROWSER_ACCEPT, 'accept-language': 'de', ...(o.headers ?? {}) } });

    it(`refuses a bad relay state with 400 problem+json, GET, POST and HEAD (${how})`, async () => {
      const get = await send(port, 'GET', `${CALLBACK}?state=x.y&code=z&lang=de`, html());
      expectProblem(get, 400, 'bad-request', CALLBACK);
      expect(get.setCookie).toEqual([]);
      const post = await send(port, 'POST', CALLBACK, html({ form: { state: 'x.y', code: 'z' } }));
      expectProblem(post, 400, 'bad-request', CALLBACK);
      expect(post.setCookie).toEqual([]);
      const head = await send(port, 'HEAD', `${CALLBACK}?state=x.y&code=z`, html());
      expect(head.status).toBe(400);
      expect(head.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(head.setCookie).toEqual([]);
    });

    it(`answers 404 problem+json for the page paths of a tenant and the stylesheet (${how})`, async () => {
      const paths = ['/oidc/v1/auth', '/oidc/v1/interaction/x', '/oidc/v1/device', '/oidc/v1/session/end', '/oidc/v1/account', '/account', '/account/password/forgot', '/admin', '/admin/assets/x.js', '/assets/app.css'];
      for (const path of paths) {
        for (const method of ['GET', 'HEAD'] as const) {
          const res = await send(port, method, `${path}?lang=de`, html());
          expect(res.status, `${method} ${path}`).toBe(404);
          expect(res.headers['content-type'], `${method} ${path}`).toMatch(/^application\/problem\+json/);
          expect(res.setCookie, `${method} ${path}`).toEqual([]);
          if (method === 'GET') expectProblem(res, 404, 'not-found', path);
        }
      }
      const post = await send(port, 'POST', '/account/password/forgot', html({ form: { email: 'a@example.com' } }));
      expectProblem(post, 404, 'not-found', '/account/password/forgot');
    });
  }

  it('still serves the stylesheet to the tenants and without a tenant (error pages of the front door)', async () => {
    const bare = await send(port, 'GET', '/assets/app.css', { headers: { accept: 'text/css' } });
    expect(bare.status).toBe(200);
    expect(bare.headers['content-type']).toMatch(/^text\/css/);
    const platform = await send(port, 'GET', '/assets/app.css', { sub: '_platforms' });
    expect(platform.status).toBe(200);
    // A tenant nobody created keeps its HTML error page (only `_ops` is JSON only).
    const unknown = await send(port, 'GET', '/oidc/v1/auth', { sub: 'nosuch', headers: { accept: BROWSER_ACCEPT } });
    expect(unknown.status).toBe(404);
    expect(unknown.headers['content-type']).toMatch(/^text\/html/);
  });

  it('gives Chromium problem+json on `_ops` pages, the relay included', async () => {
    const context = await browser.newContext({ locale: 'de-DE' });
    const page = await context.newPage();
    for (const [path, status] of [
      [`${CALLBACK}?state=x.y&code=z`, 400],
      ['/oidc/v1/auth?client_id=x', 404],
      ['/account', 404],
      ['/admin', 404],
      ['/assets/app.css', 404],
    ] as const) {
      const res = await page.goto(`http://_ops.localhost:${port}${path}`);
      expect(res?.status(), path).toBe(status);
      expect(res?.headers()['content-type'], path).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(await res!.text()).status, path).toBe(status);
    }
    expect(await context.cookies()).toEqual([]);
    await context.close();
  });
});
