/**
 * Social login with a real OpenID Connect upstream: stock oidc-provider on loopback (its own
 * development sign-in and consent pages), configured as a generic `type: "oidc"` provider in the
 * global config file. Chromium signs in at the product, continues at the upstream and comes back;
 * openid-client is the relying party. Covers first sign-in (user created), second sign-in (same
 * user), linking to an existing user (refused without the password, done with it), an unverified
 * upstream e-mail that never links, and the sign-up rules.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oidc from 'openid-client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { seriousViolations } from '../helpers/social-a11y.js';
import { startUpstreamOidc, type UpstreamOidc } from '../helpers/upstream-oidc.js';
import { createClient, createUser } from '../helpers/users.js';

const UPSTREAM_SECRET = 'upstream-client-secret-0123456789';

describe('social login: generic OpenID Connect upstream (stock oidc-provider)', () => {
  let t: TestApp;
  let upstream: UpstreamOidc;
  let browser: Browser;
  let rp: RpServer;
  let REDIRECT: string;
  let config: oidc.Configuration;
  let dir: string;

  async function setSignup(section: Record<string, unknown>) {
    await t.app.ctx.storage.tenantConfig.put('default', 'security', { signup: section });
    await (await t.app.pool.get('default')).reload();
  }

  beforeAll(async () => {
    upstream = await startUpstreamOidc();
    rp = await startRpServer();
    REDIRECT = `${rp.origin}/cb`;
    dir = mkdtempSync(join(tmpdir(), 'svc-social-'));
    const file = join(dir, 'config.json');
    writeFileSync(
      file,
      JSON.stringify({
        features: {
          social_login: {
            providers: {
              corp: { type: 'oidc', enabled: true, issuer: upstream.issuer, client_id: 'svc-at-corp', client_secret: UPSTREAM_SECRET, display_name: 'Corp SSO', scopes: ['openid', 'email', 'profile'] },
              // The same upstream answering by form_post (as Apple does): a cross-site POST to the callback.
              'corp-post': { type: 'oidc', enabled: true, issuer: upstream.issuer, client_id: 'svc-at-corp', client_secret: UPSTREAM_SECRET, display_name: 'Corp Post', response_mode: 'form_post' },
            },
          },
        },
      }),
    );
    t = await startTestApp({ SVC_CONFIG_FILE: file });
    upstream.register({ client_id: 'svc-at-corp', client_secret: UPSTREAM_SECRET, redirect_uris: [`${t.issuer}/social/corp/callback`, `${t.issuer}/social/corp-post/callback`] });
    browser = await launchBrowser();
    const client = await createClient(t, { client_name: 'Web App', application_type: 'web', redirect_uris: [REDIRECT], grant_types: ['authorization_code'], scope: 'openid profile email', first_party: true });
    config = await oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
    await setSignup({ enabled: true });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await upstream?.close();
    await rp?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const count = async (sql: string) => Number(Object.values((await t.sql(sql))[0]!)[0]);
  const usersNow = () => count('SELECT count(*) AS n FROM users');
  const linksNow = () => count('SELECT count(*) AS n FROM social_identities');

  /** A fresh browser (no cookies at the product or the upstream) at the product's sign-in page. */
  async function authorize(opts: { bypassCSP?: boolean } = {}): Promise<{ context: BrowserContext; page: Page; verifier: string; state: string; nonce: string }> {
    const context = await browser.newContext(opts.bypassCSP ? { bypassCSP: true } : {});
    const page = await context.newPage();
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid profile email', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, nonce });
    await page.goto(url.href);
    return { context, page, verifier, state, nonce };
  }

  /** "Continue with Corp SSO", then the upstream's own sign-in and consent pages. */
  async function continueAtUpstream(page: Page, login: string, button = 'Continue with Corp SSO') {
    await page.getByRole('link', { name: button }).click();
    await page.waitForURL((u) => u.href.startsWith(upstream.issuer));
    await page.locator('input[name=login]').fill(login);
    await page.locator('input[name=password]').fill('whatever');
    await page.locator('button[type=submit]').click();
    await page.locator('button[type=submit]', { hasText: 'Continue' }).click();
  }

  async function tokensAtRp(page: Page, flow: { verifier: string; state: string; nonce: string }) {
    await page.waitForURL((u) => u.href.startsWith(REDIRECT));
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: flow.verifier, expectedState: flow.state, expectedNonce: flow.nonce });
    return tokens.claims()!;
  }

  async function userById(id: string) {
    const res = await api(t, 'GET', `/api/v1/users/${id}`, { token: await t.token('svc:users:read') });
    expect(res.status).toBe(200);
    return res.json.data;
  }

  async function auditTypes(userId: string): Promise<string[]> {
    const res = await api(t, 'GET', `/api/v1/users/${userId}/activities?limit=100`, { token: await t.token('svc:users:read') });
    return res.json.data.map((e: { type: string }) => e.type);
  }

  it('offers "Continue with <display name>" on the sign-in page, accessibly', async () => {
    const { context, page } = await authorize({ bypassCSP: true });
    const link = page.getByRole('link', { name: 'Continue with Corp SSO' });
    expect(await link.count()).toBe(1);
    expect(await link.getAttribute('href')).toMatch(/\/oidc\/v1\/interaction\/[A-Za-z0-9_-]+\/social\/corp$/);
    expect(await seriousViolations(page)).toEqual([]);
    await context.close();
  });

  it('first sign-in creates the user (auth_provider, email_verified and profile from the upstream) and the relying party gets its code', async () => {
    upstream.accounts.set('alice', { email: 'alice@corp.example', email_verified: true, given_name: 'Alice', family_name: 'Liddell', name: 'Alice Liddell' });
    const before = await usersNow();
    const flow = await authorize();
    await continueAtUpstream(flow.page, 'alice');
    const claims = await tokensAtRp(flow.page, flow);
    await flow.context.close();
    expect(await usersNow()).toBe(before + 1);
    const user = await userById(claims.sub);
    expect(user).toMatchObject({ email: 'alice@corp.example', email_verified: true, auth_provider: 'corp', given_name: 'Alice', family_name: 'Liddell', name: 'Alice Liddell' });
    const rows = await t.sql('SELECT provider, subject, user_id, email FROM social_identities WHERE user_id = ?', [claims.sub]);
    expect(rows).toEqual([{ provider: 'corp', subject: 'alice', user_id: claims.sub, email: 'alice@corp.example' }]);
    const types = await auditTypes(claims.sub);
    expect(types).toEqual(expect.arrayContaining(['signup', 'social_link', 'social_login', 'login']));
  });

  it('a second sign-in signs in the same user, creating nothing', async () => {
    const users = await usersNow();
    const links = await linksNow();
    const flow = await authorize();
    await continueAtUpstream(flow.page, 'alice');
    const claims = await tokensAtRp(flow.page, flow);
    await flow.context.close();
    const [row] = await t.sql("SELECT user_id, last_used_at FROM social_identities WHERE provider = 'corp' AND subject = 'alice'");
    expect(claims.sub).toBe(row!.user_id);
    expect(row!.last_used_at).toBeTruthy();
    expect(await usersNow()).toBe(users);
    expect(await linksNow()).toBe(links);
  });

  it('links an existing user with the same verified e-mail only after the password: refused when cancelled or wrong, done with it', async () => {
    const bob = await createUser(t, { email: 'bob@corp.example', email_verified: true });
    upstream.accounts.set('bob-upstream', { email: 'Bob@corp.example', email_verified: true, name: 'Bob' });
    const users = await usersNow();

    // Cancelled: back on the sign-in page, nothing linked.
    let flow = await authorize({ bypassCSP: true });
    await continueAtUpstream(flow.page, 'bob-upstream');
    await expect.poll(() => flow.page.getByRole('heading', { name: 'Link your Corp SSO account' }).count()).toBe(1);
    expect(await seriousViolations(flow.page)).toEqual([]);
    await flow.page.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => flow.page.getByRole('heading', { name: 'Sign in' }).count()).toBe(1);
    expect(await linksNow()).toBe(await count(`SELECT count(*) AS n FROM social_identities WHERE user_id <> '${bob.id}'`));
    await flow.context.close();

    // Wrong password: the form again with an error, nothing linked.
    flow = await authorize();
    await continueAtUpstream(flow.page, 'bob-upstream');
    await flow.page.getByLabel('Password').fill('not-the-password');
    await flow.page.getByRole('button', { name: 'Link and sign in' }).click();
    await expect.poll(() => flow.page.getByRole('alert').textContent()).toContain('That password is not correct.');
    expect(await t.sql('SELECT * FROM social_identities WHERE user_id = ?', [bob.id])).toEqual([]);

    // Right password: linked, signed in as bob, audited.
    await flow.page.getByLabel('Password').fill(bob.password);
    await flow.page.getByRole('button', { name: 'Link and sign in' }).click();
    const claims = await tokensAtRp(flow.page, flow);
    await flow.context.close();
    expect(claims.sub).toBe(bob.id);
    expect(await t.sql('SELECT provider, subject FROM social_identities WHERE user_id = ?', [bob.id])).toEqual([{ provider: 'corp', subject: 'bob-upstream' }]);
    expect(await usersNow()).toBe(users);
    expect(await auditTypes(bob.id)).toEqual(expect.arrayContaining(['social_link', 'social_login']));
    expect((await userById(bob.id)).auth_provider).toBe('local');

    // From now on Corp signs bob in directly.
    flow = await authorize();
    await continueAtUpstream(flow.page, 'bob-upstream');
    expect((await tokensAtRp(flow.page, flow)).sub).toBe(bob.id);
    await flow.context.close();
  }, 60_000);

  it('never links when the upstream does not vouch for the e-mail: a clear page, nothing created', async () => {
    const carol = await createUser(t, { email: 'carol@corp.example', email_verified: true });
    upstream.accounts.set('carol-upstream', { email: 'carol@corp.example', email_verified: false });
    const users = await usersNow();
    const links = await linksNow();
    const flow = await authorize();
    await continueAtUpstream(flow.page, 'carol-upstream');
    await expect.poll(() => flow.page.getByRole('heading', { name: 'Sign-in not possible' }).count()).toBe(1);
    expect(await flow.page.getByRole('alert').textContent()).toContain('does not confirm the address is yours');
    expect(flow.page.url().startsWith(REDIRECT)).toBe(false);
    await flow.context.close();
    expect(await usersNow()).toBe(users);
    expect(await linksNow()).toBe(links);
    expect(await t.sql('SELECT * FROM social_identities WHERE user_id = ?', [carol.id])).toEqual([]);
  });

  it('with sign-up off, only already linked users come in; allowed domains limit who is created', async () => {
    await setSignup({ enabled: false });
    try {
      upstream.accounts.set('dave', { email: 'dave@corp.example', email_verified: true });
      const users = await usersNow();
      let flow = await authorize();
      await continueAtUpstream(flow.page, 'dave');
      await expect.poll(() => flow.page.getByRole('alert').textContent()).toContain('new accounts cannot be created here');
      await flow.context.close();
      expect(await usersNow()).toBe(users);

      // alice is linked: she still signs in.
      flow = await authorize();
      await continueAtUpstream(flow.page, 'alice');
      const [alice] = await t.sql("SELECT user_id FROM social_identities WHERE provider = 'corp' AND subject = 'alice'");
      expect((await tokensAtRp(flow.page, flow)).sub).toBe(alice!.user_id);
      await flow.context.close();

      await setSignup({ enabled: true, allowed_email_domains: ['corp.example'] });
      upstream.accounts.set('erin', { email: 'erin@elsewhere.example', email_verified: true });
      flow = await authorize();
      await continueAtUpstream(flow.page, 'erin');
      await expect.poll(() => flow.page.getByRole('alert').textContent()).toContain('allowed domain');
      await flow.context.close();
      expect(await usersNow()).toBe(users);
    } finally {
      await setSignup({ enabled: true });
    }
  });

  it('lists linked accounts on the account page and unlinks them, never the last way to sign in, never another user\'s', async () => {
    const [alice] = await t.sql("SELECT user_id FROM social_identities WHERE provider = 'corp' AND subject = 'alice'");
    // alice has no password and one link: refused.
    let flow = await authorize({ bypassCSP: true });
    await continueAtUpstream(flow.page, 'alice');
    await tokensAtRp(flow.page, flow);
    await flow.page.goto(`${t.issuer}/account/social`);
    expect(await flow.page.getByRole('heading', { name: 'Linked accounts' }).count()).toBe(1);
    expect(await seriousViolations(flow.page)).toEqual([]);
    const refused = flow.page.waitForResponse((r) => r.url().endsWith('/account/social/unlink'));
    await flow.page.getByRole('button', { name: 'Unlink Corp SSO' }).click();
    expect((await refused).status()).toBe(409);
    expect(await flow.page.getByRole('alert').textContent()).toContain('only way to sign in');
    expect(await t.sql("SELECT subject FROM social_identities WHERE provider = 'corp' AND subject = 'alice'")).toHaveLength(1);
    await flow.context.close();

    // bob (password + link): cannot name alice's link, cannot post without the CSRF token, can unlink his own.
    const [bob] = await t.sql("SELECT user_id FROM social_identities WHERE provider = 'corp' AND subject = 'bob-upstream'");
    flow = await authorize();
    await continueAtUpstream(flow.page, 'bob-upstream');
    expect((await tokensAtRp(flow.page, flow)).sub).toBe(bob!.user_id);
    await flow.page.goto(`${t.issuer}/account/social`);
    const csrf = (await flow.page.locator('input[name=csrf_token]').first().getAttribute('value'))!;
    const other = await flow.context.request.post(`${t.issuer}/account/social/unlink`, { form: { csrf_token: csrf, provider: 'corp', subject: 'alice' } });
    expect(other.status()).toBe(404);
    const forged = await flow.context.request.post(`${t.issuer}/account/social/unlink`, { form: { provider: 'corp', subject: 'bob-upstream' } });
    expect(forged.status()).toBe(403);
    expect(await t.sql('SELECT user_id FROM social_identities WHERE user_id = ?', [alice!.user_id])).toHaveLength(1);
    await flow.page.getByRole('button', { name: 'Unlink Corp SSO' }).click();
    await expect.poll(() => flow.page.getByRole('status').textContent()).toContain('Corp SSO is no longer linked.');
    expect(await t.sql('SELECT * FROM social_identities WHERE user_id = ?', [bob!.user_id])).toEqual([]);
    expect(await auditTypes(bob!.user_id)).toContain('social_unlink');
    await flow.context.close();

    // Without a session: sign in first.
    const anon = await browser.newContext();
    const page = await anon.newPage();
    expect((await page.goto(`${t.issuer}/account/social`))?.status()).toBe(401);
    await anon.close();
  }, 60_000);

  it('completes a form_post answer (Apple\'s response mode): the cross-site POST becomes a GET that carries the binding cookie', async () => {
    upstream.accounts.set('frank', { email: 'frank@corp.example', email_verified: true, name: 'Frank' });
    const flow = await authorize();
    const posted = flow.page.waitForRequest((r) => r.method() === 'POST' && r.url() === `${t.issuer}/social/corp-post/callback`);
    await continueAtUpstream(flow.page, 'frank', 'Continue with Corp Post');
    expect((await posted).postData()).toMatch(/(^|&)code=/);
    const claims = await tokensAtRp(flow.page, flow);
    await flow.context.close();
    expect(await t.sql('SELECT provider, subject FROM social_identities WHERE user_id = ?', [claims.sub])).toEqual([{ provider: 'corp-post', subject: 'frank' }]);
    expect((await userById(claims.sub)).auth_provider).toBe('corp-post');
  });
});
