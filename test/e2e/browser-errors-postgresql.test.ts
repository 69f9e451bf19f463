/**
 * Multi-tenant: a browser that reaches an OIDC page of an unknown or suspended tenant gets a page
 * in its language with a plain explanation and the request id; an API client asking the same URL
 * keeps its problem+json.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { send } from '../helpers/tenant-http.js';

describe('error pages of unknown and suspended tenants (multi-tenant)', () => {
  let t: TestApp;
  let browser: Browser;
  beforeAll(async () => {
    t = await startTestApp({ MULTI_TENANCY_ENABLED: 'true' });
    browser = await launchBrowser();
    const basic = `Basic ${Buffer.from(`${BOOTSTRAP_ID}:${BOOTSTRAP_SECRET}`).toString('base64')}`;
    const tok = await send(t.app.port, 'POST', '/oidc/v1/token', { tenant: '_platforms', auth: basic, form: { grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope: 'svc:tenants:read svc:tenants:write' } });
    expect(tok.status, tok.text).toBe(200);
    const token = tok.json.access_token as string;
    expect((await send(t.app.port, 'POST', '/api/v1/tenants', { tenant: '_platforms', token, body: { slug: 'frozen', display_name: 'Frozen' } })).status).toBe(201);
    expect((await send(t.app.port, 'PATCH', '/api/v1/tenants/frozen', { tenant: '_platforms', token, body: { status: 'suspended' } })).status).toBe(200);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const AUTH = '/oidc/v1/auth?client_id=x&response_type=code&scope=openid';

  it('an unknown tenant: a page in the browser language, and JSON for API clients', async () => {
    const context = await browser.newContext({ locale: 'es-ES', extraHTTPHeaders: { 'x-tenant-id': 'nobody-here' } });
    const page = await context.newPage();
    const res = await page.goto(`${t.url}${AUTH}`);
    expect(res?.status()).toBe(404);
    expect(res!.headers()['content-type']).toContain('text/html');
    expect(await page.locator('html').getAttribute('lang')).toBe('es');
    const text = await page.locator('main').innerText();
    expect(text).toContain('no pertenece a ninguna organización');
    expect(text).toContain(res!.headers()['x-request-id']!);
    await context.close();

    const api = await send(t.app.port, 'GET', AUTH, { tenant: 'nobody-here', headers: { accept: 'application/json' } });
    expect(api.status).toBe(404);
    expect(api.headers['content-type']).toContain('application/problem+json');
  });

  it('a suspended tenant: the suspension explained, nothing of the tenant shown', async () => {
    const context = await browser.newContext({ locale: 'en-GB', extraHTTPHeaders: { 'x-tenant-id': 'frozen' } });
    const page = await context.newPage();
    const res = await page.goto(`${t.url}${AUTH}`);
    expect(res?.status()).toBe(403);
    expect(await page.locator('main').innerText()).toContain("This organisation's sign-in is suspended for now");
    await context.close();
  });
});
