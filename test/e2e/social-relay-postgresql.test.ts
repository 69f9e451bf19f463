/**
 * Multi-tenant social login through the `_ops` relay (PostgreSQL + Redis): two tenants share ONE
 * callback registered at the upstream, `{_ops issuer}/social/rogue/callback`. `_ops` reads only the
 * platform-signed envelope of the state and sends the browser to the tenant it names; the tenant
 * checks the envelope names it and then its own sealed, single-use state. A state from tenant A is
 * refused at tenant B. The tenant override of the provider section keeps its secret sealed.
 * Linking through the relay: an existing user of tenant A with the same verified e-mail is linked
 * only after that user's password (cancel and a wrong password link nothing). The admin console
 * of tenant A shows the `_ops` callback URL to register. A cancelled sign-in and a link page keep
 * the sign-in's `ui_locales` on A's pages; their language switcher never re-runs the callback.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { TENANT_SUBDOMAINS, launchBrowser } from '../helpers/browser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RelayState } from '../../src/tenancy/ops.js';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, dropRedisKeys, startTestApp, type TestApp } from '../helpers/app.js';
import { ensureConsoleBuilt, expectAccessible, screenshot, signInToConsole } from '../helpers/console.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { startRogueOidc, type RogueOidc } from '../helpers/rogue-oidc.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { send } from '../helpers/tenant-http.js';

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

describe('social login relay through `_ops` (multi-tenant, PostgreSQL + Redis)', () => {
  let t: TestApp;
  let port: number;
  let prefix: string;
  let rogue: RogueOidc;
  let browser: Browser;
  let rp: RpServer;
  let REDIRECT: string;
  let dir: string;
  const run = randomBytes(3).toString('hex');
  const A = `soc-a-${run}`;
  const B = `soc-b-${run}`;
  const clients: Record<string, { client_id: string; client_secret: string }> = {};

  const issuerOf = (tenant: string) => `http://${tenant}.localhost:${port}/oidc/v1`;

  async function platformToken(scope: string): Promise<string> {
    const res = await send(port, 'POST', '/oidc/v1/token', { tenant: '_platforms', headers: { authorization: basic(BOOTSTRAP_ID, BOOTSTRAP_SECRET) }, form: { grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope } });
    expect(res.status, res.text).toBe(200);
    return res.json.access_token as string;
  }

  beforeAll(async () => {
    ensureConsoleBuilt();
    rogue = await startRogueOidc();
    rp = await startRpServer();
    REDIRECT = `${rp.origin}/cb`;
    dir = mkdtempSync(join(tmpdir(), 'svc-social-'));
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ features: { social_login: { relay: true, providers: { rogue: { type: 'oidc', enabled: true, issuer: rogue.issuer, client_id: rogue.clientId, client_secret: rogue.clientSecret, display_name: 'Rogue ID' } } } } }));
    prefix = uniquePrefix('social');
    t = await startTestApp({ SVC_CONFIG_FILE: file, MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', REDIS_URL: SHARED_REDIS_URL, REDIS_KEY_PREFIX: prefix });
    port = t.app.port;
    browser = await launchBrowser([TENANT_SUBDOMAINS]);
    const token = await platformToken('svc:tenants:write svc:cross-tenant:write svc:clients:write');
    for (const tenant of [A, B]) {
      expect((await send(port, 'POST', '/api/v1/tenants', { token, body: { slug: tenant, display_name: tenant } })).status).toBe(201);
      const client = await send(port, 'POST', '/api/v1/clients', { tenant, token, body: { client_name: 'Web', application_type: 'web', redirect_uris: [REDIRECT], grant_types: ['authorization_code'], scope: 'openid email', first_party: true } });
      expect(client.status, client.text).toBe(201);
      clients[tenant] = client.json.data;
      // Sign-up on, through the tenant config API (the tenant override path).
      const put = await send(port, 'PUT', `/api/v1/tenants/${tenant}/config/security`, { token, body: { signup: { enabled: true } } });
      expect(put.status, put.text).toBe(200);
    }
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rogue?.close();
    await rp?.close();
    if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const countIn = async (tenant: string, table: string) => Number(Object.values((await t.sql(`SELECT count(*) AS n FROM ${table} WHERE tenant_id = ?`, [tenant]))[0]!)[0]);

  /** From tenant's authorization endpoint to the upstream's page; the callback URL it offers. */
  async function toUpstream(tenant: string, o: { uiLocales?: string; button?: string } = {}): Promise<{ context: BrowserContext; page: Page; callback: string; verifier: string; interaction: string }> {
    const context = await browser.newContext({ locale: 'en-US' });
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const verifier = randomBytes(32).toString('base64url');
    const params = new URLSearchParams({ client_id: clients[tenant]!.client_id, response_type: 'code', redirect_uri: REDIRECT, scope: 'openid email', code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256', state: 'st', nonce: 'nn', ...(o.uiLocales ? { ui_locales: o.uiLocales } : {}) });
    await page.goto(`${issuerOf(tenant)}/auth?${params}`);
    const interaction = new URL(page.url()).pathname;
    await page.getByRole('link', { name: o.button ?? 'Continue with Rogue ID' }).click();
    await page.waitForURL((u) => u.href.startsWith(rogue.issuer));
    return { context, page, callback: (await page.locator('#continue').getAttribute('href'))!, verifier, interaction };
  }

  it('registers one callback for every tenant: the _ops one', async () => {
    const a = await toUpstream(A);
    const b = await toUpstream(B);
    const ops = `http://_ops.localhost:${port}/oidc/v1/social/rogue/callback`;
    expect(a.callback.split('?')[0]).toBe(ops);
    expect(b.callback.split('?')[0]).toBe(ops);
    await a.context.close();
    await b.context.close();
  });

  it('signs in at tenant A through the relay: _ops forwards to A, A creates the user in A only', async () => {
    rogue.claims = { sub: `relay-user-${run}`, email: `relay-${run}@example.com`, email_verified: true };
    const usersB = await countIn(B, 'users');
    const { context, page, verifier } = await toUpstream(A);
    await page.locator('#continue').click();
    await page.waitForURL((u) => u.href.startsWith(REDIRECT));
    const code = new URL(page.url()).searchParams.get('code')!;
    await context.close();
    const token = await send(port, 'POST', '/oidc/v1/token', { sub: A, headers: { authorization: basic(clients[A]!.client_id, clients[A]!.client_secret) }, form: { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier } });
    expect(token.status, token.text).toBe(200);
    const sub = JSON.parse(Buffer.from(token.json.id_token.split('.')[1], 'base64url').toString()).sub as string;
    expect(await t.sql('SELECT provider, subject, tenant_id FROM social_identities WHERE user_id = ?', [sub])).toEqual([{ provider: 'rogue', subject: `relay-user-${run}`, tenant_id: A }]);
    expect(await countIn(B, 'users')).toBe(usersB);
  });

  it("refuses tenant A's state at tenant B (directly, and re-wrapped for B), creating nothing in either", async () => {
    rogue.claims = { sub: `cross-${run}`, email: `cross-${run}@example.com`, email_verified: true };
    const before = { a: await countIn(A, 'users'), b: await countIn(B, 'users'), linksB: await countIn(B, 'social_identities') };
    const { context, page, callback } = await toUpstream(A);
    const tokens = rogue.tokenRequests;
    const query = new URL(callback).searchParams;

    // A's answer sent straight to B's callback: the envelope names A.
    let res = await page.goto(`${issuerOf(B)}/social/rogue/callback?${query}`);
    expect(res?.status()).toBe(400);
    expect(await page.getByRole('heading', { name: 'Sign-in could not be completed' }).count()).toBe(1);

    // Even an envelope naming B (made with the platform key) around A's sealed state fails at B.
    const relay = new RelayState(t.app.ctx.sealer.derive('ops-relay-state'));
    const inner = relay.read(query.get('state')!)!;
    expect(inner.tenant).toBe(A);
    const forged = new URLSearchParams(query);
    forged.set('state', relay.sign(B, inner.state));
    res = await page.goto(`${issuerOf(B)}/social/rogue/callback?${forged}`);
    expect(res?.status()).toBe(400);
    expect(await page.getByRole('heading', { name: 'Sign-in could not be completed' }).count()).toBe(1);

    // And _ops sends A's own answer to A only.
    const hop = await send(port, 'GET', `/oidc/v1/social/rogue/callback?${query}`, { sub: '_ops' });
    expect(hop.status).toBe(302);
    expect(hop.headers.location).toBe(`${issuerOf(A)}/social/rogue/callback?${query}`);
    await context.close();

    expect(rogue.tokenRequests).toBe(tokens);
    expect(await countIn(A, 'users')).toBe(before.a);
    expect(await countIn(B, 'users')).toBe(before.b);
    expect(await countIn(B, 'social_identities')).toBe(before.linksB);
  });

  it('links an existing user of tenant A through the relay only after the password: cancel and a wrong password link nothing', async () => {
    const email = `linked-${run}@example.com`;
    const password = 'Relay-Link-Passw0rd!';
    const token = await platformToken('svc:users:write svc:cross-tenant:write');
    const created = await send(port, 'POST', '/api/v1/users', { tenant: A, token, body: { email, password, email_verified: true } });
    expect(created.status, created.text).toBe(201);
    const userId = created.json.data.id as string;
    rogue.claims = { sub: `link-${run}`, email, email_verified: true };
    const linksOf = () => t.sql('SELECT provider, subject, tenant_id FROM social_identities WHERE user_id = ?', [userId]);
    const before = { a: await countIn(A, 'users'), b: await countIn(B, 'users'), linksB: await countIn(B, 'social_identities') };

    // Through _ops to A's link page; cancelled: back at A's sign-in page, nothing linked.
    let flow = await toUpstream(A);
    expect(flow.callback.startsWith(`http://_ops.localhost:${port}/oidc/v1/social/rogue/callback?`)).toBe(true);
    await flow.page.locator('#continue').click();
    await flow.page.getByRole('heading', { name: 'Link your Rogue ID account' }).waitFor();
    expect(new URL(flow.page.url()).host).toBe(`${A}.localhost:${port}`);
    await flow.page.getByRole('button', { name: 'Cancel' }).click();
    await flow.page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await linksOf()).toEqual([]);
    await flow.context.close();

    // Wrong password: the form again with an error, nothing linked.
    flow = await toUpstream(A);
    await flow.page.locator('#continue').click();
    await flow.page.getByLabel('Password').fill('not-the-password');
    await flow.page.getByRole('button', { name: 'Link and sign in' }).click();
    await expect.poll(() => flow.page.getByRole('alert').textContent()).toContain('That password is not correct.');
    expect(await linksOf()).toEqual([]);

    // Right password: linked in A, signed in as that user (A's token endpoint says so).
    await flow.page.getByLabel('Password').fill(password);
    await flow.page.getByRole('button', { name: 'Link and sign in' }).click();
    await flow.page.waitForURL((u) => u.href.startsWith(REDIRECT));
    const code = new URL(flow.page.url()).searchParams.get('code')!;
    await flow.context.close();
    const res = await send(port, 'POST', '/oidc/v1/token', { sub: A, headers: { authorization: basic(clients[A]!.client_id, clients[A]!.client_secret) }, form: { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: flow.verifier } });
    expect(res.status, res.text).toBe(200);
    expect(JSON.parse(Buffer.from(res.json.id_token.split('.')[1], 'base64url').toString()).sub).toBe(userId);
    expect(await linksOf()).toEqual([{ provider: 'rogue', subject: `link-${run}`, tenant_id: A }]);
    expect(await countIn(A, 'users')).toBe(before.a);
    expect(await countIn(B, 'users')).toBe(before.b);
    expect(await countIn(B, 'social_identities')).toBe(before.linksB);
  }, 90_000);

  it("ends a cancelled sign-in through the relay on A's page in the sign-in's language (ui_locales); its switcher leads back to the sign-in, never to the callback, and writes no failed login", async () => {
    const failedLogins = async () => {
      await t.app.ctx.audit.drain();
      return Number(Object.values((await t.sql("SELECT count(*) AS n FROM audit_entries WHERE tenant_id = ? AND type = 'social_login' AND status = 'failed'", [A]))[0]!)[0]);
    };
    rogue.mode = 'error';
    try {
      const { context, page, interaction } = await toUpstream(A, { uiLocales: 'de', button: 'Weiter mit Rogue ID' });
      expect(interaction).toMatch(/^\/oidc\/v1\/interaction\/[A-Za-z0-9_-]+$/);
      const answer = page.waitForResponse((r) => r.url().startsWith(`${issuerOf(A)}/social/rogue/callback`));
      await page.locator('#continue').click();
      expect((await answer).status()).toBe(401);
      await page.getByRole('heading', { name: 'Anmeldung abgebrochen' }).waitFor();
      expect(new URL(page.url()).host).toBe(`${A}.localhost:${port}`);
      expect(await page.locator('html').getAttribute('lang')).toBe('de');
      expect(await page.getByRole('link', { name: 'Zurück zur Anmeldung' }).getAttribute('href')).toBe(interaction);
      const hrefs = await page.locator('nav.languages a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
      expect(hrefs).toEqual(['en', 'fr', 'de', 'es'].map((l) => `${interaction}?lang=${l}`));
      const failed = await failedLogins();
      await page.getByRole('link', { name: 'Español' }).click();
      await page.getByRole('heading', { name: 'Iniciar sesión' }).waitFor();
      expect(new URL(page.url()).pathname).toBe(interaction);
      expect(await failedLogins()).toBe(failed);
      await context.close();
    } finally {
      rogue.mode = 'ok';
    }
  });

  it("keeps a link page in the sign-in's language after a wrong password (ui_locales)", async () => {
    const email = `link-de-${run}@example.com`;
    const token = await platformToken('svc:users:write svc:cross-tenant:write');
    const created = await send(port, 'POST', '/api/v1/users', { tenant: A, token, body: { email, password: 'Relay-Link-Passw0rd!', email_verified: true } });
    expect(created.status, created.text).toBe(201);
    rogue.claims = { sub: `link-de-${run}`, email, email_verified: true };
    const flow = await toUpstream(A, { uiLocales: 'de', button: 'Weiter mit Rogue ID' });
    await flow.page.locator('#continue').click();
    await flow.page.getByRole('heading', { name: 'Ihr Rogue ID-Konto verknüpfen' }).waitFor();
    await flow.page.getByLabel('Passwort').fill('not-the-password');
    await flow.page.getByRole('button', { name: 'Verknüpfen und anmelden' }).click();
    await expect.poll(() => flow.page.getByRole('alert').textContent()).toContain('Das Passwort ist nicht korrekt.');
    expect(await flow.page.locator('html').getAttribute('lang')).toBe('de');
    await flow.context.close();
  });

  it("shows the _ops callback URL in tenant A's admin console and the platform's API (relay on)", async () => {
    const ops = `http://_ops.localhost:${port}/oidc/v1/social/rogue/callback`;
    const token = await platformToken('svc:users:write svc:cross-tenant:write svc:cross-tenant:read');
    const api = await send(port, 'GET', `/api/v1/tenants/${A}/config/social-callbacks`, { token });
    expect(api.status, api.text).toBe(200);
    expect(api.json.data.relay).toBe(true);
    expect(api.json.data.providers.find((p: { name: string }) => p.name === 'rogue')).toEqual({ name: 'rogue', display_name: 'Rogue ID', preset: null, enabled: true, callback_url: ops });
    expect(api.json.data.providers.find((p: { name: string }) => p.name === 'google').callback_url).toBe(`http://_ops.localhost:${port}/oidc/v1/social/google/callback`);

    const email = `console-${run}@example.com`;
    const password = 'Tenant-Admin-Passw0rd';
    const created = await send(port, 'POST', '/api/v1/users', { tenant: A, token, body: { email, password, role: 'admin' } });
    expect(created.status, created.text).toBe(201);
    const context = await browser.newContext({ locale: 'en-US' });
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await signInToConsole(page, `http://${A}.localhost:${port}/admin`, email, password);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Settings', exact: true }).click();
    await page.getByRole('button', { name: 'Features', exact: true }).click();
    const table = page.getByRole('table', { name: 'Social login callback URLs' });
    await table.waitFor();
    expect(await page.getByText('Callbacks go through the _ops relay', { exact: false }).count()).toBe(1);
    const row = table.getByRole('row', { name: /Rogue ID/ });
    expect(await row.locator('code').textContent()).toBe(ops);
    expect(await row.getByText('Offered at sign-in').count()).toBe(1);
    await page.locator('.loading').first().waitFor({ state: 'detached' });
    await expectAccessible(page, 'relay-social-callbacks');
    await screenshot(page, 'relay-social-callbacks');
    await context.close();
  }, 60_000);

  it('keeps a tenant override of a provider secret sealed at rest and masked in the config API; the override acts', async () => {
    const token = await platformToken('svc:cross-tenant:write svc:cross-tenant:read');
    const put = await send(port, 'PUT', `/api/v1/tenants/${B}/config/features`, { token, body: { social_login: { providers: { github: { enabled: true, client_id: 'b-github', client_secret: 'b-github-secret-value' } } } } });
    expect(put.status, put.text).toBe(200);
    expect(put.json.data.features.social_login.providers.github.client_secret).toBe('********');
    const get = await send(port, 'GET', `/api/v1/tenants/${B}/config`, { token });
    expect(JSON.stringify(get.json)).not.toContain('b-github-secret-value');
    const [row] = await t.sql("SELECT data::text AS data FROM tenant_config WHERE tenant_id = ? AND section = 'features'", [B]);
    expect(String(row!.data)).not.toContain('b-github-secret-value');
    // B's sign-in page now offers GitHub as well; A's does not.
    for (const [tenant, offered] of [[B, 1], [A, 0]] as const) {
      const context = await browser.newContext();
      const page = await context.newPage();
      const params = new URLSearchParams({ client_id: clients[tenant]!.client_id, response_type: 'code', redirect_uri: REDIRECT, scope: 'openid', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' });
      await page.goto(`${issuerOf(tenant)}/auth?${params}`);
      expect(await page.getByRole('link', { name: 'Continue with Rogue ID' }).count()).toBe(1);
      expect(await page.getByRole('link', { name: 'Continue with GitHub' }).count()).toBe(offered);
      await context.close();
    }
    // A type "oidc" provider without an issuer is refused with a 422 naming the field.
    const bad = await send(port, 'PUT', `/api/v1/tenants/${B}/config/features`, { token, body: { social_login: { providers: { corp: { type: 'oidc', enabled: true, client_id: 'x', client_secret: 'y' } } } } });
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.json)).toContain('social_login.providers.corp.issuer');
  });
});
