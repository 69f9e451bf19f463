/**
 * The administration console shows the callback URL to register at each social provider
 * (CONTRACT.md "End-user surface", issue 15): Settings > Features lists the six presets and every
 * configured provider (global ones from the config file included) with `{issuer}/social/<name>/
 * callback`, exactly the redirect_uri the server sends upstream, and whether each is offered at
 * sign-in now; saving the features section updates it. The API behind it
 * (GET /api/v1/config/social-callbacks) carries names and URLs only, never a client id or secret.
 * The relay case (`_ops` URL, multi-tenant) is in social-relay-postgresql.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { ensureConsoleBuilt, expectAccessible, screenshot, signInToConsole, watchPage } from '../helpers/console.js';
import { createUser, type TestUser } from '../helpers/users.js';

const GITHUB_SECRET = 'global-github-secret-value-0123';

describe('administration console: social login callback URLs', () => {
  let t: TestApp;
  let browser: Browser;
  let admin: TestUser;
  let page: Page;
  let watch: { problems: string[] };
  let dir: string;

  beforeAll(async () => {
    ensureConsoleBuilt();
    dir = mkdtempSync(join(tmpdir(), 'svc-social-'));
    const file = join(dir, 'config.json');
    writeFileSync(
      file,
      JSON.stringify({
        features: {
          social_login: {
            providers: {
              github: { enabled: true, client_id: 'Iv1.global', client_secret: GITHUB_SECRET },
              corp: { type: 'oidc', enabled: true, issuer: 'https://sso.corp.example', client_id: 'svc', client_secret: 'corp-secret-value', display_name: 'Corp SSO' },
            },
          },
        },
      }),
    );
    t = await startTestApp({ SVC_CONFIG_FILE: file });
    admin = await createUser(t, { role: 'admin', email: `admin-${Date.now()}@example.com` });
    browser = await launchBrowser();
    page = await (await browser.newContext({ locale: 'en-US' })).newPage();
    page.setDefaultTimeout(10_000);
    watch = watchPage(page);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The table's rows: provider cell, status, URL text. */
  async function rows(p: Page): Promise<Array<[string, string, string]>> {
    const table = p.getByRole('table', { name: 'Social login callback URLs' });
    await table.waitFor();
    return table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('th, td')].map((c) => c.textContent!.trim()) as [string, string, string]));
  }

  it('the API lists the presets and the configured providers with the callback URL the server sends upstream; no credentials', async () => {
    const res = await api(t, 'GET', '/api/v1/config/social-callbacks', { token: await t.token('svc:config:read') });
    expect(res.status).toBe(200);
    expect(res.json.data.relay).toBe(false);
    const byName = Object.fromEntries(res.json.data.providers.map((p: { name: string }) => [p.name, p]));
    expect(Object.keys(byName).sort()).toEqual(['apple', 'corp', 'facebook', 'github', 'gitlab', 'google', 'microsoft']);
    expect(byName.github).toEqual({ name: 'github', display_name: 'GitHub', preset: 'github', enabled: true, callback_url: `${t.issuer}/social/github/callback` });
    expect(byName.corp).toEqual({ name: 'corp', display_name: 'Corp SSO', preset: null, enabled: true, callback_url: `${t.issuer}/social/corp/callback` });
    expect(byName.google).toMatchObject({ enabled: false, callback_url: `${t.issuer}/social/google/callback` });
    expect(res.text).not.toContain('Iv1.global');
    expect(res.text).not.toContain(GITHUB_SECRET);
    // Another scope than config:read is refused.
    expect((await api(t, 'GET', '/api/v1/config/social-callbacks', { token: await t.token('svc:users:read') })).status).toBe(403);
  });

  it('Settings > Features shows each provider\'s exact callback URL, and updates when a provider is enabled there', async () => {
    await signInToConsole(page, `${new URL(t.issuer).origin}/admin`, admin.email, admin.password);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Settings', exact: true }).click();
    await page.getByRole('button', { name: 'Features', exact: true }).click();
    await page.waitForURL(/section=features/);
    let table = await rows(page);
    expect(table).toContainEqual(['GitHub (github)', 'Offered at sign-in', `${t.issuer}/social/github/callback`]);
    expect(table).toContainEqual(['Corp SSO (corp)', 'Offered at sign-in', `${t.issuer}/social/corp/callback`]);
    expect(table).toContainEqual(['Facebook (facebook)', 'Not offered', `${t.issuer}/social/facebook/callback`]);
    expect(table).toHaveLength(7);
    expect(await page.getByText('Register this URL as the redirect (callback) URL', { exact: false }).count()).toBe(1);
    await page.locator('.loading').first().waitFor({ state: 'detached' });
    await expectAccessible(page, 'settings-social-callbacks');
    await screenshot(page, 'settings-social-callbacks');

    // Facebook enabled in this tenant through the form: the table follows.
    await page.getByLabel('social_login.providers.facebook.enabled').selectOption('true');
    await page.getByLabel('social_login.providers.facebook.client_id').fill('1234567890');
    await page.getByLabel('social_login.providers.facebook.client_secret', { exact: true }).fill('fb-tenant-secret-value');
    await page.getByRole('button', { name: 'Save Features' }).click();
    await page.getByText('Saved.', { exact: true }).last().waitFor();
    await expect.poll(async () => (await rows(page)).find((r) => r[0].startsWith('Facebook'))?.[1]).toBe('Offered at sign-in');
    table = await rows(page);
    expect(table).toContainEqual(['Facebook (facebook)', 'Offered at sign-in', `${t.issuer}/social/facebook/callback`]);
    expect(await page.content()).not.toContain('fb-tenant-secret-value');
    expect(watch.problems).toEqual([]);
  });
});
