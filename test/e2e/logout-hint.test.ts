/**
 * An end-session request whose id_token_hint is not the signed-in session's (RP-Initiated Logout
 * 1.0 section 2, "treat the logout request as suspect"): with Alice signed in, Bob's ID token for
 * RP Two must not make the page ask Alice about RP Two, send her to RP Two with its state, or
 * write RP Two into her logout entry; the request goes on as one without a client. Her own hint
 * (a pairwise subject) and her current session's hint still name the client and lead back to it;
 * a hint from an earlier session of hers (another sid) is treated as suspect. Headless Chromium
 * for the pages, openid-client for the relying parties.
 */
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { HttpSession } from '../helpers/code-flow.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { createClient, createUser, type TestUser } from '../helpers/users.js';

interface Rp {
  clientId: string;
  clientSecret: string;
  config: oidc.Configuration;
  redirect: string;
  bye: string;
}

describe('logout with an id_token_hint for someone else', () => {
  let t: TestApp;
  let browser: Browser;
  let rpOneServer: RpServer;
  let rpTwoServer: RpServer;
  let alice: TestUser;
  let bob: TestUser;
  let rpOne: Rp;
  let rpTwo: Rp;

  async function newRp(server: RpServer, name: string, extra: Record<string, unknown>): Promise<Rp> {
    const redirect = `${server.origin}/cb`;
    const bye = `${server.origin}/bye`;
    const client = await createClient(t, { client_name: name, redirect_uris: [redirect], post_logout_redirect_uris: [bye], first_party: true, scope: 'openid', ...extra });
    const config = await oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
    return { clientId: client.client_id, clientSecret: client.client_secret, config, redirect, bye };
  }

  beforeAll(async () => {
    rpOneServer = await startRpServer();
    rpTwoServer = await startRpServer();
    t = await startTestApp({ SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000' });
    browser = await launchBrowser();
    alice = await createUser(t);
    bob = await createUser(t);
    rpOne = await newRp(rpOneServer, 'RP One', {});
    // Pairwise (the hint's sub is not the account id) and with a back-channel URI (its ID tokens carry sid).
    rpTwo = await newRp(rpTwoServer, 'RP Two', { subject_type: 'pairwise', backchannel_logout_uri: `${rpTwoServer.origin}/backchannel` });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rpOneServer?.close();
    await rpTwoServer?.close();
  });

  /** The code flow in `page` (signing `who` in when the page asks): the RP's ID token. */
  async function rpSignIn(page: Page, rp: Rp, who: TestUser): Promise<string> {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    await page.goto(oidc.buildAuthorizationUrl(rp.config, { redirect_uri: rp.redirect, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state }).href);
    if (!page.url().startsWith(rp.redirect)) {
      await page.getByLabel('E-mail').fill(who.email);
      await page.getByLabel('Password').fill(who.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${rp.redirect}**`);
    }
    return (await oidc.authorizationCodeGrant(rp.config, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state })).id_token!;
  }

  /** Opens the end-session request: the question's text and the page's CSP form-action. */
  async function askLogout(page: Page, rp: Rp, idToken: string, state: string): Promise<{ question: string; formAction: string }> {
    const res = await page.goto(oidc.buildEndSessionUrl(rp.config, { id_token_hint: idToken, post_logout_redirect_uri: rp.bye, state }).href);
    const csp = res!.headers()['content-security-policy'] ?? '';
    return { question: await page.locator('main p').first().innerText(), formAction: /form-action ([^;]*)/.exec(csp)?.[1] ?? '' };
  }

  const logoutsOf = async (user: TestUser) => (await t.app.ctx.storage.audit.list('default', { type: 'logout', user_id: user.id }, { limit: 10 })).items;

  it('Bob\'s hint for RP Two with Alice signed in: no client named, no redirect to RP Two, no RP Two in the audit entry', async () => {
    // Bob signs in to RP Two elsewhere; RP Two (or whoever holds it) keeps his ID token.
    const bobsToken = (await new HttpSession(t.issuer, bob).tokens({ client_id: rpTwo.clientId, client_secret: rpTwo.clientSecret, redirect_uri: rpTwo.redirect }, { scope: 'openid' })).id_token!;
    const context = await browser.newContext();
    const page = await context.newPage();
    await rpSignIn(page, rpOne, alice);

    const asked = await askLogout(page, rpTwo, bobsToken, 'bob-state');
    expect(asked.question).toBe('Do you want to sign out?');
    expect(asked.formAction).not.toContain(rpTwoServer.origin);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${t.issuer}/session/end/success**`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Signed out');
    expect(page.url()).not.toContain('bob-state');

    // Alice's session did end (she asked for it), and her logout entry names no client.
    const entries = await logoutsOf(alice);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ client_id: null, username: alice.email });
    expect(await logoutsOf(bob)).toHaveLength(0);
    await page.goto(`${new URL(t.issuer).origin}/account`);
    expect(new URL(page.url()).pathname).not.toBe('/account');
    await context.close();
  });

  it('her own hint (pairwise subject, current sid) names RP Two and leads back to it; a hint of her earlier session does not', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const earlier = await rpSignIn(page, rpTwo, alice);
    // What the comparison has to get right: a pairwise sub (not her account id) and a sid.
    const claims = JSON.parse(Buffer.from(earlier.split('.')[1]!, 'base64url').toString()) as { sub: string; sid?: string };
    expect(claims.sub).not.toBe(alice.id);
    expect(claims.sid).toBeTruthy();
    // Her earlier session ends (through RP Two's own logout), then she signs in again.
    const first = await askLogout(page, rpTwo, earlier, 'first');
    expect(first.question).toBe('Do you want to sign out of RP Two?');
    expect(first.formAction).toContain(rpTwoServer.origin);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${rpTwo.bye}**`);
    expect(new URL(page.url()).searchParams.get('state')).toBe('first');
    expect((await logoutsOf(alice)).some((e) => e.client_id === rpTwo.clientId)).toBe(true);

    const current = await rpSignIn(page, rpTwo, alice);
    // Same user, same pairwise sub, but the sid of a session that is over: suspect.
    const stale = await askLogout(page, rpTwo, earlier, 'stale');
    expect(stale.question).toBe('Do you want to sign out?');
    expect(stale.formAction).not.toContain(rpTwoServer.origin);
    // "Stay signed in" then leaves her session (and RP Two's place in it) alone.
    await page.getByRole('button', { name: 'Stay signed in' }).click();
    await page.waitForURL(`${t.issuer}/session/end/success**`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Still signed in');

    const again = await askLogout(page, rpTwo, current, 'current');
    expect(again.question).toBe('Do you want to sign out of RP Two?');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${rpTwo.bye}**`);
    expect(new URL(page.url()).searchParams.get('state')).toBe('current');
    await context.close();
  });
});
