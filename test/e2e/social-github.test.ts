/**
 * The GitHub preset (OAuth 2.0 + GitHub's user APIs) against a local stand-in shaped like GitHub's
 * documented endpoints (test/helpers/github-standin.ts), pointed at by the preset's `endpoints`
 * override. Only the verified primary address of /user/emails counts as a verified e-mail: a
 * verified secondary address never links to the user who owns it here.
 */
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type TestApp } from '../helpers/app.js';
import { startGithubStandin, type GithubStandin } from '../helpers/github-standin.js';
import { startSocialApp, type SocialApp } from '../helpers/social-app.js';
import { createUser } from '../helpers/users.js';

describe('social login: GitHub preset (OAuth 2.0 + user and e-mail APIs)', () => {
  let t: TestApp;
  let gh: GithubStandin;
  let browser: Browser;
  let REDIRECT: string;
  let config: oidc.Configuration;

  let app: SocialApp;
  beforeAll(async () => {
    gh = await startGithubStandin();
    const endpoints = { authorization: `${gh.origin}/login/oauth/authorize`, token: `${gh.origin}/login/oauth/access_token`, user: `${gh.origin}/user`, emails: `${gh.origin}/user/emails` };
    app = await startSocialApp({ github: { enabled: true, client_id: gh.clientId, client_secret: gh.clientSecret, endpoints } });
    ({ t, redirect: REDIRECT, browser, config } = app);
  });
  afterAll(async () => {
    await app?.close();
    await gh?.close();
  });

  const count = async (table: string) => Number(Object.values((await t.sql(`SELECT count(*) AS n FROM ${table}`))[0]!)[0]);

  async function viaGithub(): Promise<{ page: Page; close: () => Promise<void>; sub: () => Promise<string> }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid profile email', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state: 'st', nonce: 'nn' });
    await page.goto(url.href);
    await page.getByRole('link', { name: 'Continue with GitHub' }).click();
    await page.waitForURL((u) => u.href.startsWith(`${gh.origin}/login/oauth/authorize`));
    const authorize = new URL(page.url());
    // The request GitHub documents: client_id, redirect_uri, scope, state (+ PKCE S256).
    expect(authorize.searchParams.get('client_id')).toBe(gh.clientId);
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${t.issuer}/social/github/callback`);
    expect(authorize.searchParams.get('scope')).toBe('read:user user:email');
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    await page.locator('#continue').click();
    return {
      page,
      close: () => context.close(),
      sub: async () => {
        await page.waitForURL((u) => u.href.startsWith(REDIRECT));
        const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: 'st', expectedNonce: 'nn' });
        return tokens.claims()!.sub;
      },
    };
  }

  it('creates the user from /user and the verified primary address of /user/emails, then signs the same user in again', async () => {
    gh.user = { login: 'octocat', id: 583231, name: 'The Octocat', email: null };
    gh.emails = [
      { email: 'octo-old@github.example', primary: false, verified: true, visibility: null },
      { email: 'octocat@github.example', primary: true, verified: true, visibility: 'private' },
    ];
    let flow = await viaGithub();
    const sub = await flow.sub();
    await flow.close();
    const res = await api(t, 'GET', `/api/v1/users/${sub}`, { token: await t.token('svc:users:read') });
    expect(res.json.data).toMatchObject({ email: 'octocat@github.example', email_verified: true, auth_provider: 'github', username: 'octocat', name: 'The Octocat' });
    expect(await t.sql('SELECT provider, subject FROM social_identities WHERE user_id = ?', [sub])).toEqual([{ provider: 'github', subject: '583231' }]);

    const users = await count('users');
    flow = await viaGithub();
    expect(await flow.sub()).toBe(sub);
    await flow.close();
    expect(await count('users')).toBe(users);
  });

  it('never links through a verified secondary address: the account is created with the unverified primary', async () => {
    const target = await createUser(t, { email: 'target@company.example', email_verified: true });
    gh.user = { login: 'mallory', id: 666, name: 'Mallory', email: 'target@company.example' };
    gh.emails = [
      { email: 'target@company.example', primary: false, verified: true, visibility: 'public' },
      { email: 'mallory@github.example', primary: true, verified: false, visibility: 'private' },
    ];
    const flow = await viaGithub();
    const sub = await flow.sub();
    await flow.close();
    expect(sub).not.toBe(target.id);
    const res = await api(t, 'GET', `/api/v1/users/${sub}`, { token: await t.token('svc:users:read') });
    expect(res.json.data).toMatchObject({ email: 'mallory@github.example', email_verified: false, auth_provider: 'github' });
    expect(await t.sql('SELECT * FROM social_identities WHERE user_id = ?', [target.id])).toEqual([]);
  });

  it('refuses an unverified primary address that belongs to an existing user: no link, nothing created', async () => {
    const victim = await createUser(t, { email: 'victim@company.example', email_verified: true });
    gh.user = { login: 'eve', id: 777, name: 'Eve', email: null };
    gh.emails = [{ email: 'victim@company.example', primary: true, verified: false, visibility: 'private' }];
    const users = await count('users');
    const links = await count('social_identities');
    const flow = await viaGithub();
    await expect.poll(() => flow.page.getByRole('heading', { name: 'Sign-in not possible' }).count()).toBe(1);
    expect(await flow.page.getByRole('alert').textContent()).toContain('GitHub does not confirm the address is yours');
    await flow.close();
    expect(await count('users')).toBe(users);
    expect(await count('social_identities')).toBe(links);
    expect(await t.sql('SELECT * FROM social_identities WHERE user_id = ?', [victim.id])).toEqual([]);
  });
  it("links a verified primary address's account when its password is typed and Enter pressed (the form's default action is Link, not Cancel)", async () => {
    const owner = await createUser(t, { email: 'owner@company.example', email_verified: true });
    gh.user = { login: 'owner-gh', id: 888, name: 'Owner', email: null };
    gh.emails = [{ email: 'owner@company.example', primary: true, verified: true, visibility: 'private' }];
    const flow = await viaGithub();
    await expect.poll(() => flow.page.getByRole('heading', { name: 'Link your GitHub account' }).count()).toBe(1);
    // Implicit submission (HTML, 4.10.21.2) presses the form's first submit button.
    await flow.page.getByLabel('Password').fill(owner.password);
    await flow.page.getByLabel('Password').press('Enter');
    await expect.poll(() => flow.page.url().startsWith(REDIRECT) || flow.page.url(), { timeout: 10000 }).toBe(true);
    expect(await flow.sub()).toBe(owner.id);
    await flow.close();
    expect(await t.sql('SELECT provider, subject FROM social_identities WHERE user_id = ?', [owner.id])).toEqual([{ provider: 'github', subject: '888' }]);
  });
});
