/**
 * The administration console never loses data silently (fourth audit of 2026-12-01): saving a
 * Settings section keeps what the form does not show, editing a client keeps the fields the form
 * lacks (and an unset scope unset), an emptied user field is cleared; and an admin demoted while
 * the console is open gets the 403 page, at the next refused call and after a reload. Each change
 * is made in Chromium and proven through the Management API.
 */
import { generateKeyPairSync } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { ensureConsoleBuilt, signInToConsole, watchPage } from '../helpers/console.js';
import { createClient, createUser, type TestUser } from '../helpers/users.js';

const CORP = { type: 'oidc', enabled: false, issuer: 'https://sso.corp.example', client_id: 'svc', client_secret: 'corp-secret-value-0123', display_name: 'Corp SSO' };

/** A stored value for (nearly) every field of each section, most of them absent from the forms. */
const FULL_CONFIG: Record<string, Record<string, unknown>> = {
  application: { title: 'Acme', description: 'Sign in to Acme', default_locale: 'en', available_locales: ['en', 'fr'] },
  branding: { company_name: 'Acme', palette_light: { primary: '#112233' } },
  security: {
    password_policy: { min_length: 10, require_digit: true, check_breached: false },
    signup: { enabled: true, require_email_verification: true },
    password_reset: { ttl_seconds: 1800 },
  },
  features: {
    social_login: {
      providers: {
        gitlab: { enabled: false, client_id: 'gl', client_secret: 'gitlab-secret-0123', issuer: 'https://gitlab.acme.example', display_name: 'Acme GitLab', scopes: ['openid', 'email'] },
        microsoft: { enabled: false, tenant: 'organizations', attribute_mapping: { username: 'preferred_username' } },
        corp: CORP,
      },
    },
  },
  oidc: { id_token_claims: 'conform', ttl: { access_token: 1800 } },
  integrations: { smtp: { password: 'smtp-secret-0123', from: 'no-reply@acme.example' }, urls: { website: 'https://acme.example', terms: 'https://acme.example/terms' } },
  notifications: { security_alerts: { password_changed: false } },
};

const SECTION_LABELS: Record<string, string> = {
  application: 'Application', branding: 'Branding', security: 'Security', features: 'Features', oidc: 'OpenID Connect', integrations: 'Integrations', notifications: 'Notifications',
};

describe('administration console: edits keep what the form does not show', () => {
  let t: TestApp;
  let browser: Browser;
  let admin: TestUser;
  let origin: string;
  let page: Page;
  let watch: { problems: string[] };

  beforeAll(async () => {
    ensureConsoleBuilt();
    t = await startTestApp();
    origin = new URL(t.issuer).origin;
    admin = await createUser(t, { role: 'admin', email: `admin-${Date.now()}@example.com` });
    browser = await launchBrowser();
    page = await (await browser.newContext({ locale: 'en-US' })).newPage();
    page.setDefaultTimeout(10_000);
    watch = watchPage(page);
    await signInToConsole(page, `${origin}/admin`, admin.email, admin.password);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('Settings: saving every section without edits leaves the stored configuration as it was', async () => {
    const writer = await t.token('svc:config:write');
    for (const [section, body] of Object.entries(FULL_CONFIG)) {
      const res = await api(t, 'PUT', `/api/v1/config/${section}`, { token: writer, body });
      expect(res.status, `${section}: ${res.text}`).toBe(200);
    }
    const reader = await t.token('svc:config:read');
    const before = (await api(t, 'GET', '/api/v1/config', { token: reader })).json.data;
    const sealed = await t.app.ctx.storage.tenantConfig.get('default');
    for (const section of Object.keys(FULL_CONFIG)) {
      await page.goto(`${origin}/admin/settings?section=${section}`);
      const save = page.getByRole('button', { name: `Save ${SECTION_LABELS[section]}` });
      await save.waitFor();
      const [res] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().endsWith(`/api/v1/config/${section}`)), save.click()]);
      expect(res.status(), section).toBe(200);
    }
    expect((await api(t, 'GET', '/api/v1/config', { token: reader })).json.data).toEqual(before);
    // The secrets stayed the stored ones (sent back as `********`, kept by the API).
    expect(await t.app.ctx.storage.tenantConfig.get('default')).toEqual(sealed);

    // A field the form shows still changes, and an emptied one still inherits; the rest stays.
    await page.goto(`${origin}/admin/settings?section=application`);
    await page.getByLabel('title').fill('');
    await page.getByRole('button', { name: 'Save Application' }).click();
    await expect.poll(async () => (await api(t, 'GET', '/api/v1/config', { token: reader })).json.data.application).toEqual({ description: 'Sign in to Acme', default_locale: 'en', available_locales: ['en', 'fr'] });
    // Clearing a shown secret clears that one only.
    await page.goto(`${origin}/admin/settings?section=features`);
    await page.getByRole('checkbox', { name: /social_login\.providers\.gitlab\.client_secret/ }).check();
    await page.getByRole('button', { name: 'Save Features' }).click();
    await expect.poll(async () => (await api(t, 'GET', '/api/v1/config', { token: reader })).json.data.features.social_login.providers.gitlab.client_secret).toBeUndefined();
    const providers = (await api(t, 'GET', '/api/v1/config', { token: reader })).json.data.features.social_login.providers;
    expect(providers.corp).toEqual({ ...CORP, client_secret: '********' });
    expect(providers.gitlab).toMatchObject({ issuer: 'https://gitlab.acme.example', display_name: 'Acme GitLab', scopes: ['openid', 'email'] });
    for (const section of ['features', 'integrations', 'security', 'oidc', 'application', 'branding', 'notifications']) {
      expect((await api(t, 'PUT', `/api/v1/config/${section}`, { token: writer, body: {} })).status).toBe(200);
    }
    expect(watch.problems).toEqual([]);
  });

  it('Clients: an edit changes the edited field only; first_party, jwks_uri, an unset scope and jwks are kept', async () => {
    const reader = await t.token('svc:clients:read');
    const made = await createClient(t, {
      client_name: `Kept ${Date.now()}`, redirect_uris: ['https://app.example.com/cb'], first_party: true, jwks_uri: 'https://app.example.com/jwks.json', scope: null,
    });
    const before = (await api(t, 'GET', `/api/v1/clients/${made.client_id}`, { token: reader })).json.data;
    expect(before).toMatchObject({ first_party: true, jwks_uri: 'https://app.example.com/jwks.json', scope: null });
    const edit = async (clientId: string, description: string) => {
      await page.goto(`${origin}/admin/clients/${clientId}`);
      await page.getByRole('button', { name: 'Edit', exact: true }).click();
      await page.getByText('More fields').click();
      await page.getByLabel('Description').fill(description);
      await page.getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByText('Saved.', { exact: true }).waitFor();
    };
    await edit(made.client_id, 'changed');
    const after = (await api(t, 'GET', `/api/v1/clients/${made.client_id}`, { token: reader })).json.data;
    expect(after).toEqual({ ...before, description: 'changed', updated_at: after.updated_at });

    // A private_key_jwt client (its keys are not in the form) can be edited, and keeps its keys.
    const key = { ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' }), kid: 'k1', use: 'sig', alg: 'ES256' };
    const pkj = await createClient(t, { client_name: `Keys ${Date.now()}`, grant_types: ['client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [key] } });
    await edit(pkj.client_id, 'with keys');
    const keyed = (await api(t, 'GET', `/api/v1/clients/${pkj.client_id}`, { token: reader })).json.data;
    expect(keyed).toMatchObject({ description: 'with keys', token_endpoint_auth_method: 'private_key_jwt' });
    // The API does not show registered keys; storage holds them still.
    expect((await t.app.ctx.storage.clients.get('default', pkj.client_id))!.metadata.jwks).toEqual({ keys: [key] });
  });

  it('Users: an emptied name field is cleared', async () => {
    const user = await createUser(t, { nickname: 'Addie' });
    await page.goto(`${origin}/admin/users/${user.id}`);
    await page.getByRole('heading', { level: 1, name: user.email }).waitFor();
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await page.getByLabel('Nickname').fill('');
    await page.getByLabel('Given name').fill('');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Saved.', { exact: true }).waitFor();
    const read = (await api(t, 'GET', `/api/v1/users/${user.id}`, { token: await t.token('svc:users:read') })).json.data;
    expect(read).toMatchObject({ nickname: null, given_name: null, family_name: 'Lovelace', name: 'Ada Lovelace' });
  });

  /** A new admin signed in to the console in a context of its own, then demoted to `user` through the API. */
  async function demoted(): Promise<Page> {
    const who = await createUser(t, { role: 'admin' });
    const p = await (await browser.newContext({ locale: 'en-US' })).newPage();
    p.setDefaultTimeout(10_000);
    await signInToConsole(p, `${origin}/admin`, who.email, who.password);
    await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    const res = await api(t, 'PATCH', `/api/v1/users/${who.id}`, { token: await t.token('svc:users:write'), body: { role: 'user' } });
    expect(res.json.data.role).toBe('user');
    return p;
  }

  it('an admin demoted while the console is open gets the 403 page at the next refused call', async () => {
    const p = await demoted();
    await p.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Users', exact: true }).click();
    await p.getByRole('heading', { name: 'Access denied' }).waitFor();
    expect(await p.getByRole('navigation', { name: 'Sections' }).count()).toBe(0);
    await p.context().close();
  });

  it('an admin demoted while the console is open gets the 403 page after a reload', async () => {
    const p = await demoted();
    await p.reload();
    await p.getByRole('heading', { name: 'Access denied' }).waitFor();
    expect(await p.getByRole('navigation', { name: 'Sections' }).count()).toBe(0);
    await p.context().close();
  });
});
