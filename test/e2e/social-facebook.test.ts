/**
 * The Facebook preset (OAuth 2.0 + the Graph API's /me) against a local stand-in shaped like
 * Facebook's documented endpoints (test/helpers/facebook-standin.ts), pointed at by the preset's
 * `endpoints` override; Chromium signs in, openid-client is the relying party.
 * E-mail trust: the Graph API returns `email` only for an address the person has confirmed, so a
 * returned e-mail counts as verified (it may link an existing user, after that user's password);
 * a person without one (phone-only account, or the permission declined) cannot create an account.
 */
import * as oidc from 'openid-client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type TestApp } from '../helpers/app.js';
import { graphError, startFacebookStandin, type FacebookStandin } from '../helpers/facebook-standin.js';
import { startSocialApp, type SocialApp } from '../helpers/social-app.js';
import { createUser } from '../helpers/users.js';

describe('social login: Facebook preset (OAuth 2.0 + Graph API /me)', () => {
  let t: TestApp;
  let fb: FacebookStandin;
  let browser: Browser;
  let REDIRECT: string;
  let config: oidc.Configuration;

  let app: SocialApp;
  beforeAll(async () => {
    fb = await startFacebookStandin();
    app = await startSocialApp({ facebook: { enabled: true, client_id: fb.clientId, client_secret: fb.clientSecret, endpoints: fb.endpoints } });
    ({ t, redirect: REDIRECT, browser, config } = app);
  });
  afterAll(async () => {
    await app?.close();
    await fb?.close();
  });

  const snapshot = () => app.snapshot();

  /** From the relying party through "Continue with Facebook" to Facebook's dialog (checked as Facebook documents it). */
  async function toDialog(): Promise<{ context: BrowserContext; page: Page; sub: () => Promise<string> }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid profile email', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state: 'st', nonce: 'nn' });
    await page.goto(url.href);
    await page.getByRole('link', { name: 'Continue with Facebook' }).click();
    await page.waitForURL((u) => u.href.startsWith(fb.endpoints.authorization));
    const dialog = new URL(page.url()).searchParams;
    expect(dialog.get('client_id')).toBe(fb.clientId);
    expect(dialog.get('redirect_uri')).toBe(`${t.issuer}/social/facebook/callback`);
    expect(dialog.get('response_type')).toBe('code');
    expect(dialog.get('scope')).toBe('email,public_profile'); // Facebook's comma-separated permissions
    expect(dialog.get('state')).toBeTruthy();
    expect(dialog.get('code_challenge_method')).toBe('S256');
    expect(dialog.has('nonce')).toBe(false);
    return {
      context,
      page,
      sub: async () => {
        await page.waitForURL((u) => u.href.startsWith(REDIRECT));
        const tokens = await oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: 'st', expectedNonce: 'nn' });
        return tokens.claims()!.sub;
      },
    };
  }

  async function expectRefusal(page: Page, heading: string, text: string) {
    await expect.poll(() => page.getByRole('heading', { name: heading }).count()).toBe(1);
    expect(await page.getByRole('alert').textContent()).toContain(text);
    expect(page.url().startsWith(REDIRECT)).toBe(false);
    expect(page.url().startsWith(t.issuer)).toBe(true);
  }

  it('first sign-in creates the user from /me (confirmed e-mail = verified), calls the Graph API with appsecret_proof; the second signs the same user in', async () => {
    fb.person = { id: '10158000000000001', name: 'Fiona Book', first_name: 'Fiona', last_name: 'Book', email: 'fiona@facebook.example' };
    fb.requireProof = true;
    const before = await snapshot();
    let flow = await toDialog();
    await flow.page.locator('#continue').click();
    const sub = await flow.sub();
    await flow.context.close();
    const res = await api(t, 'GET', `/api/v1/users/${sub}`, { token: await t.token('svc:users:read') });
    expect(res.json.data).toMatchObject({ email: 'fiona@facebook.example', email_verified: true, auth_provider: 'facebook', name: 'Fiona Book', given_name: 'Fiona', family_name: 'Book' });
    expect(await t.sql('SELECT provider, subject, email FROM social_identities WHERE user_id = ?', [sub])).toEqual([{ provider: 'facebook', subject: '10158000000000001', email: 'fiona@facebook.example' }]);
    expect(await snapshot()).toEqual({ users: before.users + 1, links: before.links + 1 });
    // The stand-in refuses Graph calls without the proof ("Require App Secret"), so the sign-in above proves it was sent.
    expect(fb.apiRequests.at(-1)!.query.get('appsecret_proof')).toMatch(/^[0-9a-f]{64}$/);

    flow = await toDialog();
    await flow.page.locator('#continue').click();
    expect(await flow.sub()).toBe(sub);
    await flow.context.close();
    expect(await snapshot()).toEqual({ users: before.users + 1, links: before.links + 1 });
    const activity = await api(t, 'GET', `/api/v1/users/${sub}/activities?limit=50`, { token: await t.token('svc:users:read') });
    expect(activity.json.data.map((e: { type: string }) => e.type)).toEqual(expect.arrayContaining(['signup', 'social_link', 'social_login']));
  }, 60_000);

  it('refuses a person without an e-mail (none confirmed, or the permission declined): a clear page, nothing created', async () => {
    fb.person = { id: '10158000000000002', name: 'Phone Only' };
    const before = await snapshot();
    const flow = await toDialog();
    await flow.page.locator('#continue').click();
    await expectRefusal(flow.page, 'Sign-in not possible', 'Facebook did not share an e-mail address');
    await flow.context.close();
    expect(await snapshot()).toEqual(before);
    expect(await t.sql('SELECT * FROM social_identities WHERE subject = ?', ['10158000000000002'])).toEqual([]);
  });

  it('treats the returned (confirmed) e-mail of an existing user as verified: asks that user\'s password before linking, never links silently', async () => {
    const owner = await createUser(t, { email: 'owner@company.example', email_verified: true });
    fb.person = { id: '10158000000000003', name: 'Owner', email: 'owner@company.example' };
    const before = await snapshot();
    const flow = await toDialog();
    await flow.page.locator('#continue').click();
    await expect.poll(() => flow.page.getByRole('heading', { name: 'Link your Facebook account' }).count()).toBe(1);
    expect(await t.sql('SELECT * FROM social_identities WHERE user_id = ?', [owner.id])).toEqual([]);
    await flow.page.getByLabel('Password').fill(owner.password);
    await flow.page.getByRole('button', { name: 'Link and sign in' }).click();
    expect(await flow.sub()).toBe(owner.id);
    await flow.context.close();
    expect(await t.sql('SELECT provider, subject FROM social_identities WHERE user_id = ?', [owner.id])).toEqual([{ provider: 'facebook', subject: '10158000000000003' }]);
    expect(await snapshot()).toEqual({ users: before.users, links: before.links + 1 });
  }, 60_000);

  it('ends a declined dialog (error=access_denied, error_reason=user_denied) on a clear page with the way back, nothing created', async () => {
    fb.person = { id: '10158000000000004', name: 'Declines', email: 'declines@facebook.example' };
    const before = await snapshot();
    const tokens = fb.tokenRequests;
    const flow = await toDialog();
    await flow.page.locator('#cancel').click();
    await expectRefusal(flow.page, 'Sign-in cancelled', 'The sign-in with Facebook was cancelled');
    expect(await flow.page.getByRole('link', { name: 'Back to sign-in' }).count()).toBe(1);
    await flow.context.close();
    expect(fb.tokenRequests).toBe(tokens);
    expect(await snapshot()).toEqual(before);
  });

  it('ends a Graph API error at the token endpoint (HTTP 400 OAuthException) on a clear page, nothing created', async () => {
    fb.person = { id: '10158000000000005', name: 'Unlucky', email: 'unlucky@facebook.example' };
    const before = await snapshot();
    const flow = await toDialog();
    fb.failNextToken = 'code';
    await flow.page.locator('#continue').click();
    await expectRefusal(flow.page, 'Facebook sign-in failed', 'Your identity from Facebook could not be verified');
    await flow.context.close();
    expect(await snapshot()).toEqual(before);
  });

  it('ends a Graph API error on /me (the token revoked meanwhile: HTTP 400, OAuthException 190) on a clear page, nothing created', async () => {
    fb.person = { id: '10158000000000006', name: 'Revoked', email: 'revoked@facebook.example' };
    const before = await snapshot();
    const flow = await toDialog();
    fb.failNextApi = graphError(400, 'Error validating access token: The user has not authorized application 1234567890123456.', 'OAuthException', 190, 458);
    await flow.page.locator('#continue').click();
    await expectRefusal(flow.page, 'Facebook sign-in failed', 'Your identity from Facebook could not be verified');
    await flow.context.close();
    expect(fb.failNextApi).toBeUndefined(); // the product did reach /me
    expect(await snapshot()).toEqual(before);
  });
});
