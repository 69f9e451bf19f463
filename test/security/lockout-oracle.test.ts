/**
 * Issue 12, hole 6: a locked account answered the correct password with 403 "cannot sign in" and a
 * wrong one with 401, so the lockout was a password oracle. While an account is locked (by the
 * brute-force guard or an administrator) or disabled, the right and a wrong password now get the
 * same status and the same page; an automatic lock says how long it lasts. Driven in Chromium on
 * the real sign-in page.
 */
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { REDIRECT, RP, rpConfig } from '../helpers/user-token.js';
import { createUser, type TestUser } from '../helpers/users.js';

describe('hole 6: no password oracle while an account is locked or disabled', () => {
  let t: TestApp;
  let browser: Browser;
  let client: { client_id: string; client_secret: string };
  let root: string;

  beforeAll(async () => {
    t = await startTestApp({ SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000' });
    browser = await launchBrowser();
    root = await t.token('svc:users:read svc:users:write svc:clients:write');
    const res = await api(t, 'POST', '/api/v1/clients', { token: root, body: { client_name: 'RP', redirect_uris: [REDIRECT], grant_types: ['authorization_code'], scope: 'openid', first_party: true } });
    expect(res.status, res.text).toBe(201);
    client = res.json.data;
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** A sign-in page of a fresh authorization request. */
  async function signInPage(): Promise<Page> {
    const config = await rpConfig(t.issuer, client);
    const page = await (await browser.newContext()).newPage();
    await page.route(`${RP}/**`, (route) => route.fulfill({ status: 200, body: 'rp' }));
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT, scope: 'openid', state: oidc.randomState(),
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256',
    });
    await page.goto(url.href);
    return page;
  }

  /** Submits the form; the answer's status and the text of its alert. */
  async function attempt(page: Page, email: string, password: string): Promise<{ status: number; alert: string }> {
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(password);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && /\/interaction\/[^/]+\/login$/.test(new URL(r.url()).pathname)),
      page.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    await page.waitForLoadState();
    return { status: response.status(), alert: ((await page.locator('[role=alert]').textContent()) ?? '').trim() };
  }

  async function rightAndWrong(user: TestUser) {
    const page = await signInPage();
    const right = await attempt(page, user.email, user.password);
    const wrong = await attempt(page, user.email, 'Not-The-Password-1');
    await page.context().close();
    return { right, wrong };
  }

  it('after the brute-force lock, the right and a wrong password look the same, and the page says for how long', async () => {
    const victim = await createUser(t);
    const page = await signInPage();
    for (let i = 0; i < 4; i++) expect((await attempt(page, victim.email, `wrong-${i}-password`)).status).toBe(401);
    const locking = await attempt(page, victim.email, 'wrong-4-password');
    expect(locking.status).toBe(403);
    expect(locking.alert).toMatch(/locked it for 15 more minutes/);
    await page.context().close();

    const { right, wrong } = await rightAndWrong(victim);
    expect(right).toEqual(wrong);
    expect(right.status).toBe(403);
    expect(right.alert).toMatch(/cannot sign in right now: too many failed sign-in attempts locked it for 1[45] more minutes/);
  });

  it('an administrator lock and a disabled account answer the right and a wrong password alike', async () => {
    const locked = await createUser(t);
    expect((await api(t, 'POST', `/api/v1/users/${locked.id}/lock`, { token: root })).status).toBe(200);
    const a = await rightAndWrong(locked);
    expect(a.right).toEqual(a.wrong);
    expect(a.right).toEqual({ status: 403, alert: 'This account cannot sign in right now. Contact your administrator.' });

    const disabled = await createUser(t);
    expect((await api(t, 'PATCH', `/api/v1/users/${disabled.id}`, { token: root, body: { account_enabled: false } })).status).toBe(200);
    const d = await rightAndWrong(disabled);
    expect(d.right).toEqual(d.wrong);
    expect(d.right.status).toBe(403);
  });

  it('an unlocked account still tells a wrong password (401) from a right one (signed in)', async () => {
    const user = await createUser(t);
    const page = await signInPage();
    expect(await attempt(page, user.email, 'wrong-password-x')).toEqual({ status: 401, alert: 'Invalid e-mail or password.' });
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${REDIRECT}**`);
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    await page.context().close();
  });
});
