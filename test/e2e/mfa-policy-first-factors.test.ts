/**
 * The MFA policy after every first factor (sixth audit of 2026-12-01), over plain HTTP with
 * openid-client as the relying party: with `security.mfa.required`, a sign-up that signs in at once
 * and a social sign-in of a user without a second factor go to enrolment like a password sign-in
 * (they used to hand the relying party a code with `amr: ["pwd"]` / `["fed"]`); the ID token after
 * a social sign-in's second step says `fed`, not `pwd`; and a session signed in with the password
 * alone before the policy was turned on no longer yields codes (prompt=none or not) without the
 * second factor.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { totpAt } from '../../src/users/totp.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { HttpSession } from '../helpers/code-flow.js';
import { startRogueOidc, type RogueOidc } from '../helpers/rogue-oidc.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { createClient, createUser } from '../helpers/users.js';

const PASSWORD = 'Policy-First-Factor-9';

describe('MFA policy after every first factor', () => {
  let t: TestApp;
  let rp: RpServer;
  let rogue: RogueOidc;
  let dir: string;
  let redirect: string;
  let config: oidc.Configuration;

  beforeAll(async () => {
    rp = await startRpServer();
    redirect = `${rp.origin}/cb`;
    rogue = await startRogueOidc();
    dir = mkdtempSync(join(tmpdir(), 'svc-mfa-policy-'));
    const file = join(dir, 'config.json');
    const providers = { rogue: { type: 'oidc', enabled: true, issuer: rogue.issuer, client_id: rogue.clientId, client_secret: rogue.clientSecret, display_name: 'Rogue ID' } };
    writeFileSync(file, JSON.stringify({ features: { social_login: { providers } } }));
    t = await startTestApp({ SVC_CONFIG_FILE: file, SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000' });
    const client = await createClient(t, { client_name: 'Web App', application_type: 'web', redirect_uris: [redirect], grant_types: ['authorization_code'], scope: 'openid profile email', first_party: true });
    config = await oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
  });
  afterAll(async () => {
    await t?.close();
    await rp?.close();
    await rogue?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The tenant's security section: sign-up on, MFA required or not. */
  async function policy(required: boolean): Promise<void> {
    await t.app.ctx.storage.tenantConfig.put('default', 'security', { signup: { enabled: true }, mfa: { required } });
    await (await t.app.pool.get('default')).reload();
  }
  beforeEach(() => policy(true));

  /** An authorization request of the relying party; `finish` redeems the code the browser ended with. */
  async function authorization(extra: Record<string, string> = {}) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirect,
      scope: 'openid email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      ...extra,
    }).href;
    const finish = async (at: string) => (await oidc.authorizationCodeGrant(config, new URL(at), { pkceCodeVerifier: verifier, expectedState: state })).claims()!;
    return { url, finish };
  }

  const heading = (html: string) => /<h1>([^<]*)<\/h1>/.exec(html)?.[1];
  const hidden = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1]?.replace(/&amp;/g, '&') ?? '';
  const formAction = (html: string, suffix: string) => new URL(new RegExp(`action="([^"]*/${suffix})"`).exec(html)![1]!.replace(/&amp;/g, '&'), t.issuer).href;
  /** Waits for the next TOTP step, so a code was not used yet for this user. */
  const nextStep = () => new Promise((resolve) => setTimeout(resolve, 30_000 - (Date.now() % 30_000) + 50));

  /** Enrols the authenticator app on the enrolment page the policy shows; the page the browser ends on. */
  async function enrolTotp(browser: HttpSession, page: { url: string; html: string }): Promise<{ url: string; html: string; secret: string }> {
    const secret = /secret=([A-Z2-7]+)/.exec(page.html)![1]!;
    const form = new URLSearchParams({ csrf_token: hidden(page.html, 'csrf_token'), enrollment: hidden(page.html, 'enrollment'), code: totpAt(secret, Date.now()) });
    const enrolled = await browser.visit(formAction(page.html, 'enrol'), form);
    // The recovery codes, then Continue to the application.
    const next = /href="([^"]*)"[^>]*>Continue</.exec(enrolled.html)?.[1];
    if (!next) return { ...enrolled, secret };
    return { ...(await browser.visit(new URL(next.replace(/&amp;/g, '&'), t.issuer).href)), secret };
  }

  it('a sign-up that signs in at once goes to enrolment under required MFA, then gets pwd+otp', async () => {
    const { url, finish } = await authorization();
    const browser = new HttpSession(t.issuer, { email: '', password: '' });
    const signIn = await browser.visit(url);
    const link = new URL(/href="([^"]*\/signup)"/.exec(signIn.html)![1]!, t.issuer).href;
    const form = await browser.visit(link);
    const email = `signup-${Date.now()}@example.com`;
    const answer = await browser.visit(link, new URLSearchParams({ csrf_token: hidden(form.html, 'csrf_token'), email, password: PASSWORD }));
    // Not the relying party with a password-only code: the enrolment the policy requires.
    expect(answer.url.startsWith(redirect)).toBe(false);
    expect(heading(answer.html)).toBe('Set up two-step verification');
    const done = await enrolTotp(browser, answer);
    expect(done.url.startsWith(redirect)).toBe(true);
    expect((await finish(done.url)).amr).toEqual(['pwd', 'otp', 'mfa']);
  });

  /** A social sign-in through the rogue upstream as `subject`; the page the browser ends on. */
  async function socialSignIn(browser: HttpSession, url: string, subject: string): Promise<{ url: string; html: string }> {
    rogue.claims = { sub: `policy-${subject}`, email: `policy-${subject}@example.com`, email_verified: true };
    const signIn = await browser.visit(url);
    const start = new URL(/href="([^"]*\/social\/rogue)"/.exec(signIn.html)![1]!.replace(/&amp;/g, '&'), t.issuer).href;
    const upstream = await browser.visit(start);
    const back = /id="continue" href="([^"]*)"/.exec(upstream.html)![1]!.replace(/&amp;/g, '&');
    return browser.visit(back);
  }

  it('a social sign-in without a second factor goes to enrolment under required MFA; its second steps say fed, not pwd', async () => {
    const subject = `s${Date.now()}`;
    const first = await authorization();
    const browser = new HttpSession(t.issuer, { email: '', password: '' });
    const landed = await socialSignIn(browser, first.url, subject);
    expect(landed.url.startsWith(redirect)).toBe(false);
    expect(heading(landed.html)).toBe('Set up two-step verification');
    const done = await enrolTotp(browser, landed);
    expect(done.url.startsWith(redirect)).toBe(true);
    expect((await first.finish(done.url)).amr).toEqual(['fed', 'otp', 'mfa']);

    // A later social sign-in (another browser) asks for the app's code; the ID token says fed + otp.
    await nextStep();
    const again = await authorization();
    const other = new HttpSession(t.issuer, { email: '', password: '' });
    const step = await socialSignIn(other, again.url, subject);
    expect(heading(step.html)).toBe('Two-step verification');
    const answered = await other.visit(formAction(step.html, 'mfa'), new URLSearchParams({ csrf_token: hidden(step.html, 'csrf_token'), code: totpAt(done.secret, Date.now()) }));
    expect(answered.url.startsWith(redirect)).toBe(true);
    expect((await again.finish(answered.url)).amr).toEqual(['fed', 'otp', 'mfa']);
  }, 60_000);

  it('a session signed in with the password alone before MFA was required yields no code without the second factor', async () => {
    await policy(false);
    const user = await createUser(t, { email_verified: true, password: PASSWORD });
    const browser = new HttpSession(t.issuer, { email: user.email, password: PASSWORD });
    const first = await authorization();
    const signedIn = await browser.visit(first.url);
    const form = signedIn.html;
    const done = await browser.visit(formAction(form, 'login'), new URLSearchParams({ csrf_token: hidden(form, 'csrf_token'), email: user.email, password: PASSWORD }));
    expect((await first.finish(done.url)).amr).toEqual(['pwd']);

    await policy(true);
    // Any request builds the tenant's provider again, so the silent request below meets the served
    // path (oidc/silent-auth.ts), not only oidc-provider's.
    expect((await fetch(`${t.issuer}/.well-known/openid-configuration`)).status).toBe(200);
    // Silent re-authentication: login_required, no code.
    const silent = await authorization({ prompt: 'none' });
    const answer = new URL((await browser.visit(silent.url)).url);
    expect(`${answer.origin}${answer.pathname}`).toBe(redirect);
    expect(answer.searchParams.get('error')).toBe('login_required');
    expect(answer.searchParams.has('code')).toBe(false);
    // An interactive request signs in again, and the password leads to enrolment.
    const again = await authorization();
    const page = await browser.visit(again.url);
    expect(page.url.startsWith(redirect)).toBe(false);
    expect(heading(page.html)).toBe('Sign in');
    const enrol = await browser.visit(formAction(page.html, 'login'), new URLSearchParams({ csrf_token: hidden(page.html, 'csrf_token'), email: user.email, password: PASSWORD }));
    expect(heading(enrol.html)).toBe('Set up two-step verification');
    // Enrolled, the sign-in ends with both factors, and silent re-authentication works again.
    const enrolled = await enrolTotp(browser, enrol);
    expect((await again.finish(enrolled.url)).amr).toEqual(['pwd', 'otp', 'mfa']);
    const renewed = await authorization({ prompt: 'none' });
    const code = await browser.visit(renewed.url);
    expect((await renewed.finish(code.url)).amr).toEqual(['pwd', 'otp', 'mfa']);
  });
});
