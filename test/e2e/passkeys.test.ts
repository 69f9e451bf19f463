/**
 * Passkeys (WebAuthn) end to end, with Chromium's virtual CTAP2 authenticator (resident keys,
 * user verification) over the DevTools protocol and openid-client as the relying party:
 * registration on the account page /account (excluded credentials, rename, remove, escaping), passwordless
 * sign-in from an authorization request, the second step after a password, a second
 * authenticator refused for the wrong user, a replayed assertion and a counter going backwards
 * refused and audited, `amr` in the ID token, the user object's `mfa.methods`, the MFA reset, and
 * the MFA policy (`security.mfa.required` forcing enrolment, `webauthn_enabled: false`).
 *
 * The tests run in order and share user A and its authenticator page.
 */
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totpAt } from '../../src/users/totp.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { createClient, createUser, type TestUser } from '../helpers/users.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { pageWithAuthenticator, seriousViolations, type AuthenticatorPage } from '../helpers/webauthn.js';

const TENANT = 'default';
const MFA_ALERT = 'Your two-step verification settings changed';
const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, any>;

interface Rp {
  config: oidc.Configuration;
  redirect: string;
}

async function relyingParty(t: TestApp, rp: RpServer): Promise<Rp> {
  const redirect = `${rp.origin}/cb`;
  const client = await createClient(t, {
    client_name: 'Passkey RP',
    application_type: 'web',
    redirect_uris: [redirect],
    grant_types: ['authorization_code', 'refresh_token'],
    scope: 'openid profile email',
    first_party: true,
  });
  const config = await oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
  return { config, redirect };
}

/** Opens an authorization request (code + PKCE, prompt=login so every test meets the sign-in page). */
async function authorize(page: Page, rp: Rp) {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(rp.config, {
    redirect_uri: rp.redirect,
    scope: 'openid profile email',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    prompt: 'login',
  });
  await page.goto(url.href);
  return { verifier, state, nonce };
}

async function passwordStep(page: Page, who: TestUser) {
  await page.getByLabel('E-mail').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

async function tokensFrom(page: Page, rp: Rp, flow: { verifier: string; state: string; nonce: string }) {
  await page.waitForURL(`${rp.redirect}**`);
  return oidc.authorizationCodeGrant(rp.config, new URL(page.url()), { pkceCodeVerifier: flow.verifier, expectedState: flow.state, expectedNonce: flow.nonce });
}

describe('passkeys (WebAuthn)', () => {
  let t: TestApp;
  let browser: Browser;
  let rpServer: RpServer;
  let rp: Rp;
  let userA: TestUser;
  let userB: TestUser;
  let a: AuthenticatorPage;
  let sink: SmtpSink;

  beforeAll(async () => {
    rpServer = await startRpServer();
    sink = await startSmtpSink();
    t = await startTestApp(sink.env());
    browser = await launchBrowser();
    rp = await relyingParty(t, rpServer);
    userA = await createUser(t, { email_verified: true });
    userB = await createUser(t, { email_verified: true });
    a = await pageWithAuthenticator(browser);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rpServer?.close();
    await sink?.close();
  });

  const audits = async (type: string, userId?: string) =>
    (await t.app.ctx.storage.audit.list(TENANT, { type, ...(userId ? { user_id: userId } : {}) }, { limit: 100, include_count: false })).items;
  const getUser = async (id: string) => (await api(t, 'GET', `/api/v1/users/${id}`, { token: await t.token('svc:users:read') })).json.data;
  const passkeysOf = (userId: string) => t.app.ctx.storage.webauthn.listCredentials(TENANT, userId);

  const accountUrl = () => `${new URL(t.issuer).origin}/account`;

  /** Signs in with the password (first-party: straight back to the RP) and opens the account page. */
  async function openAccountPage(page: Page, who: TestUser) {
    const flow = await authorize(page, rp);
    await passwordStep(page, who);
    await tokensFrom(page, rp, flow);
    await page.goto(accountUrl());
  }

  it('the sign-in page offers a passkey button beside the password form, under a CSP allowing only its own script', async () => {
    const page = (await browser.newContext()).newPage();
    const p = await page;
    const response = (await Promise.all([p.waitForResponse((r) => r.url().includes('/interaction/')), authorize(p, rp)]))[0];
    const csp = response.headers()['content-security-policy']!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(await p.getByRole('button', { name: /passkey/i }).count()).toBe(1);
    expect(await p.locator('input[type=email][name=email]').count()).toBe(1);
    expect(await p.locator('button.primary').count()).toBe(1);
    const script = await fetch(`${t.issuer}/assets/passkey.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toContain('javascript');
    expect(await seriousViolations(p)).toEqual([]);
    await p.context().close();
  });

  it('registers a named passkey on the account page after sign-in (resident key, audited, listed in mfa.methods)', async () => {
    await openAccountPage(a.page, userA);
    expect(await a.page.getByRole('heading', { name: 'Passkeys' }).count()).toBe(1);
    expect(await seriousViolations(a.page)).toEqual([]);
    await a.page.getByLabel(/name of the new passkey/i).fill('Laptop');
    await a.page.getByRole('button', { name: /add a passkey/i }).click();
    await a.page.waitForURL(/passkey=added/);
    expect(await a.page.getByText('Your passkey was added.').count()).toBe(1);
    expect(await a.page.getByText('Laptop', { exact: true }).count()).toBe(1);

    const stored = await passkeysOf(userA.id);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ name: 'Laptop', device_type: 'singleDevice', backed_up: false });
    const held = await a.credentials();
    expect(held).toHaveLength(1);
    expect(held[0]!.isResidentCredential).toBe(true);
    expect(held[0]!.rpId).toBe('localhost');
    expect(Buffer.from(held[0]!.credentialId, 'base64').toString('base64url')).toBe(stored[0]!.id);
    expect(Buffer.from(held[0]!.userHandle!, 'base64').toString('utf8')).toBe(userA.id);

    const enabled = await audits('mfa_enabled', userA.id);
    expect(enabled[0]!.details).toMatchObject({ method: 'webauthn', credential_id: stored[0]!.id });
    const user = await getUser(userA.id);
    expect(user.mfa).toEqual({ enabled: true, methods: ['webauthn'] });
    expect(JSON.stringify(user)).not.toContain(stored[0]!.public_key);
    // A second step added is told to the owner, as an authenticator app set up is.
    const [alert] = await sink.waitFor(userA.email);
    expect(alert!.subject).toBe(MFA_ALERT);
  });

  it('shows when a passkey was added in the page language, as the sessions list does', async () => {
    const stored = (await passkeysOf(userA.id))[0]!;
    const when = (lang: string, iso: string) => `${new Intl.DateTimeFormat(lang, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }).format(new Date(iso))} UTC`;
    try {
      for (const [lang, added] of [['fr', 'Ajoutée le'], ['de', 'Hinzugefügt'], ['en', 'Added']] as const) {
        await a.page.goto(`${accountUrl()}?lang=${lang}`);
        const item = (await a.page.locator('li.passkey p').first().textContent()) ?? '';
        expect(item).toContain(`${added} ${when(lang, stored.created_at)}`);
        expect(item).not.toContain(stored.created_at.slice(0, 10));
      }
    } finally {
      await a.page.goto(`${accountUrl()}?lang=en`);
    }
  });

  it('does not register the same authenticator twice (excluded credentials); the former two-step page leads to the account page', async () => {
    const old = await a.page.request.get(`${t.issuer}/account/mfa`, { maxRedirects: 0 });
    expect(old.status()).toBe(303);
    expect(old.headers()['location']).toBe('/account');
    await a.page.goto(`${t.issuer}/account/mfa`);
    expect(a.page.url()).toBe(accountUrl());
    await a.page.getByRole('button', { name: /add a passkey/i }).click();
    await expect.poll(() => a.page.locator('[data-passkey-status]').last().textContent()).toContain('not used');
    expect(await passkeysOf(userA.id)).toHaveLength(1);
    expect(await a.credentials()).toHaveLength(1);
  });

  it('refuses account-page writes without the session-bound CSRF token or session', async () => {
    const forged = await a.page.request.post(`${accountUrl()}/passkeys/options`, { form: { csrf_token: 'x' } });
    expect(forged.status()).toBe(403);
    const noSession = await fetch(`${accountUrl()}/passkeys/options`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'csrf_token=x' });
    expect(noSession.status).toBe(401);
    const [id] = (await passkeysOf(userA.id)).map((p) => p.id);
    const remove = await a.page.request.post(accountUrl(), { form: { action: 'passkeys.remove', id: id! } });
    expect(remove.status()).toBe(403);
    // The former endpoint does nothing any more: it sends the browser to the account page.
    const old = await a.page.request.post(`${t.issuer}/account/passkeys/remove`, { form: { id: id! }, maxRedirects: 0 });
    expect(old.status()).toBe(303);
    expect(await passkeysOf(userA.id)).toHaveLength(1);
    expect((await fetch(`${accountUrl()}/passkeys/options`)).status).toBe(405);
  });

  it('renames a passkey; the name is escaped wherever it is shown', async () => {
    await a.page.goto(accountUrl());
    const hostile = '<img src=x onerror="window.pwned=1">';
    await a.page.getByLabel('New name for Laptop').fill(hostile);
    await a.page.getByRole('button', { name: 'Rename Laptop' }).click();
    await a.page.waitForURL(/passkey=renamed/);
    expect(await a.page.getByText(hostile, { exact: true }).count()).toBe(1);
    expect(await a.page.locator('img').count()).toBe(0);
    expect(await a.page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    await a.page.getByLabel(`New name for ${hostile}`).fill('Work laptop');
    await a.page.getByRole('button', { name: `Rename ${hostile}` }).click();
    await a.page.waitForURL(/passkey=renamed/);
    expect((await passkeysOf(userA.id))[0]!.name).toBe('Work laptop');
  });

  it('signs in without a password from an authorization request; amr says hwk + mfa', async () => {
    const before = (await passkeysOf(userA.id))[0]!;
    const flow = await authorize(a.page, rp);
    await a.page.getByRole('button', { name: /passkey/i }).click();
    const tokens = await tokensFrom(a.page, rp, flow);
    const claims = claimsOf(tokens.id_token!);
    expect(claims.sub).toBe(userA.id);
    expect(claims.amr).toEqual(['hwk', 'mfa']);
    const after = (await passkeysOf(userA.id))[0]!;
    expect(after.counter).toBeGreaterThan(before.counter);
    expect(after.last_used_at).not.toBeNull();
    const login = (await audits('login', userA.id))[0]!;
    expect(login.details).toMatchObject({ method: 'passkey' });
  });

  it('offers the passkey in the e-mail field autofill (conditional mediation) to a person at the browser', async () => {
    // Automation is announced by navigator.webdriver, under which the script leaves autofill out;
    // here the page is told it is a person's browser, and the virtual authenticator stands in for
    // the person picking the passkey from the autofill list.
    const person = await pageWithAuthenticator(browser);
    await person.context.addInitScript(() => Object.defineProperty(Navigator.prototype, 'webdriver', { get: () => false }));
    const { credentials } = await a.cdp.send('WebAuthn.getCredentials', { authenticatorId: a.authenticatorId });
    await person.cdp.send('WebAuthn.addCredential', { authenticatorId: person.authenticatorId, credential: credentials[0]! });
    const flow = await authorize(person.page, rp);
    const tokens = await tokensFrom(person.page, rp, flow); // no click: the autofill request completes
    expect(claimsOf(tokens.id_token!).sub).toBe(userA.id);
    // The copy moved the counter on: give A's authenticator the copy's state, or it would now look cloned.
    const [moved] = (await person.cdp.send('WebAuthn.getCredentials', { authenticatorId: person.authenticatorId })).credentials;
    await a.cdp.send('WebAuthn.removeCredential', { authenticatorId: a.authenticatorId, credentialId: moved!.credentialId });
    await a.cdp.send('WebAuthn.addCredential', { authenticatorId: a.authenticatorId, credential: moved! });
    await person.context.close();
  });

  it('a passkey assertion is good once: replaying the posted form is refused', async () => {
    const flow = await authorize(a.page, rp);
    let posted: { url: string; body: string } | undefined;
    a.page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().endsWith('/passkey')) posted = { url: r.url(), body: r.postData() ?? '' };
    });
    await a.page.getByRole('button', { name: /passkey/i }).click();
    await tokensFrom(a.page, rp, flow);
    expect(posted).toBeDefined();
    // The same body (same CSRF token, same credential) on the same interaction URL, with the browser's cookies.
    const replay = await a.page.request.post(posted!.url, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, data: posted!.body, maxRedirects: 0 });
    expect(replay.status()).not.toBe(303);
    expect([400, 401]).toContain(replay.status());
  });

  it('after a password, the second step offers the passkey (no app code), and it completes with amr pwd + hwk + mfa', async () => {
    const flow = await authorize(a.page, rp);
    await passwordStep(a.page, userA);
    await a.page.getByRole('heading', { name: 'Two-step verification' }).waitFor();
    expect(await a.page.getByLabel('Authentication code').count()).toBe(0);
    expect(await seriousViolations(a.page)).toEqual([]);
    await a.page.getByRole('button', { name: /passkey/i }).click();
    const tokens = await tokensFrom(a.page, rp, flow);
    expect(claimsOf(tokens.id_token!).amr).toEqual(['pwd', 'hwk', 'mfa']);
    const verified = (await audits('mfa_verified', userA.id))[0]!;
    expect(verified.details).toMatchObject({ method: 'webauthn' });
  });

  it("another user's authenticator is refused at A's second step, audited and counted", async () => {
    // B gets a passkey of its own on a second authenticator.
    const b = await pageWithAuthenticator(browser);
    await openAccountPage(b.page, userB);
    await b.page.getByRole('button', { name: /add a passkey/i }).click();
    await b.page.waitForURL(/passkey=added/);
    expect(await passkeysOf(userB.id)).toHaveLength(1);

    // A's password in B's browser, then B's passkey offered for A's step: the options list only A's
    // passkeys, so the test asks the authenticator for any discoverable one (what a hostile page could do).
    await authorize(b.page, rp);
    await passwordStep(b.page, userA);
    await b.page.getByRole('heading', { name: 'Two-step verification' }).waitFor();
    await b.page.evaluate(async () => {
      const form = document.querySelector('form[data-passkey]') as HTMLFormElement;
      const body = new URLSearchParams({ csrf_token: (form.elements.namedItem('csrf_token') as HTMLInputElement).value });
      const options = await (await fetch(form.getAttribute('data-options')!, { method: 'POST', body })).json();
      const dec = (s: string) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
      const enc = (b: ArrayBuffer) => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
      const cred = (await navigator.credentials.get({ publicKey: { challenge: dec(options.challenge), rpId: options.rpId, userVerification: 'preferred' } })) as PublicKeyCredential;
      const r = cred.response as AuthenticatorAssertionResponse;
      (form.elements.namedItem('credential') as HTMLInputElement).value = JSON.stringify({
        id: cred.id,
        rawId: enc(cred.rawId),
        type: cred.type,
        clientExtensionResults: {},
        response: { clientDataJSON: enc(r.clientDataJSON), authenticatorData: enc(r.authenticatorData), signature: enc(r.signature), userHandle: r.userHandle ? enc(r.userHandle) : undefined },
      });
      form.submit();
    });
    await b.page.waitForLoadState();
    expect(await b.page.getByRole('alert').textContent()).toContain('could not be used');
    const failed = (await audits('mfa_failed', userA.id))[0]!;
    expect(failed.details).toMatchObject({ method: 'webauthn', reason: 'wrong_user' });
    await b.context.close();
  });

  it('a counter going backwards (a cloned authenticator) is refused and audited', async () => {
    const stored = (await passkeysOf(userA.id))[0]!;
    await t.sql('UPDATE webauthn_credentials SET counter = ? WHERE id = ?', [stored.counter + 1000, stored.id]);
    await authorize(a.page, rp);
    await a.page.getByRole('button', { name: /passkey/i }).click();
    await a.page.getByRole('alert').waitFor();
    expect(await a.page.getByRole('alert').textContent()).toContain('could not be used');
    const clone = (await audits('passkey_clone_suspected', userA.id))[0]!;
    expect(clone.status).toBe('warning');
    expect(clone.details).toMatchObject({ credential_id: stored.id });
    expect((await passkeysOf(userA.id))[0]!.counter).toBe(stored.counter + 1000);
  });

  it('removing a passkey is audited as mfa_disabled and leaves the user without MFA', async () => {
    // B's passkey: a fresh sign-in of B, then Remove.
    const b = await pageWithAuthenticator(browser);
    const other = await createUser(t, { email_verified: true });
    await openAccountPage(b.page, other);
    await b.page.getByLabel(/name of the new passkey/i).fill('Phone');
    await b.page.getByRole('button', { name: /add a passkey/i }).click();
    await b.page.waitForURL(/passkey=added/);
    // Another user's passkey id with this user's valid session and CSRF token: not found, untouched.
    const aPasskey = (await passkeysOf(userA.id))[0]!;
    const csrf = await b.page.locator('input[name=csrf_token]').first().inputValue();
    for (const action of ['remove', 'rename']) {
      const res = await b.page.request.post(accountUrl(), { form: { csrf_token: csrf, action: `passkeys.${action}`, id: aPasskey.id, name: 'mine now' } });
      expect(res.status()).toBe(404);
    }
    expect((await passkeysOf(userA.id))[0]).toEqual(aPasskey);
    await b.page.getByRole('button', { name: 'Remove Phone' }).click();
    await b.page.waitForURL(/passkey=removed/);
    expect(await passkeysOf(other.id)).toEqual([]);
    expect((await getUser(other.id)).mfa).toEqual({ enabled: false, methods: [] });
    expect((await audits('mfa_disabled', other.id))[0]!.details).toMatchObject({ method: 'webauthn' });
    // Added, then removed: two alerts.
    expect((await sink.waitFor(other.email, 2)).map((m) => m.subject)).toEqual([MFA_ALERT, MFA_ALERT]);
    await b.context.close();
  });

  it('the Management API MFA reset removes the passkeys: the authenticator no longer signs in', async () => {
    const res = await api(t, 'POST', `/api/v1/users/${userA.id}/mfa/reset`, { token: await t.token('svc:users:write') });
    expect(res.status).toBe(200);
    expect(await passkeysOf(userA.id)).toEqual([]);
    expect((await getUser(userA.id)).mfa).toEqual({ enabled: false, methods: [] });
    await authorize(a.page, rp);
    await a.page.getByRole('button', { name: /passkey/i }).click();
    await a.page.getByRole('alert').waitFor();
    expect((await audits('failed_login')).some((e) => e.details.method === 'passkey' && e.details.reason === 'unknown_credential')).toBe(true);
  });
});

describe('MFA policy: security.mfa.required', () => {
  let t: TestApp;
  let browser: Browser;
  let rpServer: RpServer;
  let rp: Rp;
  let sink: SmtpSink;

  beforeAll(async () => {
    rpServer = await startRpServer();
    sink = await startSmtpSink();
    t = await startTestApp({ ...sink.env(), SECURITY_MFA_REQUIRED: 'true' });
    browser = await launchBrowser();
    rp = await relyingParty(t, rpServer);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rpServer?.close();
    await sink?.close();
  });

  it('forces enrolment at the next sign-in; a passkey made there completes it, and is the second step next time', async () => {
    const user = await createUser(t, { email_verified: true });
    const a = await pageWithAuthenticator(browser);
    let flow = await authorize(a.page, rp);
    await passwordStep(a.page, user);
    await a.page.getByRole('heading', { name: 'Set up two-step verification' }).waitFor();
    expect(await a.page.getByLabel('Authentication code').count()).toBe(1); // an app, or
    expect(await seriousViolations(a.page)).toEqual([]);
    await a.page.getByRole('button', { name: /passkey/i }).click(); // a passkey
    let tokens = await tokensFrom(a.page, rp, flow);
    expect(claimsOf(tokens.id_token!).amr).toEqual(['pwd', 'hwk', 'mfa']);
    expect((await t.app.ctx.storage.webauthn.listCredentials(TENANT, user.id))).toHaveLength(1);
    const enabled = (await t.app.ctx.storage.audit.list(TENANT, { type: 'mfa_enabled', user_id: user.id }, { limit: 5, include_count: false })).items[0]!;
    expect(enabled.details).toMatchObject({ method: 'webauthn', at: 'sign_in' });
    expect((await sink.waitFor(user.email))[0]!.subject).toBe(MFA_ALERT);

    flow = await authorize(a.page, rp);
    await passwordStep(a.page, user);
    await a.page.getByRole('heading', { name: 'Two-step verification' }).waitFor();
    await a.page.getByRole('button', { name: /passkey/i }).click();
    tokens = await tokensFrom(a.page, rp, flow);
    expect(claimsOf(tokens.id_token!).amr).toEqual(['pwd', 'hwk', 'mfa']);
    await a.context.close();
  });

  /** A new user's sign-in up to the enrolment page the MFA policy asks for, and the TOTP key it shows. */
  async function atEnrolment() {
    const user = await createUser(t, { email_verified: true });
    const page = await (await browser.newContext()).newPage();
    const flow = await authorize(page, rp);
    await passwordStep(page, user);
    await page.getByRole('heading', { name: 'Set up two-step verification' }).waitFor();
    const secret = (await page.locator('#totp-secret').textContent())!.replace(/\s/g, '');
    return { user, page, flow, secret };
  }

  it('an authenticator app set up at sign-in completes it too: recovery codes, then Continue to the application', async () => {
    const { user, page, flow, secret } = await atEnrolment();
    await page.getByLabel('Authentication code').fill(totpAt(secret, Date.now()));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('heading', { name: 'Two-step verification is on' }).waitFor();
    expect(await page.locator('#recovery-codes li').count()).toBeGreaterThan(0);
    await page.getByRole('link', { name: 'Continue' }).click();
    const tokens = await tokensFrom(page, rp, flow);
    expect(claimsOf(tokens.id_token!).amr).toEqual(['pwd', 'otp', 'mfa']);
    const got = await api(t, 'GET', `/api/v1/users/${user.id}`, { token: await t.token('svc:users:read') });
    expect(got.json.data.mfa).toEqual({ enabled: true, methods: ['totp'] });
    // Told to the owner, as the same set-up on the account page is.
    expect((await sink.waitFor(user.email))[0]!.subject).toBe(MFA_ALERT);
    await page.context().close();
  });

  it('a wrong code at sign-in enrolment keeps the key already shown: the app that holds it still completes the set-up', async () => {
    const { page, flow, secret } = await atEnrolment();
    const right = totpAt(secret, Date.now());
    await page.getByLabel('Authentication code').fill(right === '000000' ? '111111' : '000000');
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('alert').waitFor();
    expect((await page.locator('#totp-secret').textContent())!.replace(/\s/g, '')).toBe(secret);
    await page.getByLabel('Authentication code').fill(totpAt(secret, Date.now()));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('heading', { name: 'Two-step verification is on' }).waitFor();
    await page.getByRole('link', { name: 'Continue' }).click();
    const tokens = await tokensFrom(page, rp, flow);
    expect(claimsOf(tokens.id_token!).amr).toEqual(['pwd', 'otp', 'mfa']);
    await page.context().close();
  });

  it('the password alone never finishes a sign-in: the resume URL without enrolment asks again', async () => {
    const user = await createUser(t, { email_verified: true });
    const page = await (await browser.newContext()).newPage();
    await authorize(page, rp);
    await passwordStep(page, user);
    await page.getByRole('heading', { name: 'Set up two-step verification' }).waitFor();
    const enrolUrl = page.url();
    await page.goto(enrolUrl);
    expect(await page.getByRole('heading', { name: 'Set up two-step verification' }).count()).toBe(1);
    expect(page.url().startsWith(rp.redirect)).toBe(false);
    await page.context().close();
  });
});

describe('security.mfa.webauthn_enabled: false', () => {
  let t: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    t = await startTestApp({ SECURITY_MFA_WEBAUTHN_ENABLED: 'false' });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('offers no passkey anywhere and refuses the passkey endpoints', async () => {
    const rpServer = await startRpServer();
    try {
      const rp = await relyingParty(t, rpServer);
      const page = await (await browser.newContext()).newPage();
      await authorize(page, rp);
      expect(await page.getByRole('button', { name: /passkey/i }).count()).toBe(0);
      const csp = (await page.request.get(page.url())).headers()['content-security-policy']!;
      expect(csp).not.toContain('script-src');
      const uid = new URL(page.url()).pathname.split('/').pop()!;
      const options = await page.request.post(`${t.issuer}/interaction/${uid}/passkey/options`, { form: { csrf_token: 'x' } });
      expect([403, 404]).toContain(options.status());
      const account = await page.request.post(`${new URL(t.issuer).origin}/account/passkeys/options`, { form: { csrf_token: 'x' } });
      expect(account.status()).toBe(404);
      await page.context().close();
    } finally {
      await rpServer.close();
    }
  });
});
