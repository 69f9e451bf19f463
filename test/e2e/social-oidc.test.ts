/**
 * Social login with a real OpenID Connect upstream: stock oidc-provider on loopback (its own
 * development sign-in and consent pages), configured as a generic `type: "oidc"` provider in the
 * global config file. Chromium signs in at the product, continues at the upstream and comes back;
 * openid-client is the relying party. Covers first sign-in (user created), second sign-in (same
 * user), linking to an existing user (refused without the password, done with it), an unverified
 * upstream e-mail that never links, the sign-up rules, and a sign-in cancelled at the upstream (its
 * page in the sign-in's `ui_locales`, a language switcher that never re-runs the callback).
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

  const accountUrl = () => `${new URL(t.issuer).origin}/account`;
  const count = async (sql: string) => Number(Object.values((await t.sql(sql))[0]!)[0]);
  const usersNow = () => count('SELECT count(*) AS n FROM users');
  const linksNow = () => count('SELECT count(*) AS n FROM social_identities');

  /** A fresh browser (no cookies at the product or the upstream) at the product's sign-in page. */
  async function authorize(opts: { bypassCSP?: boolean; locale?: string; params?: Record<string, string> } = {}): Promise<{ context: BrowserContext; page: Page; verifier: string; state: string; nonce: string }> {
    const context = await browser.newContext({ ...(opts.bypassCSP ? { bypassCSP: true } : {}), ...(opts.locale ? { locale: opts.locale } : {}) });
    const page = await context.newPage();
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid profile email', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, nonce, ...opts.params });
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

  /** The language switcher's links of the page: name and href. */
  const switcher = (page: Page) => page.locator('nav.languages a').evaluateAll((as) => as.map((a) => ({ name: a.textContent, href: a.getAttribute('href') })));
  const failedSocialLogins = async () => {
    await t.app.ctx.audit.drain();
    return count("SELECT count(*) AS n FROM audit_entries WHERE type = 'social_login' AND status = 'failed'");
  };

  it("cancelled at the upstream: the page is in the sign-in's language (ui_locales), its switcher leads back to the sign-in in the chosen language, and writes no failed login", async () => {
    const flow = await authorize({ locale: 'en-US', params: { ui_locales: 'de' } });
    flow.page.setDefaultTimeout(10_000);
    expect(await flow.page.getByRole('heading', { name: 'Anmelden' }).count()).toBe(1);
    const interaction = new URL(flow.page.url()).pathname;
    expect(interaction).toMatch(/^\/oidc\/v1\/interaction\/[A-Za-z0-9_-]+$/);
    await flow.page.getByRole('link', { name: 'Weiter mit Corp SSO' }).click();
    await flow.page.waitForURL((u) => u.href.startsWith(upstream.issuer));
    const answer = flow.page.waitForResponse((r) => r.url().startsWith(`${t.issuer}/social/corp/callback`));
    await flow.page.getByRole('link', { name: '[ Cancel ]' }).click();
    expect((await answer).status()).toBe(401);
    await flow.page.getByRole('heading', { name: 'Anmeldung abgebrochen' }).waitFor();
    expect(await flow.page.locator('html').getAttribute('lang')).toBe('de');
    expect(await flow.page.getByRole('link', { name: 'Zurück zur Anmeldung' }).getAttribute('href')).toBe(interaction);
    // The callback runs once: no switcher link re-runs it; each leads to the sign-in, `lang` set.
    const links = await switcher(flow.page);
    expect(links.map((l) => l.name)).toEqual(['English', 'Français', 'Deutsch', 'Español']);
    for (const l of links) expect(l.href).toMatch(new RegExp(`^${interaction}\\?lang=(en|fr|de|es)$`));
    const failed = await failedSocialLogins();
    await flow.page.getByRole('link', { name: 'English' }).click();
    await flow.page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(new URL(flow.page.url()).pathname).toBe(interaction);
    expect((await flow.context.cookies()).find((c) => c.name === 'svc_lang')?.value).toBe('en');
    expect(await failedSocialLogins()).toBe(failed);
    // The sign-in goes on in English: cancelled again, the result page follows the choice.
    await flow.page.getByRole('link', { name: 'Continue with Corp SSO' }).click();
    await flow.page.waitForURL((u) => u.href.startsWith(upstream.issuer));
    await flow.page.getByRole('link', { name: '[ Cancel ]' }).click();
    await flow.page.getByRole('heading', { name: 'Sign-in cancelled' }).waitFor();
    expect(await failedSocialLogins()).toBe(failed + 1);
    await flow.context.close();

    // A page without a way back (a callback opened with a state that is not valid here) has no switcher.
    const context = await browser.newContext({ locale: 'de-DE' });
    const page = await context.newPage();
    const res = await page.goto(`${t.issuer}/social/corp/callback?state=x&code=y`);
    expect(res?.status()).toBe(400);
    expect(await page.locator('html').getAttribute('lang')).toBe('de');
    expect(await switcher(page)).toEqual([]);
    await context.close();
  }, 60_000);

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
    expect(flow.page.url()).toBe(accountUrl());
    expect(await flow.page.getByRole('heading', { name: 'Linked accounts' }).count()).toBe(1);
    expect(await seriousViolations(flow.page)).toEqual([]);
    const refused = flow.page.waitForResponse((r) => r.request().method() === 'POST' && r.url() === accountUrl());
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
    await flow.page.goto(accountUrl());
    const csrf = (await flow.page.locator('input[name=csrf_token]').first().getAttribute('value'))!;
    const other = await flow.context.request.post(accountUrl(), { form: { csrf_token: csrf, action: 'social.unlink', provider: 'corp', subject: 'alice' } });
    expect(other.status()).toBe(404);
    const forged = await flow.context.request.post(accountUrl(), { form: { action: 'social.unlink', provider: 'corp', subject: 'bob-upstream' } });
    expect(forged.status()).toBe(403);
    // The former endpoint does nothing: a 303 to the account page.
    const old = await flow.context.request.post(`${t.issuer}/account/social/unlink`, { form: { csrf_token: csrf, provider: 'corp', subject: 'bob-upstream' }, maxRedirects: 0 });
    expect(old.status()).toBe(303);
    expect(await t.sql('SELECT user_id FROM social_identities WHERE user_id = ?', [alice!.user_id])).toHaveLength(1);
    await flow.page.getByRole('button', { name: 'Unlink Corp SSO' }).click();
    await expect.poll(() => flow.page.getByRole('status').filter({ hasText: 'Corp SSO is no longer linked.' }).count()).toBe(1);
    expect(await t.sql('SELECT * FROM social_identities WHERE user_id = ?', [bob!.user_id])).toEqual([]);
    expect(await auditTypes(bob!.user_id)).toContain('social_unlink');
    await flow.context.close();

    // Without a session: the account page sends the browser to sign in first.
    const anon = await browser.newContext();
    const page = await anon.newPage();
    await page.goto(accountUrl());
    expect(page.url()).toContain('/oidc/v1/interaction/');
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

  /** A fresh browser signed in with a password, on the account page. */
  async function signedInAccountPage(who: { email: string; password: string }) {
    const flow = await authorize({ bypassCSP: true });
    await flow.page.getByLabel('E-mail').fill(who.email);
    await flow.page.getByLabel('Password').fill(who.password);
    await flow.page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await tokensAtRp(flow.page, flow);
    await flow.page.goto(accountUrl());
    return flow;
  }

  /** The upstream's own sign-in and consent pages, once the browser is there. */
  async function atUpstream(page: Page, login: string) {
    await page.waitForURL((u) => u.href.startsWith(upstream.issuer));
    await page.locator('input[name=login]').fill(login);
    await page.locator('input[name=password]').fill('whatever');
    await page.locator('button[type=submit]').click();
    await page.locator('button[type=submit]', { hasText: 'Continue' }).click();
  }

  it('links an upstream account from the account page while signed in: no password asked, no verified-e-mail rule, audited', async () => {
    const gina = await createUser(t, { email: 'gina@elsewhere.example', email_verified: true });
    // The upstream does not vouch for the e-mail (and it differs): the signed-in user proves both sides.
    upstream.accounts.set('gina-upstream', { email: 'g@corp.example', email_verified: false });
    const flow = await signedInAccountPage(gina);
    expect(await flow.page.getByRole('heading', { name: 'Linked accounts' }).count()).toBe(1);
    expect(await flow.page.getByRole('link', { name: 'Link Corp SSO' }).count()).toBe(1);
    expect(await flow.page.getByRole('link', { name: 'Link Corp Post' }).count()).toBe(1);
    expect(await seriousViolations(flow.page)).toEqual([]);
    await flow.page.getByRole('link', { name: 'Link Corp SSO' }).click();
    await atUpstream(flow.page, 'gina-upstream');
    await flow.page.waitForURL((u) => u.href.startsWith(accountUrl()));
    await expect.poll(() => flow.page.getByRole('status').filter({ hasText: 'Corp SSO is now linked.' }).count()).toBe(1);
    expect(await flow.page.getByRole('button', { name: 'Unlink Corp SSO' }).count()).toBe(1);
    expect(await flow.page.getByRole('link', { name: 'Link Corp SSO' }).count()).toBe(0);
    expect(await t.sql('SELECT provider, subject FROM social_identities WHERE user_id = ?', [gina.id])).toEqual([{ provider: 'corp', subject: 'gina-upstream' }]);
    expect(await auditTypes(gina.id)).toContain('social_link');
    await flow.context.close();

    // From now on Corp signs gina in directly.
    const next = await authorize();
    await continueAtUpstream(next.page, 'gina-upstream');
    expect((await tokensAtRp(next.page, next)).sub).toBe(gina.id);
    await next.context.close();
  }, 60_000);

  it('refuses a link without the session-bound token, an upstream identity already linked to another user, and a state of another sign-in session', async () => {
    const hank = await createUser(t, { email: 'hank@corp.example', email_verified: true });
    const links = await linksNow();
    let flow = await signedInAccountPage(hank);
    const href = (await flow.page.getByRole('link', { name: 'Link Corp SSO' }).getAttribute('href'))!;
    // CSRF: no token, another provider's token, a token of another session.
    const start = new URL(href, accountUrl());
    const noToken = await flow.context.request.get(`${accountUrl()}/social/link?provider=corp`, { maxRedirects: 0 });
    expect(noToken.status()).toBe(403);
    const otherProvider = await flow.context.request.get(`${accountUrl()}/social/link?provider=corp-post&csrf_token=${start.searchParams.get('csrf_token')}`, { maxRedirects: 0 });
    expect(otherProvider.status()).toBe(403);
    const anon = await browser.newContext();
    const noSession = await anon.request.get(start.href, { maxRedirects: 0 });
    expect(noSession.status()).toBe(401);
    await anon.close();

    // alice's upstream identity is hers: linking it to hank is refused, audited, nothing moves.
    await flow.page.getByRole('link', { name: 'Link Corp SSO' }).click();
    await atUpstream(flow.page, 'alice');
    await expect.poll(() => flow.page.getByRole('heading', { name: 'Already linked' }).count()).toBe(1);
    // Its language switcher leads where its way back does (the account page), not to the callback.
    const accountLinks = await switcher(flow.page);
    expect(accountLinks).toHaveLength(4);
    for (const l of accountLinks) expect(l.href).toMatch(/^\/account\?lang=(en|fr|de|es)$/);
    expect(await t.sql('SELECT * FROM social_identities WHERE user_id = ?', [hank.id])).toEqual([]);
    const [alice] = await t.sql("SELECT user_id FROM social_identities WHERE provider = 'corp' AND subject = 'alice'");
    expect(alice!.user_id).not.toBe(hank.id);
    const failed = (await t.app.ctx.storage.audit.list('default', { type: 'social_link', user_id: hank.id }, { limit: 10, include_count: false })).items;
    expect(failed[0]).toMatchObject({ status: 'failed', details: expect.objectContaining({ reason: 'identity_linked_to_another_user' }) });
    await flow.context.close();

    // A flow started by hank's session, finished in ivy's signed-in browser holding hank's binding
    // cookie too (the state and the browser check pass): the session is not the one that started it.
    flow = await signedInAccountPage(hank);
    upstream.accounts.set('hank-upstream', { email: 'hank@corp.example', email_verified: true });
    const link = new URL((await flow.page.getByRole('link', { name: 'Link Corp SSO' }).getAttribute('href'))!, accountUrl());
    const begun = await flow.context.request.get(link.href, { maxRedirects: 0 });
    expect(begun.status()).toBe(303);
    const started = begun.headers()['location']!;
    expect(started.startsWith(upstream.issuer)).toBe(true);
    const binding = (await flow.context.cookies()).filter((c) => c.name === 'svc_social');
    expect(binding).toHaveLength(1);
    const ivy = await createUser(t, { email: 'ivy@corp.example', email_verified: true });
    const ivyFlow = await signedInAccountPage(ivy);
    await ivyFlow.context.addCookies(binding);
    await ivyFlow.page.goto(started);
    await atUpstream(ivyFlow.page, 'hank-upstream');
    await expect.poll(() => ivyFlow.page.getByRole('alert').count()).toBeGreaterThan(0);
    expect(ivyFlow.page.url().startsWith(accountUrl())).toBe(false);
    expect(await t.sql('SELECT * FROM social_identities WHERE user_id IN (?, ?)', [hank.id, ivy.id])).toEqual([]);
    expect(await linksNow()).toBe(links);
    const mismatch = (await t.app.ctx.storage.audit.list('default', { type: 'social_link' }, { limit: 10, include_count: false })).items;
    expect(mismatch[0]).toMatchObject({ status: 'failed', details: expect.objectContaining({ reason: 'session_mismatch' }) });
    await ivyFlow.context.close();
    await flow.context.close();
  }, 90_000);
});
