/**
 * A double-click on "Create account" (src/oidc/signup-once.ts): the form posted twice at once, the
 * way a browser does it: the first post's answer is dropped (the browser moved on to the second),
 * the second's is followed. The copy used to find the address taken by the first: it mailed the
 * user who had just signed up "someone tried to sign up with your address", audited a failed
 * sign-up, and overwrote the interaction's state, so the page the browser showed was "check your
 * e-mail" (or the sign-in form) instead of the relying party's code. Now the copy changes nothing,
 * sends nothing and leads where the first post led. openid-client is the relying party.
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { HttpSession, codeFlowClient, type CodeFlowClient } from '../helpers/code-flow.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';

describe.each([
  { verification: false, label: 'signed in at once' },
  { verification: true, label: 'with the address to confirm' },
])('sign-up form posted twice at once, $label', ({ verification }) => {
  let t: TestApp;
  let sink: SmtpSink;
  let client: CodeFlowClient;
  let config: oidc.Configuration;
  let origin: string;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await startTestApp({ ...sink.env(), SECURITY_SIGNUP_ENABLED: 'true', SECURITY_SIGNUP_REQUIRE_EMAIL_VERIFICATION: String(verification), SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000' });
    origin = new URL(t.issuer).origin;
    // Never served: a redirect that reaches it means the relying party got its code.
    client = await codeFlowClient(t, await t.token('svc:clients:write'), `${origin}/rp-callback`);
    config = new oidc.Configuration({ issuer: t.issuer, authorization_endpoint: `${t.issuer}/auth`, token_endpoint: `${t.issuer}/token` }, client.client_id, { client_secret: client.client_secret! });
    oidc.allowInsecureRequests(config);
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  it('hostile: the copy creates nothing, mails nothing, and the browser reaches the relying party', async () => {
    const browser = new HttpSession(t.issuer, { email: '', password: '' });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const auth = oidc.buildAuthorizationUrl(config, { redirect_uri: client.redirect_uri, scope: 'openid email', state, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const signIn = await browser.visit(auth.href);
    const link = new URL(/href="([^"]*\/interaction\/[^"]*\/signup)"/.exec(signIn.html)![1]!, origin).href;
    const form = await browser.visit(link);
    const csrf = /name="csrf_token" value="([^"]*)"/.exec(form.html)![1]!;
    const email = `double-${verification}-${Date.now()}@example.com`;
    const body = new URLSearchParams({ csrf_token: csrf, email, password: 'Double-click-pass-1' });

    // The first post's answer is never followed (the browser left it); the second's is.
    const [first, shown] = await Promise.all([
      fetch(link, { method: 'POST', redirect: 'manual', headers: { cookie: browser.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' }, body: body.toString() }),
      browser.visit(link, body),
    ]);
    expect(first.status).toBe(303);

    const accounts = await t.sql('SELECT id FROM users WHERE email = ?', [email]);
    expect(accounts).toHaveLength(1);
    const userId = accounts[0]!.id as string;

    let callback = shown.url;
    if (verification) {
      expect(shown.html).toContain('<h1>Check your e-mail</h1>');
      expect(shown.html).toContain(email);
      const [mail] = await sink.waitFor(email);
      expect(mail!.subject).toBe('Confirm your e-mail address');
      const confirm = mail!.links.find((l) => l.includes('/account/verify?token='))!;
      expect((await new HttpSession(t.issuer, { email: '', password: '' }).visit(confirm)).status).toBe(200);
      const continueCsrf = /name="csrf_token" value="([^"]*)"/.exec(shown.html)![1]!;
      callback = (await browser.visit(`${shown.url}/continue`, new URLSearchParams({ csrf_token: continueCsrf }))).url;
    }
    expect(callback.startsWith(client.redirect_uri)).toBe(true);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(callback), { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.claims()!.sub).toBe(userId);

    // One mail to the address (the confirmation link), no "someone tried your address".
    await new Promise((r) => setTimeout(r, 500));
    expect(sink.messages.filter((m) => m.to.includes(email)).map((m) => m.subject)).toEqual(['Confirm your e-mail address']);
    // One sign-up audited, no refused one.
    const entries = (await t.app.ctx.storage.audit.list('default', { type: 'signup' }, { limit: 100, include_count: false })).items.filter((e) => e.username === email);
    expect(entries.map((e) => e.status)).toEqual(['success']);
  });

  it('another browser posting the same address is no copy: it meets the taken address, as before', async () => {
    const email = `later-${verification}-${Date.now()}@example.com`;
    const signUpOnce = async () => {
      const browser = new HttpSession(t.issuer, { email: '', password: '' });
      const signIn = await browser.visit(`${origin}/account`);
      const link = new URL(/href="([^"]*\/interaction\/[^"]*\/signup)"/.exec(signIn.html)![1]!, origin).href;
      const form = await browser.visit(link);
      const csrf = /name="csrf_token" value="([^"]*)"/.exec(form.html)![1]!;
      return browser.visit(link, new URLSearchParams({ csrf_token: csrf, email, password: 'Later-signup-pass-1' }));
    };
    await signUpOnce();
    // Another interaction (another browser) with the same address: the claim is per interaction.
    const again = await signUpOnce();
    expect(again.html).toContain('<h1>Check your e-mail</h1>');
    const mails = await sink.waitFor(email, 2);
    expect(mails.map((m) => m.subject)).toContain('Confirm your e-mail address');
    expect(mails).toHaveLength(2);
    const entries = (await t.app.ctx.storage.audit.list('default', { type: 'signup' }, { limit: 100, include_count: false })).items.filter((e) => e.username === email);
    expect(entries.map((e) => e.status).sort()).toEqual(['failed', 'success']);
  });
});
