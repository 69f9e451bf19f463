/**
 * A person who reaches a page of the service with a request that cannot be served sees a styled
 * page in their language with a plain explanation and the request id (ui/error-page.ts), not
 * protocol wording: here an authorization request whose redirect_uri the client never registered.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { createClient } from '../helpers/users.js';

describe('error pages for browsers', () => {
  let t: TestApp;
  let browser: Browser;
  let clientId: string;
  beforeAll(async () => {
    t = await startTestApp();
    browser = await launchBrowser();
    const client = await createClient(t, { client_name: 'Shop', redirect_uris: ['https://shop.example.com/cb'], scope: 'openid' });
    clientId = client.client_id;
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const authorizeUrl = (redirect: string) =>
    `${t.issuer}/auth?${new URLSearchParams({ client_id: clientId, response_type: 'code', scope: 'openid', redirect_uri: redirect, code_challenge: 'a'.repeat(43), code_challenge_method: 'S256' })}`;

  it('explains an unregistered redirect_uri in the browser language, with the request id', async () => {
    const context = await browser.newContext({ locale: 'fr-FR' });
    const page = await context.newPage();
    const res = await page.goto(authorizeUrl('https://evil.example/cb'));
    expect(res?.status()).toBe(400);
    expect(await page.locator('html').getAttribute('lang')).toBe('fr');
    const text = await page.locator('main').innerText();
    expect(text).toContain("L'application qui vous a envoyé ici n'est pas configurée");
    expect(text).toContain(`Référence : ${res!.headers()['x-request-id']}`);
    // No protocol wording on the page.
    expect(text).not.toMatch(/redirect_uri|invalid_request/);
    expect(res!.headers()['content-security-policy']).toContain("default-src 'none'");
    // The page is styled: its stylesheet loads.
    const css = await page.evaluate(() => [...document.styleSheets].map((s) => s.cssRules.length));
    expect(css[0]).toBeGreaterThan(0);
    await context.close();
  });

  it('explains an unknown client', async () => {
    const context = await browser.newContext({ locale: 'de-DE' });
    const page = await context.newPage();
    const res = await page.goto(`${t.issuer}/auth?client_id=nobody&response_type=code&scope=openid&redirect_uri=https%3A%2F%2Fshop.example.com%2Fcb`);
    expect(res?.status()).toBe(400);
    expect(await page.locator('main').innerText()).toContain('Die Anwendung, die Sie hierher geschickt hat, ist unbekannt');
    await context.close();
  });
});
