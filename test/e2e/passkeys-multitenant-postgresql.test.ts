/**
 * Passkeys across tenants (multi-tenant mode on PostgreSQL + Redis): the RP ID is the tenant's
 * host, so a passkey made at tenant A is scoped to A's host by the authenticator, and an assertion
 * of it relayed to tenant B (with B's own challenge) is refused by B: B's storage does not know the
 * credential (row-level security), and even with the same credential row planted in B, the RP ID
 * hash and origin checks fail.
 */
import { createHash, randomBytes } from 'node:crypto';
import { type Browser, type Page } from 'playwright-core';
import { TENANT_SUBDOMAINS, launchBrowser } from '../helpers/browser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, dropRedisKeys, startTestApp, type TestApp } from '../helpers/app.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { send } from '../helpers/tenant-http.js';
import { pageWithAuthenticator, type AuthenticatorPage } from '../helpers/webauthn.js';

const RESOURCE = 'urn:svc:api:v1';
const run = randomBytes(3).toString('hex');
const ACME = `pkacme-${run}`;
const BETA = `pkbeta-${run}`;
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

describe('passkeys across tenants (PostgreSQL, multi-tenant)', () => {
  let t: TestApp;
  let port: number;
  let prefix: string;
  let browser: Browser;
  let rp: RpServer;
  let a: AuthenticatorPage;
  const clients: Record<string, string> = {};
  const users: Record<string, { id: string; email: string; password: string }> = {};

  const issuerOf = (tenant: string) => `http://${tenant}.localhost:${port}/oidc/v1`;

  async function platformToken(scope: string): Promise<string> {
    const res = await send(port, 'POST', '/oidc/v1/token', { tenant: '_platforms', headers: { authorization: basic(BOOTSTRAP_ID, BOOTSTRAP_SECRET) }, form: { grant_type: 'client_credentials', resource: RESOURCE, scope } });
    if (res.status !== 200) throw new Error(`platform token: ${res.status} ${res.text}`);
    return res.json.access_token as string;
  }

  beforeAll(async () => {
    prefix = uniquePrefix('pk');
    rp = await startRpServer();
    t = await startTestApp({
      MULTI_TENANCY_ENABLED: 'true',
      STORAGE_ADAPTER: 'postgresql',
      REDIS_URL: SHARED_REDIS_URL,
      REDIS_KEY_PREFIX: prefix,
      SVC_BOOTSTRAP_ADMIN_EMAIL: 'root@platform.example.com',
      SVC_BOOTSTRAP_ADMIN_PASSWORD: 'Platform-Admin-Passw0rd',
    });
    port = t.app.port;
    browser = await launchBrowser([TENANT_SUBDOMAINS]);
    const write = await platformToken('svc:tenants:write');
    const cross = await platformToken('svc:cross-tenant:write svc:clients:write svc:users:write');
    for (const tenant of [ACME, BETA]) {
      const created = await send(port, 'POST', '/api/v1/tenants', { token: write, body: { slug: tenant, display_name: `Tenant ${tenant}` } });
      expect(created.status, created.text).toBe(201);
      const client = await send(port, 'POST', '/api/v1/clients', {
        tenant,
        token: cross,
        body: { client_name: 'Web', application_type: 'web', redirect_uris: [`${rp.origin}/cb`], grant_types: ['authorization_code'], scope: 'openid profile email', first_party: true },
      });
      expect(client.status, client.text).toBe(201);
      clients[tenant] = client.json.data.client_id;
      // The same person in both tenants (same e-mail): two separate accounts.
      const email = `same-${run}@example.com`;
      const user = await send(port, 'POST', '/api/v1/users', { tenant, token: cross, body: { email, password: 'Correct-Horse-Battery-9', email_verified: true } });
      expect(user.status, user.text).toBe(201);
      users[tenant] = { id: user.json.data.id, email, password: 'Correct-Horse-Battery-9' };
    }
    a = await pageWithAuthenticator(browser);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rp?.close();
    if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
  });

  async function openSignIn(page: Page, tenant: string) {
    const verifier = randomBytes(32).toString('base64url');
    const params = new URLSearchParams({
      client_id: clients[tenant]!,
      redirect_uri: `${rp.origin}/cb`,
      response_type: 'code',
      scope: 'openid',
      state: randomBytes(8).toString('hex'),
      nonce: randomBytes(8).toString('hex'),
      prompt: 'login',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    await page.goto(`${issuerOf(tenant)}/auth?${params}`);
  }

  const audits = async (tenant: string, type: string) => (await t.app.ctx.storage.audit.list(tenant, { type }, { limit: 50, include_count: false })).items;

  /**
   * At B's sign-in page: B's options (B's challenge, bound to B's interaction), signed at A's origin
   * by A's passkey (a relay), then posted to B's passkey action. Returns B's answer page.
   */
  async function relayToBeta(): Promise<void> {
    await openSignIn(a.page, BETA);
    const options = await a.page.evaluate(async () => {
      const box = document.querySelector('[data-passkey]') as HTMLElement;
      const form = box.closest('form') as HTMLFormElement;
      const body = new URLSearchParams({ csrf_token: (form.elements.namedItem('csrf_token') as HTMLInputElement).value });
      return (await fetch(box.getAttribute('data-options')!, { method: 'POST', body })).json();
    });
    expect(options.rpId).toBe(`${BETA}.localhost`);
    // The same tab (the virtual authenticator belongs to it) goes to A's origin to sign, then back.
    const betaPage = a.page.url();
    await a.page.goto(`${new URL(issuerOf(ACME)).origin}/account`);
    const credential = await a.page.evaluate(async (challenge: string) => {
      const dec = (s: string) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
      const enc = (b: ArrayBuffer) => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
      const cred = (await navigator.credentials.get({ publicKey: { challenge: dec(challenge), rpId: location.hostname, userVerification: 'required' } })) as PublicKeyCredential;
      const r = cred.response as AuthenticatorAssertionResponse;
      return JSON.stringify({
        id: cred.id,
        rawId: enc(cred.rawId),
        type: cred.type,
        clientExtensionResults: {},
        response: { clientDataJSON: enc(r.clientDataJSON), authenticatorData: enc(r.authenticatorData), signature: enc(r.signature), userHandle: r.userHandle ? enc(r.userHandle) : undefined },
      });
    }, options.challenge as string);
    await a.page.goto(betaPage);
    const answered = a.page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/passkey'));
    await a.page.evaluate((json: string) => {
      const box = document.querySelector('[data-passkey]') as HTMLElement;
      const form = box.closest('form') as HTMLFormElement;
      (box.querySelector('input[name=credential]') as HTMLInputElement).value = json;
      form.setAttribute('action', box.getAttribute('data-action')!);
      form.submit();
    }, credential);
    expect((await answered).status()).toBe(401);
    await a.page.waitForLoadState();
  }

  it("registers a passkey at tenant A, scoped by the authenticator to A's host, and signs in with it there", async () => {
    await openSignIn(a.page, ACME);
    await a.page.getByLabel('E-mail').fill(users[ACME]!.email);
    await a.page.getByLabel('Password').fill(users[ACME]!.password);
    await a.page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await a.page.waitForURL(`${rp.origin}/cb**`);
    await a.page.goto(`${new URL(issuerOf(ACME)).origin}/account`);
    await a.page.getByRole('button', { name: /add a passkey/i }).click();
    await a.page.waitForURL(/passkey=added/);
    const held = await a.credentials();
    expect(held.map((c) => c.rpId)).toEqual([`${ACME}.localhost`]);
    expect(await t.app.ctx.storage.webauthn.listCredentials(ACME, users[ACME]!.id)).toHaveLength(1);
    expect(await t.app.ctx.storage.webauthn.listCredentials(BETA, users[ACME]!.id)).toEqual([]);

    await openSignIn(a.page, ACME);
    await a.page.getByRole('button', { name: /passkey/i }).click();
    await a.page.waitForURL(`${rp.origin}/cb**`);
    expect(new URL(a.page.url()).searchParams.get('code')).toBeTruthy();
  });

  it('at tenant B the authenticator offers nothing: no passkey of B exists there', async () => {
    await openSignIn(a.page, BETA);
    await a.page.getByRole('button', { name: /passkey/i }).click();
    await expect.poll(() => a.page.locator('[data-passkey-status]').textContent()).toContain('not used');
    expect(a.page.url().startsWith(issuerOf(BETA))).toBe(true);
  });

  it("A's passkey relayed to B with B's challenge is refused: B does not know the credential", async () => {
    await relayToBeta();
    expect(a.page.url().startsWith(rp.origin)).toBe(false);
    expect(await a.page.getByRole('alert').textContent()).toContain('could not be used');
    await expect.poll(async () => (await audits(BETA, 'failed_login')).find((e) => e.details.method === 'passkey')?.details.reason).toBe('unknown_credential');
  });

  it('even with the same credential row planted in B, the RP ID and origin checks refuse it', async () => {
    const [row] = await t.app.ctx.storage.webauthn.listCredentials(ACME, users[ACME]!.id);
    await t.app.ctx.storage.webauthn.createCredential(BETA, { ...row!, user_id: users[BETA]!.id });
    // The user handle names A's user id; the planted row names B's: make them agree so only the RP checks remain.
    await t.sql('UPDATE users SET id = ? WHERE tenant_id = ? AND id = ?', [users[ACME]!.id, BETA, users[BETA]!.id]);
    await t.sql('UPDATE webauthn_credentials SET user_id = ? WHERE tenant_id = ?', [users[ACME]!.id, BETA]);
    await relayToBeta();
    expect(a.page.url().startsWith(rp.origin)).toBe(false);
    // Audit entries are written behind the response: poll for them.
    await expect.poll(async () => (await audits(BETA, 'failed_login')).filter((e) => e.details.method === 'passkey').map((e) => e.details.reason)).toContain('invalid');
    expect((await audits(BETA, 'login')).length).toBe(0);
  });
});
