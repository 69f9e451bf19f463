/**
 * Social login under attack or failure: a hand-made upstream (test/helpers/rogue-oidc.ts) that can
 * answer with another nonce, issuer or audience, an error, or not at all. Each case ends on a clear
 * error page at the product, and nothing is created (no user, no link); the state is sealed,
 * single use and bound to the browser that started the flow.
 */
import * as oidc from 'openid-client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { startRogueOidc, type RogueOidc } from '../helpers/rogue-oidc.js';
import { startSocialApp, type SocialApp } from '../helpers/social-app.js';
import { createUser } from '../helpers/users.js';

describe('social login: hostile and failing upstream answers', () => {
  let t: TestApp;
  let rogue: RogueOidc;
  let browser: Browser;
  let REDIRECT: string;
  let config: oidc.Configuration;
  let subject = 0;

  let app: SocialApp;
  beforeAll(async () => {
    rogue = await startRogueOidc();
    // A short upstream time limit, so the timeout case does not wait 10 s.
    app = await startSocialApp({ rogue: { type: 'oidc', enabled: true, issuer: rogue.issuer, client_id: rogue.clientId, client_secret: rogue.clientSecret, display_name: 'Rogue ID' } }, { FEATURES_SOCIAL_LOGIN_UPSTREAM_TIMEOUT_MS: '1500' });
    ({ t, redirect: REDIRECT, browser, config } = app);
  });
  afterAll(async () => {
    await app?.close();
    await rogue?.close();
  });
  beforeEach(() => {
    rogue.mode = 'ok';
    subject++;
    rogue.claims = { sub: `rogue-${subject}`, email: `rogue${subject}@example.com`, email_verified: true };
  });

  const snapshot = () => app.snapshot();

  /** A fresh browser from the relying party to the upstream's page; returns the callback URL it offers. */
  async function toUpstream(): Promise<{ context: BrowserContext; page: Page; callback: string }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid email', code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256', state: 's', nonce: 'n' });
    await page.goto(url.href);
    await page.getByRole('link', { name: 'Continue with Rogue ID' }).click();
    await page.waitForURL((u) => u.href.startsWith(rogue.issuer));
    const callback = (await page.locator('#continue').getAttribute('href'))!;
    expect(callback.startsWith(`${t.issuer}/social/rogue/callback?`)).toBe(true);
    return { context, page, callback };
  }

  async function expectErrorPage(page: Page, status: number, status0: number | undefined, heading: RegExp | string, text?: string) {
    expect(status0).toBe(status);
    expect(await page.getByRole('heading', { name: heading }).count()).toBe(1);
    if (text) expect(await page.getByRole('alert').textContent()).toContain(text);
    expect(page.url().startsWith(REDIRECT)).toBe(false);
  }

  it('the well-behaved answer signs in (the baseline the other cases differ from)', async () => {
    const before = await snapshot();
    const { context, page } = await toUpstream();
    await page.locator('#continue').click();
    await page.waitForURL((u) => u.href.startsWith(REDIRECT));
    await context.close();
    expect(await snapshot()).toEqual({ users: before.users + 1, links: before.links + 1 });
  });

  it("holds upstream claims to the Management API's user rules: an unusable address creates nothing, profile fields are cut to their limits", async () => {
    for (const email of ['<img src=x onerror=alert(4)>', `${'a'.repeat(300)}@example.com`, 'not an address']) {
      const before = await snapshot();
      rogue.claims = { sub: `rogue-bad-${subject}-${email.length}`, email, email_verified: true };
      const { context, page } = await toUpstream();
      const response = page.waitForResponse((r) => r.url().startsWith(`${t.issuer}/social/rogue/callback`));
      await page.locator('#continue').click();
      expect((await response).status(), email).toBe(403);
      expect(await page.getByRole('alert').textContent()).toContain('did not share an e-mail address');
      await context.close();
      expect(await snapshot()).toEqual(before);
    }
    // A leading space is not another address: it is the address.
    const address = `  spaced${subject}@example.com`;
    rogue.claims = { sub: `rogue-long-${subject}`, email: address, email_verified: true, name: 'N'.repeat(300), given_name: 'G'.repeat(300), nickname: 'K'.repeat(300) };
    const { context, page } = await toUpstream();
    await page.locator('#continue').click();
    await page.waitForURL((u) => u.href.startsWith(REDIRECT));
    await context.close();
    const user = (await t.app.ctx.storage.users.findByEmail('default', address.trim()))!;
    expect([user.email, user.name?.length, user.given_name?.length, user.nickname?.length]).toEqual([address.trim(), 200, 100, 100]);
    // Four browser sign-ins in one test: on a loaded 2-core CI machine they took over the default 30 s.
  }, 90_000);

  it('takes the address from the claim attribute_mapping.email names, never as verified (it cannot link an existing account)', async () => {
    const features = (mapping: Record<string, string> | undefined) => t.app.ctx.storage.tenantConfig.put('default', 'features', mapping ? { social_login: { providers: { rogue: { attribute_mapping: mapping } } } } : {});
    await features({ email: 'mail' });
    await (await t.app.pool.get('default')).reload();
    try {
      // A directory's `mail` claim naming an account here: email_verified speaks for `email` only, so no link is offered.
      const owner = await createUser(t, { email: `owner-mapped${subject}@example.com`, email_verified: true });
      rogue.claims = { sub: `rogue-mapped-${subject}`, mail: owner.email, email_verified: true };
      let flow = await toUpstream();
      const refused = flow.page.waitForResponse((r) => r.url().startsWith(`${t.issuer}/social/rogue/callback`));
      await flow.page.locator('#continue').click();
      expect((await refused).status()).toBe(403);
      expect(await flow.page.getByRole('alert').textContent()).toContain('does not confirm the address is yours');
      await flow.context.close();
      // A free address from that claim creates the account, unverified.
      const address = `mapped${subject}@example.com`;
      rogue.claims = { sub: `rogue-mapped-new-${subject}`, mail: address, email_verified: true };
      flow = await toUpstream();
      await flow.page.locator('#continue').click();
      await flow.page.waitForURL((u) => u.href.startsWith(REDIRECT));
      await flow.context.close();
      const user = await t.app.ctx.storage.users.findByEmail('default', address);
      expect([user?.email, user?.email_verified, user?.auth_provider]).toEqual([address, false, 'rogue']);
    } finally {
      await features(undefined);
      await (await t.app.pool.get('default')).reload();
    }
  });

  it('refuses a tampered state before any token request', async () => {
    const before = await snapshot();
    const tokens = rogue.tokenRequests;
    const { context, page, callback } = await toUpstream();
    const url = new URL(callback);
    const state = url.searchParams.get('state')!;
    const i = Math.floor(state.length / 2);
    url.searchParams.set('state', state.slice(0, i) + (state[i] === 'A' ? 'B' : 'A') + state.slice(i + 1));
    const res = await page.goto(url.href);
    await expectErrorPage(page, 400, res?.status(), 'Sign-in could not be completed', 'not valid here');
    await context.close();
    expect(rogue.tokenRequests).toBe(tokens);
    expect(await snapshot()).toEqual(before);
  });

  it('refuses a replayed state, even with the browser-binding cookie put back', async () => {
    const { context, page, callback } = await toUpstream();
    const binding = (await context.cookies()).find((c) => c.name === 'svc_social')!;
    expect(binding.httpOnly).toBe(true);
    expect(binding.sameSite).toBe('Lax');
    await page.locator('#continue').click();
    await page.waitForURL((u) => u.href.startsWith(REDIRECT));
    const before = await snapshot();
    const tokens = rogue.tokenRequests;
    // The same answer again: first without the cookie (cleared at the callback), then with it.
    let res = await page.goto(callback);
    await expectErrorPage(page, 400, res?.status(), 'Sign-in could not be completed', 'another browser');
    await context.addCookies([binding]);
    res = await page.goto(callback);
    await expectErrorPage(page, 400, res?.status(), 'Sign-in already used', 'already used');
    await context.close();
    expect(rogue.tokenRequests).toBe(tokens);
    expect(await snapshot()).toEqual(before);
  });

  it('refuses a callback opened in another browser (login CSRF)', async () => {
    const before = await snapshot();
    const { context, callback } = await toUpstream();
    const victim = await browser.newContext();
    const page = await victim.newPage();
    const res = await page.goto(callback);
    await expectErrorPage(page, 400, res?.status(), 'Sign-in could not be completed', 'another browser');
    await victim.close();
    await context.close();
    expect(await snapshot()).toEqual(before);
  });

  for (const [mode, what] of [
    ['wrong_nonce', 'an ID token with another nonce'],
    ['wrong_issuer', 'an ID token from another issuer'],
    ['wrong_audience', 'an ID token for another audience'],
    ['future_iat', 'an ID token issued in the future'],
    ['iss_missing', 'a callback without the iss its discovery says it always sends (RFC 9207 2.4)'],
  ] as const) {
    it(`refuses ${what}: error page, nothing created`, async () => {
      const before = await snapshot();
      rogue.mode = mode;
      const { context, page } = await toUpstream();
      const response = page.waitForResponse((r) => r.url().startsWith(`${t.issuer}/social/rogue/callback`));
      await page.locator('#continue').click();
      await expectErrorPage(page, 502, (await response).status(), 'Rogue ID sign-in failed', 'could not be verified');
      expect(await page.getByRole('link', { name: 'Back to sign-in' }).count()).toBe(1);
      await context.close();
      expect(await snapshot()).toEqual(before);
    });
  }

  it('ends an upstream error answer on a clear page with the way back to sign-in, nothing created', async () => {
    const before = await snapshot();
    rogue.mode = 'error';
    const { context, page } = await toUpstream();
    const response = page.waitForResponse((r) => r.url().startsWith(`${t.issuer}/social/rogue/callback`));
    await page.locator('#continue').click();
    await expectErrorPage(page, 401, (await response).status(), 'Sign-in cancelled', 'was cancelled');
    await page.getByRole('link', { name: 'Back to sign-in' }).click();
    expect(await page.getByRole('heading', { name: 'Sign in' }).count()).toBe(1);
    await context.close();
    expect(await snapshot()).toEqual(before);
  });

  it('ends an upstream that does not answer (timeout) on a clear page, nothing created', async () => {
    const before = await snapshot();
    rogue.mode = 'hang';
    const { context, page } = await toUpstream();
    const response = page.waitForResponse((r) => r.url().startsWith(`${t.issuer}/social/rogue/callback`));
    await page.locator('#continue').click();
    await expectErrorPage(page, 502, (await response).status(), 'Rogue ID did not answer', 'took too long');
    await context.close();
    expect(await snapshot()).toEqual(before);
  });

  it('answers an unknown provider with a 404 page, and only GET starts a flow', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const res = await page.goto(`${t.issuer}/social/nosuch/callback?code=x&state=y`);
    expect(res?.status()).toBe(404);
    expect(await page.getByRole('heading', { name: 'Sign-in method not available' }).count()).toBe(1);
    await context.close();
    const post = await fetch(`${t.url}/oidc/v1/interaction/abc/social/rogue`, { method: 'POST' });
    expect(post.status).toBe(405);
  });

  it('renders the provider name escaped (no markup from configuration)', async () => {
    const { socialButtons } = await import('../../src/ui/social-pages.js');
    const { buildPageUi } = await import('../../src/ui/page-ui.js');
    const { ui } = buildPageUi({ stylesheet: '/s.css' }, { path: '/', headers: {} });
    const out = socialButtons([{ name: '<img src=x onerror=alert(1)>', href: '/x?a=1&b="2"' }], ui).toString();
    expect(out).not.toContain('<img');
    expect(out).toContain('Continue with &lt;img src=x onerror=alert(1)&gt;');
    expect(out).toContain('href="/x?a=1&amp;b=&quot;2&quot;"');
  });
});
