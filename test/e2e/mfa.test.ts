/**
 * Two-step verification (TOTP) end to end: enrolment on the account page /account (the former
 * {oidc}/account/mfa redirects there) in headless Chromium
 * (after a first-party sign-in, so an oidc-provider session exists), then the code step at sign-in
 * with openid-client as the relying party (code + PKCE), recovery codes, replay, the brute-force
 * guard, turning it off, and the Management API's MFA reset. Codes are computed here from the
 * secret the enrolment page shows, like an authenticator app would.
 *
 * The tests run in order and share the enrolled user (a TOTP step once used is refused, so each
 * successful code below is for a later step than the one before).
 */
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enableTotp } from '../../src/users/mfa.js';
import { base32Decode, generateTotpSecret, hotp, totpAt, totpStep } from '../../src/users/totp.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { createClient, createUser, type TestUser } from '../helpers/users.js';

const TENANT = 'default';

describe('two-step verification (TOTP)', () => {
  let t: TestApp;
  let browser: Browser;
  let rp: RpServer;
  let REDIRECT: string;
  let config: oidc.Configuration;
  let user: TestUser;
  let secret: string;
  let recoveryCodes: string[];
  /** The code accepted at the first two-step sign-in, for the replay test. */
  let acceptedCode: string;

  beforeAll(async () => {
    rp = await startRpServer();
    REDIRECT = `${rp.origin}/cb`;
    t = await startTestApp();
    browser = await launchBrowser();
    user = await createUser(t, { email_verified: true });
    const client = await createClient(t, {
      client_name: 'First-party Web App',
      application_type: 'web',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid profile email',
      first_party: true,
    });
    config = await oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rp?.close();
  });

  async function newPage(): Promise<Page> {
    return (await browser.newContext()).newPage();
  }

  /** Starts code + PKCE and signs in with the password; returns what the token request needs. */
  async function startSignIn(page: Page, who: TestUser) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid profile email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    await page.goto(url.href);
    await page.getByLabel('E-mail').fill(who.email);
    await page.getByLabel('Password').fill(who.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    return { verifier, state, nonce };
  }

  async function tokensFrom(page: Page, flow: { verifier: string; state: string; nonce: string }) {
    await page.waitForURL(`${REDIRECT}**`);
    return oidc.authorizationCodeGrant(config, new URL(page.url()), { pkceCodeVerifier: flow.verifier, expectedState: flow.state, expectedNonce: flow.nonce });
  }

  /** A well-formed code that is none of the codes valid around now. */
  function wrongCode(of = secret, start = 123456): string {
    const key = base32Decode(of);
    const s = totpStep(Date.now());
    const valid = new Set([-2, -1, 0, 1, 2].map((d) => hotp(key, s + d)));
    let n = start;
    while (valid.has(String(n))) n++;
    return String(n);
  }

  const auditCount = async (type: string, userId = user.id) =>
    (await t.app.ctx.storage.audit.list(TENANT, { type, user_id: userId }, { limit: 50, include_count: true })).total_count!;

  /** `amr` of the user's oidc-provider sessions (ID tokens do not carry amr: it is not a configured claim). */
  const sessionAmrs = async (userId = user.id) =>
    (await t.app.ctx.storage.oidc.listSessions(TENANT, { accountId: userId })).map((row) => JSON.stringify(row.payload.amr));

  const mfaReset = async (userId: string) => api(t, 'POST', `/api/v1/users/${userId}/mfa/reset`, { token: await t.token('svc:users:write') });
  const getUser = async (userId: string) => api(t, 'GET', `/api/v1/users/${userId}`, { token: await t.token('svc:users:read') });

  const accountUrl = () => `${new URL(t.issuer).origin}/account`;

  it('the former two-step page sends the browser to the account page, which asks to sign in first', async () => {
    for (const path of ['/oidc/v1/account/mfa', '/oidc/v1/account/mfa/disable']) {
      const res = await fetch(`${t.url}${path}`, { redirect: 'manual' });
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe('/account');
    }
    // A POST to the former action changes nothing: a 303 to the page (then a GET).
    const posted = await fetch(`${t.url}/oidc/v1/account/mfa/disable`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'password=x' });
    expect(posted.status).toBe(303);
    const page = await fetch(`${t.url}/account`, { redirect: 'manual' });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toContain('/oidc/v1/auth?');
  });

  it('enrols through the browser after a first-party sign-in and shows recovery codes once', async () => {
    const page = await newPage();
    const flow = await startSignIn(page, user);
    await tokensFrom(page, flow); // first-party: no consent, no second step yet
    expect(await sessionAmrs()).toEqual([JSON.stringify(['pwd'])]);

    await page.goto(`${t.issuer}/account/mfa`);
    expect(page.url()).toBe(accountUrl());
    await page.getByRole('button', { name: 'Set up two-step verification' }).click();
    await expect(page.getByRole('heading', { name: 'Set up two-step verification' }).count()).resolves.toBe(1);
    expect(await page.locator('input[name=code][autocomplete=one-time-code][inputmode=numeric]').count()).toBe(1);
    expect(await page.locator('button.primary').count()).toBe(1);
    secret = (await page.locator('#totp-secret').textContent())!.replace(/\s/g, '');
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const uri = new URL((await page.locator('#totp-uri').textContent())!);
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.searchParams.get('secret')).toBe(secret);
    expect(uri.searchParams.get('issuer')).toBe(new URL(t.issuer).host);
    expect(decodeURIComponent(uri.pathname)).toBe(`/${new URL(t.issuer).host}:${user.email}`);

    // A form without the session-bound CSRF token is refused, even with the session cookie.
    const forged = await page.request.post(accountUrl(), { form: { action: 'mfa.confirm', code: totpAt(secret, Date.now()) } });
    expect(forged.status()).toBe(403);

    // A wrong code keeps the same secret on the page.
    await page.getByLabel('Authentication code').fill(wrongCode());
    await page.getByRole('button', { name: 'Turn on' }).click();
    expect(await page.locator('[role=alert]').textContent()).toContain('not valid');
    expect((await page.locator('#totp-secret').textContent())!.replace(/\s/g, '')).toBe(secret);

    await page.getByLabel('Authentication code').fill(totpAt(secret, Date.now()));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await expect(page.getByRole('heading', { name: 'Two-step verification is on' }).count()).resolves.toBe(1);
    recoveryCodes = await page.locator('#recovery-codes code').allTextContents();
    expect(recoveryCodes).toHaveLength(10);
    expect(await auditCount('mfa_enabled')).toBe(1);

    // The account page now offers turning it off, and shows no secret.
    await page.goto(accountUrl());
    expect(await page.getByRole('button', { name: 'Turn off two-step verification' }).count()).toBe(1);
    expect(await page.content()).not.toContain(secret);
    await page.context().close();
  });

  it('the user object shows mfa enabled and never the secret or recovery codes', async () => {
    const got = await getUser(user.id);
    expect(got.status).toBe(200);
    expect(got.json.data.mfa).toEqual({ enabled: true, methods: ['totp'] });
    for (const hidden of [secret, ...recoveryCodes, 'sealed', 'mfa_secret', 'recovery']) expect(got.text).not.toContain(hidden);
    const list = await api(t, 'GET', `/api/v1/users?q=${encodeURIComponent(user.email)}`, { token: await t.token('svc:users:read') });
    expect(list.json.data[0].mfa).toEqual({ enabled: true, methods: ['totp'] });
    expect(list.text).not.toContain(secret);
  });

  it('the next sign-in asks for the code: a wrong one is refused and audited, the right one issues tokens', async () => {
    const page = await newPage();
    const flow = await startSignIn(page, user);
    await expect(page.getByRole('heading', { name: 'Two-step verification' }).count()).resolves.toBe(1);
    expect(page.url()).not.toContain(REDIRECT);
    expect(await page.locator('input[name=code][autocomplete=one-time-code][inputmode=numeric]').count()).toBe(1);
    expect(await page.locator('button.primary').count()).toBe(1);
    expect(await page.getByRole('link', { name: 'Use a recovery code instead' }).count()).toBe(1);
    // A reload (the page is the GET after the password POST) stays on the code step.
    await page.reload();
    expect(await page.getByLabel('Authentication code').count()).toBe(1);

    const failedBefore = await auditCount('mfa_failed');
    await page.getByLabel('Authentication code').fill(wrongCode());
    await page.getByRole('button', { name: 'Verify' }).click();
    expect(await page.locator('[role=alert]').textContent()).toContain('not valid');
    expect(await auditCount('mfa_failed')).toBe(failedBefore + 1);

    // The enrolment used the current step, so the app's next code (within the ±1 window) is fresh.
    acceptedCode = hotp(base32Decode(secret), totpStep(Date.now()) + 1);
    await page.getByLabel('Authentication code').fill(acceptedCode);
    await page.getByRole('button', { name: 'Verify' }).click();
    const tokens = await tokensFrom(page, flow);
    const claims = tokens.claims()!;
    expect(claims.sub).toBe(user.id);
    expect(claims.nonce).toBe(flow.nonce);
    expect(await sessionAmrs()).toContain(JSON.stringify(['pwd', 'otp', 'mfa']));
    const info = await oidc.fetchUserInfo(config, tokens.access_token, user.id);
    expect(info.email).toBe(user.email);

    expect(await auditCount('mfa_verified')).toBe(1);
    const logins = await t.app.ctx.storage.audit.list(TENANT, { type: 'login', user_id: user.id }, { limit: 1, include_count: false });
    expect(logins.items[0]!.details.method).toBe('password+totp');
    await page.context().close();
  });

  it('the same TOTP code is refused a second time', async () => {
    const page = await newPage();
    await startSignIn(page, user);
    await page.getByLabel('Authentication code').fill(acceptedCode);
    await page.getByRole('button', { name: 'Verify' }).click();
    expect(await page.locator('[role=alert]').textContent()).toContain('already used');
    expect(page.url()).not.toContain(REDIRECT);
    const failed = await t.app.ctx.storage.audit.list(TENANT, { type: 'mfa_failed', user_id: user.id }, { limit: 1, include_count: false });
    expect(failed.items[0]!.details).toMatchObject({ method: 'totp', reason: 'code_already_used' });
    await page.context().close();
  });

  it('a recovery code works once and not twice', async () => {
    const code = recoveryCodes[0]!;
    const page = await newPage();
    const flow = await startSignIn(page, user);
    await page.getByRole('link', { name: 'Use a recovery code instead' }).click();
    await page.getByLabel('Recovery code').fill(code);
    await page.getByRole('button', { name: 'Verify' }).click();
    const tokens = await tokensFrom(page, flow);
    expect(tokens.claims()!.sub).toBe(user.id);
    const verified = await t.app.ctx.storage.audit.list(TENANT, { type: 'mfa_verified', user_id: user.id }, { limit: 1, include_count: false });
    expect(verified.items[0]!.details).toMatchObject({ method: 'recovery_code', recovery_codes_left: 9 });
    await page.context().close();

    const again = await newPage();
    await startSignIn(again, user);
    await again.getByRole('link', { name: 'Use a recovery code instead' }).click();
    await again.getByLabel('Recovery code').fill(code);
    await again.getByRole('button', { name: 'Verify' }).click();
    expect(await again.locator('[role=alert]').textContent()).toContain('not valid');
    expect(again.url()).not.toContain(REDIRECT);
    await again.context().close();
  });

  it('wrong codes count for the brute-force guard: five lock the account', async () => {
    const victim = await createUser(t);
    const victimSecret = generateTotpSecret();
    await enableTotp(t.app.ctx, TENANT, victim.id, victimSecret);
    const page = await newPage();
    await startSignIn(page, victim);
    for (let i = 0; i < 4; i++) {
      await page.getByLabel('Authentication code').fill(wrongCode(victimSecret, 100000 + i * 1000));
      await page.getByRole('button', { name: 'Verify' }).click();
      expect(await page.locator('[role=alert]').textContent()).toContain('not valid');
    }
    await page.getByLabel('Authentication code').fill(wrongCode(victimSecret, 200000));
    await page.getByRole('button', { name: 'Verify' }).click();
    expect(await page.locator('[role=alert]').textContent()).toContain('cannot sign in');
    expect(await auditCount('mfa_failed', victim.id)).toBe(5);
    expect(await auditCount('account_locked', victim.id)).toBe(1);
    expect((await getUser(victim.id)).json.data.locked).toBe(true);
    await page.context().close();
  });

  it('a signed-in user turns it off with the password', async () => {
    const other = await createUser(t);
    const page = await newPage();
    await tokensFrom(page, await startSignIn(page, other)); // session first, then MFA turned on
    await enableTotp(t.app.ctx, TENANT, other.id, generateTotpSecret());
    await page.goto(accountUrl());
    await page.getByLabel('Password (to confirm)').fill('not-the-password');
    await page.getByRole('button', { name: 'Turn off two-step verification' }).click();
    expect(await page.locator('[role=alert]').textContent()).toContain('The current password is wrong');
    expect((await getUser(other.id)).json.data.mfa.enabled).toBe(true);

    await page.getByLabel('Password (to confirm)').fill(other.password);
    await page.getByRole('button', { name: 'Turn off two-step verification' }).click();
    expect(await page.locator('p.notice[role=status]').textContent()).toContain('Two-step verification is off');
    expect((await getUser(other.id)).json.data.mfa).toEqual({ enabled: false, methods: [] });
    expect(await auditCount('mfa_disabled', other.id)).toBe(1);
    await page.context().close();
  });

  it('the Management API MFA reset removes the step and the stored material', async () => {
    const res = await mfaReset(user.id);
    expect(res.status).toBe(200);
    const stored = (await t.app.ctx.storage.users.get(TENANT, user.id))!;
    expect(stored).toMatchObject({ mfa_enabled: false, mfa_methods: [], mfa_secret_sealed: null, mfa_recovery_sealed: null });
    const got = await getUser(user.id);
    expect(got.json.data.mfa).toEqual({ enabled: false, methods: [] });
    expect(got.text).not.toContain(secret);

    const pwdOnly = (await sessionAmrs()).filter((a) => a === JSON.stringify(['pwd'])).length;
    const page = await newPage();
    const flow = await startSignIn(page, user);
    const tokens = await tokensFrom(page, flow); // straight back to the client: no code step
    expect(tokens.claims()!.sub).toBe(user.id);
    expect((await sessionAmrs()).filter((a) => a === JSON.stringify(['pwd'])).length).toBe(pwdOnly + 1);
    await page.context().close();
  });
});
