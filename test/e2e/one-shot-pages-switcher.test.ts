/**
 * The language switcher of the pages a mailed link leads to (sixth audit of 2026-12-01), over plain
 * HTTP with the SMTP sink. The "E-mail address confirmed" and "Password changed" pages offered
 * switcher links that opened the used link again, which answered "Link no longer valid" in the
 * language chosen, as if the confirmation or the reset had failed; the new-password form drawn again
 * after a refused password switched to "Link no longer valid" too (its links had lost the token).
 * The result pages have no switcher now; the form's switcher keeps its link.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { HttpSession } from '../helpers/code-flow.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { createUser } from '../helpers/users.js';

describe('language switcher after a mailed link', () => {
  let t: TestApp;
  let sink: SmtpSink;
  let origin: string;

  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await startTestApp({ ...sink.env(), SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000', SECURITY_SIGNUP_ENABLED: 'true' });
    origin = new URL(t.issuer).origin;
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  const heading = (html: string) => /<h1>([^<]*)<\/h1>/.exec(html)![1]!;
  const switcherLinks = (html: string) => [.../<nav class="languages"[\s\S]*?<\/nav>/.exec(html)?.[0].matchAll(/href="([^"]*)"/g) ?? []].map((m) => new URL(m[1]!.replace(/&amp;/g, '&'), origin).href);

  async function resetLink(browser: HttpSession, email: string): Promise<string> {
    const form = await browser.visit(`${origin}/account/password/forgot`);
    const csrf = /name="csrf_token" value="([^"]*)"/.exec(form.html)![1]!;
    await browser.visit(`${origin}/account/password/forgot`, new URLSearchParams({ csrf_token: csrf, email }));
    const [mail] = await sink.waitFor(email);
    return mail!.links[0]!;
  }

  it('the new-password form drawn again after a refused password switches language to the same form; "Password changed" has no switcher', async () => {
    const user = await createUser(t, { email_verified: true });
    const browser = new HttpSession(t.issuer, user);
    const link = await resetLink(browser, user.email);
    const form = await browser.visit(link);
    const fields = new URLSearchParams({ csrf_token: /name="csrf_token" value="([^"]*)"/.exec(form.html)![1]!, token: new URL(link).searchParams.get('token')!, password: 'short' });
    const refused = await browser.visit(`${origin}/account/password/reset`, fields);
    expect(refused.status).toBe(400);
    const french = switcherLinks(refused.html).find((href) => href.includes('lang=fr'))!;
    const switched = await browser.visit(french);
    expect(switched.status).toBe(200);
    expect(switched.html).toContain('name="token"');
    expect(switched.html).toContain('<html lang="fr"');

    fields.set('password', 'Switched-language-pass-5');
    const done = await browser.visit(`${origin}/account/password/reset`, fields);
    // In the language chosen (the switcher's choice is remembered).
    expect(heading(done.html)).toBe('Mot de passe modifié');
    expect(switcherLinks(done.html)).toEqual([]);
  });

  it('"E-mail address confirmed" has no switcher leading to "Link no longer valid"', async () => {
    const browser = new HttpSession(t.issuer, { email: '', password: '' });
    const signIn = await browser.visit(`${origin}/account`);
    const signupHref = new URL(/href="([^"]*\/interaction\/[^"]*\/signup)"/.exec(signIn.html)![1]!, origin).href;
    const form = await browser.visit(signupHref);
    const email = `switcher-${Date.now()}@example.com`;
    const csrf = /name="csrf_token" value="([^"]*)"/.exec(form.html)![1]!;
    await browser.visit(signupHref, new URLSearchParams({ csrf_token: csrf, email, password: 'Switcher-signup-pass-6' }));
    const [mail] = await sink.waitFor(email);
    const confirmed = await new HttpSession(t.issuer, { email: '', password: '' }).visit(mail!.links[0]!);
    expect(heading(confirmed.html)).toBe('E-mail address confirmed');
    for (const href of switcherLinks(confirmed.html)) expect((await fetch(href)).status).toBe(200);
    expect(switcherLinks(confirmed.html)).toEqual([]);
  });
});
