/**
 * The administration console (issue 16) against the running product, in Chromium: a tenant admin
 * signs in through the tenant's own sign-in page (svc-admin, code + PKCE) and walks every section;
 * what the console does is then proven from outside (openid-client, the Management API, the JWKS).
 * axe-core runs on every section (no serious or critical violation) and a screenshot of each is
 * written to test-artifacts/admin-console/ (gitignored). One browser session walks the sections.
 */
import * as oidc from 'openid-client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { ensureConsoleBuilt, expectAccessible, screenshot, signInToConsole, watchPage } from '../helpers/console.js';
import { createClient, createUser, type TestUser } from '../helpers/users.js';
import { buildMetadata } from '../../src/clients/rules.js';
import { createClient as createClientRecord } from '../../src/clients/operations.js';
import { MASK } from '../../src/tenancy/config/secrets.js';

/** The OAuth error code of an openid-client failure (body error or WWW-Authenticate challenge). */
function oauthError(err: { error?: string; cause?: Array<{ parameters?: { error?: string } }> }): string | undefined {
  return err.error ?? (Array.isArray(err.cause) ? err.cause[0]?.parameters?.error : undefined);
}

const XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=1</script>';
const RP = 'http://127.0.0.1:65533';

describe('administration console', () => {
  let t: TestApp;
  let browser: Browser;
  let admin: TestUser;
  let origin: string;
  let context: BrowserContext;
  let page: Page;
  let watch: { problems: string[] };

  beforeAll(async () => {
    ensureConsoleBuilt();
    t = await startTestApp();
    origin = new URL(t.issuer).origin;
    admin = await createUser(t, { role: 'admin', email: `admin-${Date.now()}@example.com` });
    browser = await launchBrowser();
    context = await browser.newContext({ acceptDownloads: true, locale: 'en-US' });
    page = await context.newPage();
    // Below the test timeout, so a missing element fails naming its locator.
    page.setDefaultTimeout(10_000);
    watch = watchPage(page);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const section = async (name: string) => {
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name, exact: true }).click();
    await page.getByRole('heading', { level: 1, name }).waitFor();
    await page.locator('.loading').first().waitFor({ state: 'detached', timeout: 10_000 });
  };
  const check = async (name: string) => {
    await expectAccessible(page, name);
    await screenshot(page, name);
  };

  it('serves the console shell and hashed assets with a self-only CSP and the right cache headers', async () => {
    const shell = await fetch(`${t.url}/admin/clients?q=x`);
    expect(shell.status).toBe(200);
    expect(shell.headers.get('content-type')).toMatch(/^text\/html/);
    expect(shell.headers.get('cache-control')).toBe('no-cache');
    const csp = shell.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    const html = await shell.text();
    expect(html).toContain(`&quot;issuer&quot;:&quot;${t.issuer}&quot;`);
    const asset = /src="(\/admin\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const js = await fetch(`${t.url}${asset}`);
    expect(js.status).toBe(200);
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect((await fetch(`${t.url}/admin/assets/nope.js`)).status).toBe(404);
    expect((await fetch(`${t.url}/admin/assets/..%2f..%2fpackage.json`)).status).toBe(404);
    const post = await fetch(`${t.url}/admin`, { method: 'POST' });
    expect(post.status).toBe(405);
  });

  it('signs an admin in through the tenant sign-in page and shows the overview', async () => {
    await signInToConsole(page, `${origin}/admin`, admin.email, admin.password);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await page.getByText('Overall status').waitFor();
    await check('overview');
    // The token is the user's: audience the Management API, issued to svc-admin.
    const stored = await page.evaluate(() => Object.keys(sessionStorage).find((k) => k.startsWith('oidc.user:')));
    expect(stored).toContain('svc-admin');
  });

  let clientId = '';
  it('Clients: creates a client shown once with its secret, usable with openid-client; names are text', async () => {
    await section('Clients');
    await check('clients-empty');
    await page.getByRole('link', { name: 'New client' }).click();
    await page.getByLabel('Kind of application').selectOption('service');
    await page.getByLabel('Client name').fill(`Billing ${XSS}`);
    await page.getByLabel('Allowed scopes').fill('svc:clients:read');
    // Per-field errors from problem+json: an invalid URL is refused by the API, shown at its field.
    await page.getByText('More fields').click();
    await page.getByLabel('client_uri').fill('not a url');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.locator('.field.invalid').first().waitFor();
    expect(await page.getByLabel('client_uri').getAttribute('aria-invalid')).toBe('true');
    await check('client-form-errors');
    await page.getByLabel('client_uri').fill('');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { name: 'Client created' }).waitFor();
    const secret = await page.getByRole('textbox', { name: 'Client secret' }).inputValue();
    clientId = (await page.locator('.mono').first().textContent())!.trim();
    expect(secret.length).toBeGreaterThan(20);
    await check('client-created');

    const config = await oidc.discovery(new URL(t.issuer), clientId, undefined, oidc.ClientSecretBasic(secret), { execute: [oidc.allowInsecureRequests] });
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'svc:clients:read', resource: 'urn:svc:api:v1' }).catch((err: { error?: string; error_description?: string }) => {
      throw new Error(`client_credentials failed: ${err.error} ${err.error_description}`);
    });
    expect((await api(t, 'GET', `/api/v1/clients/${clientId}`, { token: tokens.access_token })).status).toBe(200);

    await page.getByRole('link', { name: 'Open the client' }).click();
    await page.getByRole('heading', { level: 1, name: `Billing ${XSS}` }).waitFor();
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    await page.getByText('Tokens issued').waitFor();
    await check('client-detail');

    // Regenerate: shown once; the old secret stops working, the new one works.
    await page.getByRole('button', { name: 'Regenerate secret' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Regenerate secret' }).click();
    const fresh = await page.getByRole('textbox', { name: 'New client secret' }).inputValue();
    expect(fresh).not.toBe(secret);
    const refused = await oidc.clientCredentialsGrant(config, { scope: 'svc:clients:read', resource: 'urn:svc:api:v1' }).then(() => 'accepted', oauthError);
    expect(refused).toBe('invalid_client');
    const config2 = await oidc.discovery(new URL(t.issuer), clientId, undefined, oidc.ClientSecretBasic(fresh), { execute: [oidc.allowInsecureRequests] });
    await oidc.clientCredentialsGrant(config2, { scope: 'svc:clients:read', resource: 'urn:svc:api:v1' });

    // Deactivate (confirmed): the API sees it.
    await page.getByRole('button', { name: 'Deactivate' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Deactivate' }).click();
    await page.getByRole('button', { name: 'Activate', exact: true }).waitFor();
    const token = await t.token('svc:clients:read');
    expect((await api(t, 'GET', `/api/v1/clients/${clientId}`, { token })).json.data.active).toBe(false);

    // The list searches and keeps its filter in the URL.
    await section('Clients');
    await page.getByLabel('Search').fill('Billing');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/\/admin\/clients\?q=Billing/);
    await page.getByRole('link', { name: `Billing ${XSS}` }).waitFor();
    await check('clients');
  });

  it('Clients: edits a client; deletes one only after confirming; pages beyond page one keeping the filter in the URL', async () => {
    const made = await createClient(t, { client_name: `Throwaway ${Date.now()}`, grant_types: ['client_credentials'] });
    const token = await t.token('svc:clients:read');
    await page.goto(`${origin}/admin/clients/${made.client_id}`);
    await page.getByRole('heading', { level: 1, name: made.client_name }).waitFor();
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await page.getByLabel('Client name').fill(`Renamed ${XSS}`);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: `Renamed ${XSS}` }).waitFor();
    expect((await api(t, 'GET', `/api/v1/clients/${made.client_id}`, { token })).json.data.client_name).toBe(`Renamed ${XSS}`);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    await check('client-edited');
    // Delete: cancelling the confirmation keeps the client; confirming deletes it.
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('dialog').getByText(`Delete Renamed ${XSS} for good?`).waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect((await api(t, 'GET', `/api/v1/clients/${made.client_id}`, { token })).status).toBe(200);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete', exact: true }).click();
    await page.waitForURL((u) => u.pathname === '/admin/clients');
    expect((await api(t, 'GET', `/api/v1/clients/${made.client_id}`, { token })).status).toBe(404);

    // Paging: 23 clients match "Paged" (written straight to storage: no rate budget), 20 a page.
    for (let i = 0; i < 23; i++) {
      const metadata = buildMetadata({ client_name: `Paged ${String(i).padStart(2, '0')}`, grant_types: ['client_credentials'], scope: 'svc:stats:read' }, undefined, t.app.ctx.config);
      await createClientRecord({ ctx: t.app.ctx, tenant: 'default' }, metadata);
    }
    await section('Clients');
    await page.getByLabel('Search').fill('Paged');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/\/admin\/clients\?q=Paged$/);
    await page.getByText('23 in total').waitFor();
    const rowsOf = async () => page.getByRole('table').getByRole('link').allTextContents();
    const first = await rowsOf();
    expect(first).toHaveLength(20);
    await page.getByRole('navigation', { name: 'Pagination' }).getByRole('link', { name: 'Next page' }).click();
    await page.waitForURL(/\/admin\/clients\?q=Paged&after=/);
    await page.getByRole('link', { name: 'First page' }).waitFor();
    await page.locator('.loading').first().waitFor({ state: 'detached', timeout: 10_000 });
    const second = await rowsOf();
    expect(second).toHaveLength(3);
    expect(second.every((n) => n.startsWith('Paged '))).toBe(true);
    expect(new Set([...first, ...second]).size).toBe(23);
    // The filter field still shows the filter on page two (a reload keeps both).
    await page.reload();
    expect(await page.getByLabel('Search').inputValue()).toBe('Paged');
    expect(await page.getByRole('navigation', { name: 'Pagination' }).getByRole('link', { name: 'Next page' }).count()).toBe(0);
    await check('clients-page-two');
  });

  let rpUser: TestUser;
  it('Users: creates a user, resets the password; the new password signs in, the old does not', async () => {
    await section('Users');
    await page.getByRole('link', { name: 'New user' }).click();
    const email = `carol-${Date.now()}@example.com`;
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill('Initial-Passw0rd-1');
    await page.getByLabel('Full name').fill(`Carol ${XSS}`);
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { level: 1, name: email }).waitFor();
    const id = page.url().split('/').pop()!;
    rpUser = { id, email, password: 'Initial-Passw0rd-1' };
    await page.getByRole('textbox', { name: 'New password' }).fill('short');
    await page.getByRole('button', { name: 'Set a new password' }).click();
    await page.locator('.field-error').first().waitFor();
    await page.getByRole('textbox', { name: 'New password' }).fill('Reset-Passw0rd-2');
    await page.getByRole('button', { name: 'Set a new password' }).click();
    await page.getByText('Password changed.', { exact: true }).waitFor();
    await check('user-detail');
    rpUser.password = 'Reset-Passw0rd-2';

    // Lock and unlock through the console.
    await page.getByRole('button', { name: 'Lock' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Lock' }).click();
    await page.getByRole('button', { name: 'Unlock' }).click();
    await page.getByText('Unlocked.', { exact: true }).waitFor();

    await section('Users');
    await page.getByRole('link', { name: email }).waitFor();
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    await check('users');
  });

  it('Sessions: revoking the RP user’s session makes the relying party’s refresh fail', async () => {
    const rp = await createClient(t, {
      client_name: 'Console RP', application_type: 'web', redirect_uris: [`${RP}/cb`], first_party: true,
      grant_types: ['authorization_code', 'refresh_token'], scope: 'openid offline_access',
    });
    const config = await oidc.discovery(new URL(t.issuer), rp.client_id, rp.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
    const other = await (await browser.newContext()).newPage();
    await other.route(`${RP}/**`, (route) => route.fulfill({ status: 200, body: 'rp' }));
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: `${RP}/cb`, scope: 'openid offline_access', state, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    await other.goto(url.href);
    await other.getByLabel('E-mail').fill(rpUser.email);
    await other.getByLabel('Password').fill('Initial-Passw0rd-1');
    await other.getByRole('button', { name: 'Sign in' }).click();
    // The old password is refused...
    await other.getByRole('alert').waitFor();
    expect(other.url()).not.toContain(`${RP}/cb`);
    await other.getByLabel('Password').fill(rpUser.password);
    await other.getByRole('button', { name: 'Sign in' }).click();
    // ...the reset one signs in.
    await other.waitForURL(`${RP}/cb**`);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(other.url()), { pkceCodeVerifier: verifier, expectedState: state });
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    await other.context().close();

    await section('Sessions');
    await page.getByLabel('Account ID').first().fill(rpUser.id);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(new RegExp(`username=${rpUser.id}`));
    await page.getByRole('cell', { name: rp.client_id }).waitFor();
    await check('sessions');
    await page.getByRole('button', { name: 'Revoke session' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke session' }).click();
    await page.getByText('Revoked.', { exact: true }).waitFor();
    await expect(oidc.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    // Bulk revoke without a filter: the API's 422 is shown at the fields, nothing is revoked.
    await page.getByRole('region', { name: 'Revoke all matching sessions' }).getByRole('button', { name: 'Revoke all matching sessions' }).click();
    await page.getByRole('dialog', { name: /Revoke every session/ }).getByRole('button', { name: 'Revoke all matching sessions' }).click();
    await page.locator('.field.invalid').first().waitFor();
  });

  it('Users: edits a user, resets MFA, shows the activity list, deletes one only after confirming', async () => {
    const token = await t.token('svc:users:read svc:audit:read');
    await page.goto(`${origin}/admin/users/${rpUser.id}`);
    await page.getByRole('heading', { level: 1, name: rpUser.email }).waitFor();
    // Activity: the user's own sign-ins of the Sessions step (the refused one and the good one).
    const activity = page.getByRole('region', { name: 'Activity' });
    await activity.getByRole('cell', { name: 'failed_login', exact: true }).first().waitFor();
    await activity.getByRole('cell', { name: 'login', exact: true }).first().waitFor();
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await page.getByLabel('Nickname').fill(`Caz ${XSS}`);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Saved.', { exact: true }).waitFor();
    expect((await api(t, 'GET', `/api/v1/users/${rpUser.id}`, { token })).json.data.nickname).toBe(`Caz ${XSS}`);
    // MFA reset, confirmed: the user's second factors are gone and the API records it.
    await t.app.ctx.storage.users.update('default', rpUser.id, { mfa_enabled: true, mfa_methods: ['totp'] });
    expect((await api(t, 'GET', `/api/v1/users/${rpUser.id}`, { token })).json.data.mfa.enabled).toBe(true);
    await page.getByRole('button', { name: 'Reset MFA' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Reset MFA' }).click();
    await page.getByText('Second factors removed.', { exact: true }).waitFor();
    const audit = await api(t, 'GET', '/api/v1/audit?type=user.mfa_reset&limit=100', { token });
    expect(JSON.stringify(audit.json.data)).toContain(rpUser.id);
    expect((await api(t, 'GET', `/api/v1/users/${rpUser.id}`, { token })).json.data.mfa).toMatchObject({ enabled: false, methods: [] });
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    await check('user-activity');

    // Delete another user: cancelling keeps it; confirming deletes it.
    const doomed = await createUser(t, { email: `doomed-${Date.now()}@example.com` });
    await page.goto(`${origin}/admin/users/${doomed.id}`);
    await page.getByRole('heading', { level: 1, name: doomed.email }).waitFor();
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect((await api(t, 'GET', `/api/v1/users/${doomed.id}`, { token })).status).toBe(200);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete', exact: true }).click();
    await page.waitForURL((u) => u.pathname === '/admin/users');
    // Deletion anonymises the account (its id stays for the audit trail): the e-mail is gone.
    const erased = await api(t, 'GET', `/api/v1/users/${doomed.id}`, { token });
    expect(erased.text).not.toContain(doomed.email);
    const deleted = await api(t, 'GET', '/api/v1/audit?type=user.deleted&limit=100', { token });
    expect(JSON.stringify(deleted.json.data)).toContain(doomed.id);
  });

  it('Signing keys: rotating in the console changes the published JWKS', async () => {
    const kids = async () => ((await (await fetch(`${t.url}/oidc/v1/jwks`)).json()) as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid).sort();
    const before = await kids();
    await section('Signing keys');
    await check('signing-keys');
    await page.getByRole('button', { name: 'Rotate keys' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Rotate keys' }).click();
    await page.getByText('Keys rotated.', { exact: true }).waitFor();
    const after = await kids();
    expect(after).not.toEqual(before);
    expect(after.some((k) => !before.includes(k))).toBe(true);

    // Retire one key (an old one, now expiring), then retire-expired: it leaves the JWKS.
    const old = before.find((k) => after.includes(k))!;
    expect(old).toBeTruthy();
    const row = page.getByRole('row').filter({ hasText: old });
    await row.getByRole('button', { name: 'Retire' }).click();
    await page.getByRole('dialog', { name: `Mark key ${old} for retirement?` }).getByRole('button', { name: 'Retire' }).click();
    await page.getByText('Key marked for retirement.', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Retire expired keys' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Retire expired keys' }).click();
    await page.getByText('Expired keys retired.', { exact: true }).waitFor();
    expect(await kids()).not.toContain(old);
    await page.getByRole('row').filter({ hasText: old }).getByText('retired', { exact: true }).waitFor();
    await check('signing-keys-retired');
  });

  it('Registration tokens: creates one shown once and revokes it', async () => {
    await section('Registration tokens');
    await page.getByLabel('Note').fill(`CI ${XSS}`);
    await page.getByRole('button', { name: 'Create' }).click();
    const token = await page.getByRole('textbox', { name: 'Registration token' }).inputValue();
    expect(token.length).toBeGreaterThan(20);
    await page.getByRole('cell', { name: `CI ${XSS}` }).waitFor();
    await check('registration-tokens');
    await page.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('No active registration tokens.', { exact: true }).waitFor();
  });

  it('Audit log: filters, detail, and a CSV export equal row for row to the API, formulas neutralised', async () => {
    // An entry whose attacker-chosen fields start with spreadsheet formula characters.
    const token = await t.token('svc:clients:write svc:audit:read');
    await api(t, 'POST', '/api/v1/clients', { token, body: { client_name: '=HYPERLINK("http://evil.example","x")', grant_types: ['client_credentials'] }, headers: { 'user-agent': '@SUM(1+1)' } });
    await section('Audit log');
    await page.getByLabel('Event type').selectOption('client.created');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/type=client\.created/);
    await page.getByRole('table').waitFor();
    await check('audit-log');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: /export|csv/i }).click()]);
    const csv = await (await import('node:fs/promises')).readFile((await download.path())!, 'utf8');
    const rows = csv.trim().split('\r\n');
    expect(rows[0]).toBe('id,timestamp,type,status,username,user_id,client_id,ip_address,user_agent,tenant_id,details');
    const listed = await api(t, 'GET', '/api/v1/audit?type=client.created&limit=100', { token });
    expect(rows.slice(1).map((r) => r.split(',')[0])).toEqual(listed.json.data.map((e: { id: string }) => e.id));
    expect(csv).toContain(",'@SUM(1+1),");
    expect(csv).not.toMatch(/(^|,)[=+\-@]/m);
    // Detail view; the stored details are shown as text.
    await page.getByRole('table').getByRole('link').first().click();
    await page.getByRole('heading', { name: 'Details' }).waitFor();
    await check('audit-detail');
  });

  it('Settings: the tenant admin edits the tenant’s own sections; errors at their field; secrets write-only', async () => {
    const token = await t.token('svc:config:read');
    await section('Settings');
    await page.getByRole('button', { name: 'Save Application' }).waitFor();
    await check('settings');
    // A value beyond the platform ceiling: the API's 422 is shown at that field; nothing is stored.
    await page.getByRole('button', { name: 'OpenID Connect', exact: true }).click();
    await page.waitForURL(/section=oidc/);
    await page.getByLabel('ttl.access_token').fill('86401');
    await page.getByRole('button', { name: 'Save OpenID Connect' }).click();
    await page.locator('.field.invalid').first().waitFor();
    expect(await page.getByLabel('ttl.access_token').getAttribute('aria-invalid')).toBe('true');
    await check('settings-errors');
    expect((await api(t, 'GET', '/api/v1/config', { token })).json.data).toEqual({});
    await page.getByLabel('ttl.access_token').fill('1800');
    await page.getByRole('button', { name: 'Save OpenID Connect' }).click();
    await page.getByText('Saved.', { exact: true }).last().waitFor();
    expect((await api(t, 'GET', '/api/v1/config', { token })).json.data.oidc).toEqual({ ttl: { access_token: 1800 } });
    // A secret is sent once and never shown again: the field comes back empty, marked as stored.
    const secret = `console-smtp-${Date.now()}`;
    await page.getByRole('button', { name: 'Integrations', exact: true }).click();
    await page.getByLabel('smtp.host').fill('smtp.example.test');
    await page.getByLabel('smtp.password', { exact: true }).fill(secret);
    await page.getByRole('button', { name: 'Save Integrations' }).click();
    await page.getByRole('checkbox', { name: /smtp\.password/ }).waitFor();
    expect(await page.getByLabel('smtp.password', { exact: true }).inputValue()).toBe('');
    expect(await page.content()).not.toContain(secret);
    const read = await api(t, 'GET', '/api/v1/config', { token });
    expect(read.json.data.integrations.smtp).toEqual({ host: 'smtp.example.test', password: MASK });
    // Saving again without touching it keeps the stored secret.
    await page.getByLabel('smtp.host').fill('mail.example.test');
    await page.getByRole('button', { name: 'Save Integrations' }).click();
    await expect.poll(async () => ((await t.app.ctx.storage.tenantConfig.get('default')).integrations as { smtp: { host: string } }).smtp.host).toBe('mail.example.test');
    const stored = (await t.app.ctx.storage.tenantConfig.get('default')).integrations as { smtp: { host: string; password: string } };
    expect(stored.smtp.host).toBe('mail.example.test');
    expect(stored.smtp.password).toMatch(/^v1\./);
    await check('settings-secret');
    // Back to the global configuration: an SMTP server that does not exist would hold up later sign-ups.
    const writer = await t.token('svc:config:write');
    for (const section of ['integrations', 'oidc']) expect((await api(t, 'PUT', `/api/v1/config/${section}`, { token: writer, body: {} })).status).toBe(200);
  });

  it('Settings, keyboard, dark theme and CSP', async () => {
    await section('Settings');
    // Keyboard: after a load the skip link is the first stop, and it moves focus to the content.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).toBe('solid');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
    await page.getByLabel('Theme').selectOption('dark');
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    await section('Overview');
    await check('overview-dark');
    // Languages: French labels and <html lang>, then back to English.
    await page.getByLabel('Language').selectOption('fr');
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('fr');
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Journal d’audit' }).waitFor();
    await page.getByLabel('Langue').selectOption('en');
    expect(watch.problems).toEqual([]);
  });

  it('renews an expired token silently (hidden iframe, prompt=none) without showing the sign-in page', async () => {
    const key = (await page.evaluate(() => Object.keys(sessionStorage).find((k) => k.startsWith('oidc.user:'))))!;
    const before = JSON.parse((await page.evaluate((k) => sessionStorage.getItem(k), key))!) as { access_token: string; expires_at: number };
    await page.evaluate(([k, v]) => sessionStorage.setItem(k!, v!), [key, JSON.stringify({ ...before, expires_at: Math.floor(Date.now() / 1000) - 10 })]);
    const signInPages: string[] = [];
    page.on('framenavigated', (f) => {
      if (f === page.mainFrame() && f.url().includes('/interaction/')) signInPages.push(f.url());
    });
    await page.goto(`${origin}/admin/keys`);
    await page.getByRole('heading', { level: 1, name: 'Signing keys' }).waitFor();
    await page.getByRole('table').waitFor();
    const after = JSON.parse((await page.evaluate((k) => sessionStorage.getItem(k), key))!) as { access_token: string; expires_at: number };
    expect(after.access_token).not.toBe(before.access_token);
    expect(after.expires_at).toBeGreaterThan(Date.now() / 1000);
    expect(signInPages).toEqual([]);
    expect(watch.problems).toEqual([]);
  });

  it('a user-role account gets the 403 page, and its token 403 from the API', async () => {
    const plain = await createUser(t, { role: 'user' });
    const ctx = await browser.newContext();
    const p = await ctx.newPage();
    p.setDefaultTimeout(10_000);
    await signInToConsole(p, `${origin}/admin`, plain.email, plain.password);
    await p.getByRole('heading', { name: 'Access denied' }).waitFor();
    await expectAccessible(p, 'forbidden');
    await screenshot(p, 'forbidden');
    // The user's own token (kept by the console) is refused by the Management API.
    const raw = await p.evaluate(() => Object.entries(sessionStorage).find(([k]) => k.startsWith('oidc.user:'))?.[1]);
    expect(raw).toBeTruthy();
    const access = (JSON.parse(raw!) as { access_token: string }).access_token;
    const res = await api(t, 'GET', '/api/v1/clients', { token: access });
    expect(res.status).toBe(403);
    expect(res.json.type).toBe('urn:svc:error:insufficient-scope');
    await ctx.close();
  });
});
