/**
 * The account page /account with every section at once (profile, e-mail, password, two-step
 * verification, passkeys, linked accounts, sessions, security alerts) in headless Chromium: the
 * passkey button (name /passkey/i) registers one with the virtual authenticator, the linked
 * accounts list and "Link <provider>" show, axe-core finds no serious or critical violation, and
 * a full-page screenshot is written to test-artifacts/account/ (gitignored); an old sign-in may not
 * add or remove a passkey, nor link or unlink an upstream account.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configChangedChannel } from '../../src/events/bus.js';
import { enableTotp } from '../../src/users/mfa.js';
import { syncMfaMethods } from '../../src/users/passkeys.js';
import { generateTotpSecret } from '../../src/users/totp.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { launchBrowser } from '../helpers/browser.js';
import { startUpstreamOidc, type UpstreamOidc } from '../helpers/upstream-oidc.js';
import { signInToAccountPage } from '../helpers/account-page.js';
import { until } from '../helpers/until.js';
import { createUser } from '../helpers/users.js';
import { pageWithAuthenticator } from '../helpers/webauthn.js';

const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'account');

describe('account page with every section', () => {
  let t: TestApp;
  let upstream: UpstreamOidc;
  let browser: Browser;
  let dir: string;

  beforeAll(async () => {
    upstream = await startUpstreamOidc();
    dir = mkdtempSync(join(tmpdir(), 'svc-account-'));
    const file = join(dir, 'config.json');
    const provider = (name: string) => ({ type: 'oidc', enabled: true, issuer: upstream.issuer, client_id: 'svc-at-corp', client_secret: 'upstream-client-secret-0123456789', display_name: name });
    writeFileSync(file, JSON.stringify({ features: { social_login: { providers: { corp: provider('Corp SSO'), partner: provider('Partner ID') } } } }));
    t = await startTestApp({ SVC_CONFIG_FILE: file });
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await upstream?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('shows every section, registers a passkey from its /passkey/i button, and passes axe-core', async () => {
    const user = await createUser(t, { email_verified: true });
    const a = await pageWithAuthenticator(browser);
    const account = `${new URL(t.issuer).origin}/account`;
    // Straight to the page: it signs in through the tenant's own authorization endpoint first.
    await a.page.goto(account);
    await a.page.getByLabel('E-mail').fill(user.email);
    await a.page.getByLabel('Password').fill(user.password);
    await a.page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await a.page.waitForURL(account);

    const response = await a.page.reload();
    const csp = response!.headers()['content-security-policy']!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    const add = a.page.getByRole('button', { name: /passkey/i });
    expect(await add.count()).toBe(1);
    await a.page.getByLabel(/name of the new passkey/i).fill('Desk key <b>');
    await add.click();
    await a.page.waitForURL(/passkey=added/);
    expect(await a.page.getByRole('status').filter({ hasText: 'Your passkey was added.' }).count()).toBe(1);
    expect((await a.credentials())[0]!.isResidentCredential).toBe(true);
    expect(await t.app.ctx.storage.webauthn.listCredentials('default', user.id)).toHaveLength(1);

    // TOTP on, one linked account: every section in its "in use" state.
    await enableTotp(t.app.ctx, 'default', user.id, generateTotpSecret());
    const now = new Date().toISOString();
    await t.app.ctx.storage.socialIdentities.link('default', { provider: 'corp', subject: 'u-1', user_id: user.id, email: 'someone@corp.example', linked_at: now, last_used_at: now });
    await a.page.goto(account);
    const headings = await a.page.getByRole('heading', { level: 2 }).allTextContents();
    for (const h of ['Passkeys', 'Linked accounts', 'Two-step verification']) expect(headings).toContain(h);
    expect(headings.length).toBeGreaterThanOrEqual(7);
    expect(await a.page.getByText('Desk key <b>', { exact: true }).count()).toBe(1);
    expect(await a.page.getByRole('button', { name: 'Unlink Corp SSO' }).count()).toBe(1);
    expect(await a.page.getByRole('link', { name: 'Link Partner ID' }).count()).toBe(1);
    expect(await a.page.getByRole('link', { name: 'Link Corp SSO' }).count()).toBe(0);
    expect(await a.page.getByRole('button', { name: 'Turn off two-step verification' }).count()).toBe(1);
    expect(await seriousViolations(a.page)).toEqual([]);

    mkdirSync(ARTIFACTS, { recursive: true });
    await a.page.screenshot({ path: join(ARTIFACTS, 'account-page.png'), fullPage: true });

    // An older sign-in (more than 15 minutes ago) may rename but not add or remove a passkey.
    const [row] = await t.app.ctx.storage.oidc.listSessions('default', { accountId: user.id });
    await t.app.ctx.storage.oidc.upsert('default', 'Session', row!.id, { ...row!.payload, loginTs: Math.floor(Date.now() / 1000) - 3600 }, row!.expires_at);
    await a.page.goto(account);
    const csrf = await a.page.locator('input[name=csrf_token]').first().inputValue();
    const options = await a.page.request.post(`${account}/passkeys/options`, { form: { csrf_token: csrf } });
    expect(options.status()).toBe(403);
    expect(await options.json()).toEqual({ error: 'login_too_old' });
    const [stored] = await t.app.ctx.storage.webauthn.listCredentials('default', user.id);
    const remove = await a.page.request.post(account, { form: { csrf_token: csrf, action: 'passkeys.remove', id: stored!.id } });
    expect(remove.status()).toBe(403);
    expect(await t.app.ctx.storage.webauthn.listCredentials('default', user.id)).toHaveLength(1);
    const rename = await a.page.request.post(account, { form: { csrf_token: csrf, action: 'passkeys.rename', id: stored!.id, name: 'Desk' }, maxRedirects: 0 });
    expect(rename.status()).toBe(303);
    expect((await t.app.ctx.storage.webauthn.listCredentials('default', user.id))[0]!.name).toBe('Desk');
    await a.context.close();
  }, 60_000);
  it('keeps the last passkey while MFA is required and no authenticator app is usable (403, as the app is kept); beside a usable app it may go', async () => {
    const user = await createUser(t, { email_verified: true });
    const origin = new URL(t.issuer).origin;
    const context = await browser.newContext();
    const { ctx } = t.app;
    const setRequired = async (required: boolean) => {
      await ctx.storage.tenantConfig.put('default', 'security', required ? { mfa: { required: true } } : {});
      await ctx.events.publish(configChangedChannel('default', ctx.config.redis.key_prefix), { tenant: 'default', section: 'security', at: new Date().toISOString() });
      await until(() => t.app.pool.peek('default')?.config.security.mfa.required === required);
    };
    try {
      const page = await signInToAccountPage(await context.newPage(), origin, user);
      // A passkey on record (stored as is: only its removal is under test).
      const now = new Date().toISOString();
      await ctx.storage.webauthn.createCredential('default', { id: 'only-key', user_id: user.id, public_key: 'pQECAyYgASFYIA', counter: 0, transports: [], device_type: 'singleDevice', backed_up: false, aaguid: '00000000-0000-0000-0000-000000000000', name: 'Only key', created_at: now, last_used_at: null });
      await syncMfaMethods(ctx, 'default', user.id);
      await setRequired(true);
      await page.goto(`${origin}/account`);
      const csrf = await page.locator('input[name=csrf_token]').first().inputValue();
      const remove = () => page.request.post(`${origin}/account`, { form: { csrf_token: csrf, action: 'passkeys.remove', id: 'only-key' }, maxRedirects: 0 });
      const refused = await remove();
      expect(refused.status()).toBe(403);
      expect(await refused.text()).toContain('Two-step verification is required for this account');
      expect(await ctx.storage.webauthn.listCredentials('default', user.id)).toHaveLength(1);

      await enableTotp(ctx, 'default', user.id, generateTotpSecret());
      expect((await remove()).status()).toBe(303);
      expect(await ctx.storage.webauthn.listCredentials('default', user.id)).toHaveLength(0);
    } finally {
      await setRequired(false);
      await context.close();
    }
  });
  it('links or unlinks an upstream account only after a recent sign-in: an older session cannot plant a way in of its own, nor strip the owner\'s', async () => {
    upstream.register({ client_id: 'svc-at-corp', client_secret: 'upstream-client-secret-0123456789', redirect_uris: [`${t.issuer}/social/partner/callback`] });
    const user = await createUser(t, { email_verified: true });
    const origin = new URL(t.issuer).origin;
    const context = await browser.newContext();
    try {
      const page = await signInToAccountPage(await context.newPage(), origin, user);
      const href = (await page.getByRole('link', { name: 'Link Partner ID' }).getAttribute('href'))!;
      // Fresh: the link starts at the upstream.
      const fresh = await page.request.get(`${origin}${href}`, { maxRedirects: 0 });
      expect(fresh.status()).toBe(303);
      expect(fresh.headers().location!.startsWith(upstream.issuer)).toBe(true);

      // The same session, signed in more than 15 minutes ago (a cookie taken from a shared computer).
      const [row] = await t.app.ctx.storage.oidc.listSessions('default', { accountId: user.id });
      await t.app.ctx.storage.oidc.upsert('default', 'Session', row!.id, { ...row!.payload, loginTs: Math.floor(Date.now() / 1000) - 3600 }, row!.expires_at);
      const stale = await page.request.get(`${origin}${href}`, { maxRedirects: 0 });
      expect(stale.status()).toBe(403);
      expect(await stale.text()).toContain('this change needs a recent sign-in');
      expect(await t.app.ctx.storage.socialIdentities.listByUser('default', user.id)).toEqual([]);
      // Nor may it strip the owner's linked account.
      const now = new Date().toISOString();
      await t.app.ctx.storage.socialIdentities.link('default', { provider: 'corp', subject: 'owner-1', user_id: user.id, email: user.email, linked_at: now, last_used_at: now });
      await page.goto(`${origin}/account`);
      await page.getByRole('button', { name: 'Unlink Corp SSO' }).click();
      await expect.poll(() => page.getByRole('alert').filter({ hasText: 'this change needs a recent sign-in' }).count()).toBe(1);
      expect(await t.app.ctx.storage.socialIdentities.listByUser('default', user.id)).toHaveLength(1);
    } finally {
      await context.close();
    }
  });
});
