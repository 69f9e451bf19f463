/**
 * Sign-up under `security.mfa.required` (sixth audit of 2026-12-01): a new account finishes its
 * first sign-in like any other, by setting up the second factor the policy asks for. Sign-up used
 * to complete the authorization request with the password alone (`amr: ["pwd"]`, a code for the
 * relying party), where a password sign-in of the same account was sent to the enrolment step.
 * Both ways are covered: with the address to confirm first ("Continue" after the mailed link, and
 * the interaction page opened again) and without (the account signs in at once).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { HttpSession, codeFlowClient, type CodeFlowClient } from '../helpers/code-flow.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';

const ENROL_TITLE = '<h1>Set up two-step verification</h1>';

describe.each([
  { verification: true, label: 'with the address confirmed first' },
  { verification: false, label: 'without e-mail verification' },
])('sign-up with MFA required, $label', ({ verification }) => {
  let t: TestApp;
  let sink: SmtpSink;
  let client: CodeFlowClient;
  let origin: string;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await startTestApp({
      ...sink.env(),
      SECURITY_SIGNUP_ENABLED: 'true',
      SECURITY_SIGNUP_REQUIRE_EMAIL_VERIFICATION: String(verification),
      SECURITY_MFA_REQUIRED: 'true',
      SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000',
    });
    origin = new URL(t.issuer).origin;
    // Never served: a redirect that reaches it means the relying party got its code.
    client = await codeFlowClient(t, await t.token('svc:clients:write'), `${origin}/rp-callback`);
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  /** The authorization request's sign-in page, then the sign-up form posted: the page it leads to. */
  async function signUp(browser: HttpSession, email: string): Promise<{ url: string; html: string }> {
    const auth = new URL(`${t.issuer}/auth`);
    auth.search = new URLSearchParams({ client_id: client.client_id, response_type: 'code', redirect_uri: client.redirect_uri, scope: 'openid email', state: 'st', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' }).toString();
    const signIn = await browser.visit(auth.href);
    const link = /href="([^"]*\/interaction\/[^"]*\/signup)"/.exec(signIn.html)![1]!;
    const form = await browser.visit(new URL(link, origin).href);
    const csrf = /name="csrf_token" value="([^"]*)"/.exec(form.html)![1]!;
    return browser.visit(new URL(link, origin).href, new URLSearchParams({ csrf_token: csrf, email, password: 'Signup-mfa-pass-1' }));
  }

  it('hostile: the new account is sent to the enrolment step; no code reaches the relying party', async () => {
    const browser = new HttpSession(t.issuer, { email: '', password: '' });
    const email = `mfa-signup-${Date.now()}@example.com`;
    let page = await signUp(browser, email);
    if (verification) {
      expect(page.html).toContain('<h1>Check your e-mail</h1>');
      const [mail] = await sink.waitFor(email);
      const confirm = mail!.links.find((l) => l.includes('/account/verify?token='))!;
      expect((await new HttpSession(t.issuer, { email: '', password: '' }).visit(confirm)).status).toBe(200);
      const csrf = /name="csrf_token" value="([^"]*)"/.exec(page.html)![1]!;
      const interaction = page.url;
      page = await browser.visit(`${interaction}/continue`, new URLSearchParams({ csrf_token: csrf }));
      expect(page.url.startsWith(client.redirect_uri)).toBe(false);
      expect(page.html).toContain(ENROL_TITLE);
      // The interaction page opened again asks for the same step.
      page = await browser.visit(interaction);
    }
    expect(page.url.startsWith(client.redirect_uri)).toBe(false);
    expect(page.html).toContain(ENROL_TITLE);
  });
});
