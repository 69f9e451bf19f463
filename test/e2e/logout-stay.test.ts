/**
 * The logout confirmation's "Stay signed in" (second audit of 2026-11-30): oidc-provider sends both
 * buttons to the same success page, which said "Signed out" although the session went on. In
 * headless Chromium: after "Stay signed in" the page says so and the session still works; after
 * "Sign out" it says "Signed out" and the session is gone.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { launchBrowser } from '../helpers/browser.js';
import { createUser } from '../helpers/users.js';
import { signInToAccountPage } from '../helpers/account-page.js';

describe('logout confirmation: Stay signed in', () => {
  let t: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    t = await startTestApp({ SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000' });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('"Stay signed in" says the user is still signed in (never "Signed out"); "Sign out" then says signed out', async () => {
    const user = await createUser(t);
    const origin = new URL(t.issuer).origin;
    const page = await signInToAccountPage(await (await browser.newContext()).newPage(), origin, user);

    await page.goto(`${t.issuer}/session/end`);
    await page.getByRole('button', { name: 'Stay signed in' }).click();
    await page.waitForURL(`${t.issuer}/session/end/success**`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Still signed in');
    const stayed = await page.locator('main').innerText();
    expect(stayed).toContain('You are still signed in.');
    expect(stayed).not.toContain('signed out');
    expect(await seriousViolations(page)).toEqual([]);
    // It is true: the account page opens without signing in again.
    await page.goto(`${origin}/account`);
    expect(page.url()).toBe(`${origin}/account`);

    await page.goto(`${t.issuer}/session/end`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${t.issuer}/session/end/success**`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Signed out');
    await page.goto(`${t.issuer}/session/end/success`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Signed out');
    await page.context().close();
  });
});
