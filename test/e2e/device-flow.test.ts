/**
 * Device authorization grant (RFC 8628) end to end: openid-client starts it, Chromium completes
 * the verification page, the device polls the token endpoint.
 */
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { launchBrowser } from '../helpers/browser.js';
import { createClient, createUser, type TestUser } from '../helpers/users.js';

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

async function poll(t: TestApp, client: Record<string, any>, deviceCode: string) {
  const res = await fetch(`${t.url}/oidc/v1/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: DEVICE_GRANT, device_code: deviceCode }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

describe('device flow', () => {
  let t: TestApp;
  let browser: Browser;
  let user: TestUser;
  let client: Record<string, any>;
  let config: oidc.Configuration;

  beforeAll(async () => {
    t = await startTestApp();
    browser = await launchBrowser();
    user = await createUser(t);
    client = await createClient(t, { client_name: 'Living Room TV', grant_types: [DEVICE_GRANT, 'refresh_token'], scope: 'openid profile offline_access' });
    config = await oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** Enters the code on the verification page and walks through sign-in; `decision` picks the final button. */
  async function completeInBrowser(page: Page, uri: string, userCode: string, decision: 'Continue' | 'Abort') {
    await page.goto(uri);
    await page.getByLabel('Device code').fill(userCode);
    await page.getByRole('button', { name: 'Continue' }).click();
    for (let step = 0; step < 5; step++) {
      const title = await page.locator('h1').textContent();
      if (title === 'Sign in') {
        await page.getByLabel('E-mail').fill(user.email);
        await page.getByLabel('Password').fill(user.password);
        await page.getByRole('button', { name: 'Sign in' }).click();
      } else if (title === 'Allow access?') {
        await page.getByRole('button', { name: 'Allow' }).click();
      } else if (title === 'Confirm device') {
        expect(await page.locator('code.user-code').textContent()).toBe(userCode);
        await page.getByRole('button', { name: decision }).click();
      } else {
        return title;
      }
    }
    throw new Error('device flow did not finish');
  }

  it('answers with interval and expiry, polls pending, and issues tokens once the user confirms', async () => {
    const da = await oidc.initiateDeviceAuthorization(config, { scope: 'openid profile offline_access' });
    expect(da.interval).toBe(5);
    expect(da.expires_in).toBe(600);
    expect(da.verification_uri).toBe(`${t.issuer}/device`);

    const pending = await poll(t, client, da.device_code);
    expect(pending.status).toBe(400);
    expect(pending.body.error).toBe('authorization_pending');

    const page = await (await browser.newContext()).newPage();
    expect(await page.goto(da.verification_uri).then((r) => r!.headers()['content-security-policy'])).toContain("frame-ancestors 'none'");
    expect(await page.locator('input[name=user_code]').count()).toBe(1);
    const final = await completeInBrowser(page, da.verification_uri, da.user_code, 'Continue');
    expect(final).toBe('Device connected');

    // Polling too fast is answered with slow_down (RFC 8628 3.5) only while pending; now it is done.
    const done = await poll(t, client, da.device_code);
    expect(done.status).toBe(200);
    expect(done.body.token_type).toBe('Bearer');
    expect(done.body.id_token).toBeTruthy();
    expect(done.body.refresh_token).toBeTruthy();
    const info = await oidc.fetchUserInfo(config, done.body.access_token, user.id);
    expect(info.sub).toBe(user.id);

    // A device code already used is invalid_grant (CONTRACT.md).
    const again = await poll(t, client, da.device_code);
    expect(again.body.error).toBe('invalid_grant');
    await page.context().close();
  });

  it('verification_uri_complete shows the device page with the code filled in, in the page language, for the user to confirm', async () => {
    const da = await oidc.initiateDeviceAuthorization(config, { scope: 'openid' });
    expect(da.verification_uri_complete).toBe(`${t.issuer}/device?user_code=${encodeURIComponent(da.user_code)}`);
    const context = await browser.newContext({ locale: 'fr-FR' });
    const page = await context.newPage();
    const res = await page.goto(da.verification_uri_complete!);
    expect(res!.status()).toBe(200);
    expect(res!.headers()['content-security-policy']).toContain("default-src 'none'");
    expect(await page.locator('html').getAttribute('lang')).toBe('fr');
    expect(await page.locator('script').count()).toBe(0);
    // Nothing was submitted behind the user's back: the code waits in its field.
    expect(await page.getByLabel("Code de l'appareil").inputValue()).toBe(da.user_code);
    expect(await seriousViolations(page)).toEqual([]);
    // Continue takes the code on (the code entry page is left, without an error), and the device waits.
    await page.getByRole('button', { name: 'Continuer' }).click();
    expect(await page.locator('h1').textContent()).not.toBe('Connecter un appareil');
    expect(await page.locator('[role=alert]').count()).toBe(0);
    expect((await poll(t, client, da.device_code)).body.error).toBe('authorization_pending');
    await context.close();
  });

  it('answers slow_down when a pending code is polled faster than the interval', async () => {
    const da = await oidc.initiateDeviceAuthorization(config, { scope: 'openid' });
    expect((await poll(t, client, da.device_code)).body.error).toBe('authorization_pending');
    const fast = await poll(t, client, da.device_code);
    expect(fast.status).toBe(400);
    expect(fast.body.error).toBe('slow_down');
  });

  it('answers access_denied when the user aborts on the confirmation page', async () => {
    const da = await oidc.initiateDeviceAuthorization(config, { scope: 'openid' });
    const page = await (await browser.newContext()).newPage();
    await completeInBrowser(page, da.verification_uri, da.user_code, 'Abort');
    const denied = await poll(t, client, da.device_code);
    expect(denied.status).toBe(400);
    expect(denied.body.error).toBe('access_denied');
    await page.context().close();
  });

  it('refuses an unknown user code on the verification page', async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${t.issuer}/device`);
    await page.getByLabel('Device code').fill('BCDF-GHJK');
    await page.getByRole('button', { name: 'Continue' }).click();
    expect(await page.locator('[role=alert]').textContent()).toContain('not valid');
    await page.context().close();
  });

  it('answers expired_token once the device code has expired', async () => {
    const short = await startTestApp({ OIDC_TTL_DEVICE_CODE: '1' });
    try {
      const c = await createClient(short, { client_name: 'TV', grant_types: [DEVICE_GRANT], scope: 'openid' });
      const cfg = await oidc.discovery(new URL(short.issuer), c.client_id, c.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
      const da = await oidc.initiateDeviceAuthorization(cfg, { scope: 'openid' });
      expect(da.expires_in).toBe(1);
      await new Promise((r) => setTimeout(r, 1500));
      const late = await poll(short, c, da.device_code);
      expect(late.status).toBe(400);
      expect(late.body.error).toBe('expired_token');
    } finally {
      await short.close();
    }
  });
});
