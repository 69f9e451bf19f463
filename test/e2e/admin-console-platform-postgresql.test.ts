/**
 * The administration console in `_platforms` (issue 16), multi-tenant on PostgreSQL + Redis: the
 * bootstrap superadmin signs in on the `_platforms` origin, creates a tenant, edits its
 * configuration (a per-field error from the API shown at its field), sees its users, suspends it
 * (its issuer then answers tenant-suspended), activates and deletes it. A tenant admin on the
 * tenant's own origin gets the tenant console. The Tenants list is searched; a tenant's display
 * name and domain are edited (422 and 409 at the Domain field); `_platforms` offers no Suspend or
 * Delete. axe-core and a screenshot for each view.
 */
import { randomBytes } from 'node:crypto';
import { type Browser, type Page } from 'playwright-core';
import { TENANT_SUBDOMAINS, launchBrowser } from '../helpers/browser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, startTestApp, type TestApp } from '../helpers/app.js';
import { ensureConsoleBuilt, expectAccessible, screenshot, signInToConsole, watchPage } from '../helpers/console.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { send } from '../helpers/tenant-http.js';

const ADMIN_EMAIL = 'root@platform.example.com';
const ADMIN_PASSWORD = 'Platform-Admin-Passw0rd';
const basic = `Basic ${Buffer.from(`${BOOTSTRAP_ID}:${BOOTSTRAP_SECRET}`).toString('base64')}`;

describe('administration console in _platforms', () => {
  let t: TestApp;
  let port: number;
  let browser: Browser;
  let page: Page;
  let watch: { problems: string[] };
  const slug = `acme-${randomBytes(3).toString('hex')}`;

  const token = async (scope: string) => {
    const res = await send(port, 'POST', '/oidc/v1/token', { tenant: '_platforms', auth: basic, form: { grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope } });
    if (res.status !== 200) throw new Error(res.text);
    return res.json.access_token as string;
  };
  const check = async (name: string) => {
    await page.locator('.loading').first().waitFor({ state: 'detached', timeout: 10_000 });
    await expectAccessible(page, name);
    await screenshot(page, `platform-${name}`);
  };

  beforeAll(async () => {
    ensureConsoleBuilt();
    t = await startTestApp({
      MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', REDIS_URL: SHARED_REDIS_URL, REDIS_KEY_PREFIX: uniquePrefix('console'),
      SVC_BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL, SVC_BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
    });
    port = t.app.port;
    browser = await launchBrowser([TENANT_SUBDOMAINS]);
    page = await (await browser.newContext({ locale: 'en-US' })).newPage();
    watch = watchPage(page);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('the superadmin creates a tenant, configures it, suspends, activates and deletes it', async () => {
    await signInToConsole(page, `http://_platforms.localhost:${port}/admin`, ADMIN_EMAIL, ADMIN_PASSWORD);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    // Only the console's own pages count here: the sign-in page is another surface (its CSP
    // names the `_platforms` origin in form-action, which Chromium reports as invalid because of
    // the underscore; reported in the issue note).
    watch.problems.length = 0;
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Tenants', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Tenants' }).waitFor();
    await check('tenants');

    // Create: a bad slug is refused at its field, then a good one opens the tenant.
    await page.getByLabel('Slug').fill('-Bad-');
    await page.getByLabel('Display name').fill('Acme <b>Corp</b>');
    await page.getByRole('button', { name: 'Create tenant' }).click();
    await page.locator('.field.invalid').first().waitFor();
    await page.getByLabel('Slug').fill(slug);
    await page.getByRole('button', { name: 'Create tenant' }).click();
    await page.getByRole('heading', { level: 1, name: 'Acme <b>Corp</b>' }).waitFor();
    await check('tenant-detail');

    // Configuration: a platform ceiling violation is shown at its field; a valid value is stored.
    await page.getByRole('link', { name: 'Configuration' }).click();
    await page.getByRole('button', { name: 'OpenID Connect' }).click();
    await page.getByLabel('ttl.access_token').fill('999999');
    await page.getByRole('button', { name: 'Save OpenID Connect' }).click();
    await page.locator('.field.invalid').first().waitFor();
    expect(await page.getByLabel('ttl.access_token').getAttribute('aria-invalid')).toBe('true');
    await check('tenant-config-error');
    await page.getByLabel('ttl.access_token').fill('1800');
    await page.getByRole('button', { name: 'Save OpenID Connect' }).click();
    await page.getByText('Saved.', { exact: true }).waitFor();
    const config = await send(port, 'GET', `/api/v1/tenants/${slug}/config`, { token: await token('svc:cross-tenant:read') });
    expect(config.json.data.oidc).toEqual({ ttl: { access_token: 1800 } });
    // The tenant's own audit log names the platform user who changed its configuration.
    const log = await send(port, 'GET', '/api/v1/audit?type=tenant.config_updated', { tenant: slug, token: await token('svc:cross-tenant:read svc:audit:read') });
    expect(log.status, log.text).toBe(200);
    const entry = (log.json.data as Array<{ username: string | null; user_id: string | null; details: { section: string; by_tenant?: string } }>).find((e) => e.details.section === 'oidc');
    expect(entry).toMatchObject({ username: ADMIN_EMAIL.toLowerCase(), user_id: expect.any(String), details: { by_tenant: '_platforms' } });

    // Users of the tenant (cross-tenant view).
    const write = await token('svc:cross-tenant:write svc:users:write');
    const created = await send(port, 'POST', '/api/v1/users', { tenant: slug, token: write, body: { email: `admin@${slug}.example`, password: 'Tenant-Admin-Passw0rd', role: 'admin' } });
    expect(created.status, created.text).toBe(201);
    await page.getByRole('link', { name: 'Users' }).last().click();
    await page.getByRole('cell', { name: `admin@${slug}.example` }).waitFor();
    await check('tenant-users');

    // Suspend: the tenant's issuer answers tenant-suspended.
    await page.getByRole('button', { name: 'Suspend' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Suspend' }).click();
    await page.getByText('Suspended.', { exact: true }).waitFor();
    const discovery = await send(port, 'GET', '/oidc/v1/.well-known/openid-configuration', { sub: slug });
    expect(discovery.status).toBe(403);
    expect(discovery.json.type).toBe('urn:svc:error:tenant-suspended');
    await page.getByRole('button', { name: 'Activate', exact: true }).click();
    await page.getByText('Activated.', { exact: true }).waitFor();
    expect((await send(port, 'GET', '/oidc/v1/.well-known/openid-configuration', { sub: slug })).status).toBe(200);
    expect(watch.problems).toEqual([]);
  });

  it('the tenant’s Configuration saved without edits keeps every stored field, those the forms do not show included', async () => {
    const write = await token('svc:cross-tenant:write');
    const full: Record<string, Record<string, unknown>> = {
      application: { title: 'Acme', description: 'Sign in to Acme' },
      security: { password_policy: { check_breached: true }, signup: { require_email_verification: true }, password_reset: { ttl_seconds: 1800 } },
      features: {
        social_login: {
          relay: false,
          providers: {
            gitlab: { enabled: false, issuer: 'https://gitlab.acme.example', display_name: 'Acme GitLab' },
            corp: { type: 'oidc', enabled: false, issuer: 'https://sso.corp.example', client_id: 'svc', client_secret: 'corp-secret-value-0123' },
          },
        },
      },
      oidc: { id_token_claims: 'conform', ttl: { access_token: 1800 } },
      integrations: { urls: { website: 'https://acme.example' } },
    };
    for (const [section, body] of Object.entries(full)) {
      const res = await send(port, 'PUT', `/api/v1/tenants/${slug}/config/${section}`, { token: write, body });
      expect(res.status, res.text).toBe(200);
    }
    const read = await token('svc:cross-tenant:read');
    const before = (await send(port, 'GET', `/api/v1/tenants/${slug}/config`, { token: read })).json.data;
    for (const section of Object.keys(full)) {
      await page.goto(`http://_platforms.localhost:${port}/admin/tenants/${slug}/config?section=${section}`);
      const save = page.getByRole('button', { name: /^Save / });
      await save.waitFor();
      const [res] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().endsWith(`/config/${section}`)), save.click()]);
      expect(res.status(), section).toBe(200);
    }
    expect((await send(port, 'GET', `/api/v1/tenants/${slug}/config`, { token: read })).json.data).toEqual(before);
  });

  it('an `admin` of `_platforms` is offered no Tenants section and edits `_platforms`’s own settings', async () => {
    const email = `plain-admin-${slug}@platform.example.com`;
    const created = await send(port, 'POST', '/api/v1/users', { tenant: '_platforms', token: await token('svc:users:write'), body: { email, password: 'Platform-Plain-Passw0rd', role: 'admin' } });
    expect(created.status, created.text).toBe(201);
    const other = await (await browser.newContext({ locale: 'en-US' })).newPage();
    await signInToConsole(other, `http://_platforms.localhost:${port}/admin`, email, 'Platform-Plain-Passw0rd');
    await other.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    const nav = other.getByRole('navigation', { name: 'Sections' });
    await nav.getByRole('link', { name: 'Users', exact: true }).waitFor();
    expect(await nav.getByRole('link', { name: 'Tenants' }).count()).toBe(0);
    // Settings: `_platforms`'s own (GET/PUT /api/v1/config), no tenant to pick.
    await nav.getByRole('link', { name: 'Settings', exact: true }).click();
    await other.getByRole('button', { name: 'Branding', exact: true }).click();
    expect(await other.getByLabel('Tenant').count()).toBe(0);
    await other.getByLabel('company_name').fill('Platform itself');
    await other.getByRole('button', { name: 'Save Branding' }).click();
    await other.getByText('Saved.', { exact: true }).waitFor();
    const own = await send(port, 'GET', '/api/v1/tenants/_platforms/config', { token: await token('svc:cross-tenant:read') });
    expect(own.json.data.branding).toEqual({ company_name: 'Platform itself' });
    expect((await send(port, 'PUT', '/api/v1/tenants/_platforms/config/branding', { token: await token('svc:cross-tenant:write'), body: {} })).status).toBe(200);
    // The Tenants address typed in by hand: not found.
    await other.goto(`http://_platforms.localhost:${port}/admin/tenants`);
    await other.getByRole('heading', { level: 1, name: 'Page not found' }).waitFor();
    await other.context().close();
  });

  it('a tenant admin signs in to the tenant console on the tenant origin', async () => {
    const other = await (await browser.newContext({ locale: 'en-US' })).newPage();
    await signInToConsole(other, `http://${slug}.localhost:${port}/admin`, `admin@${slug}.example`, 'Tenant-Admin-Passw0rd');
    await other.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    // No Tenants section outside _platforms; Settings edits this tenant's own configuration
    // (/api/v1/config with the admin's token), and only this tenant's.
    expect(await other.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Tenants' }).count()).toBe(0);
    await other.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Settings', exact: true }).click();
    await other.getByRole('button', { name: 'Branding', exact: true }).click();
    await other.getByLabel('company_name').fill('Acme from its own console');
    await other.getByRole('button', { name: 'Save Branding' }).click();
    await other.getByText('Saved.', { exact: true }).waitFor();
    const read = await token('svc:cross-tenant:read');
    const own = await send(port, 'GET', `/api/v1/tenants/${slug}/config`, { tenant: '_platforms', token: read });
    expect(own.json.data.branding).toEqual({ company_name: 'Acme from its own console' });
    const platforms = await send(port, 'GET', '/api/v1/tenants/_platforms/config', { tenant: '_platforms', token: read });
    expect(platforms.json.data.branding?.company_name).not.toBe('Acme from its own console');
    // The tenant admin's token names its own tenant only: at another tenant's origin it is refused.
    const raw = await other.evaluate(() => Object.entries(sessionStorage).find(([k]) => k.startsWith('oidc.user:'))?.[1]);
    const adminToken = (JSON.parse(raw!) as { access_token: string }).access_token;
    expect((await send(port, 'GET', '/api/v1/config', { sub: slug, token: adminToken })).status).toBe(200);
    expect((await send(port, 'GET', '/api/v1/config', { sub: '_platforms', token: adminToken })).status).toBe(401);
    expect((await send(port, 'PUT', '/api/v1/config/branding', { sub: '_platforms', token: adminToken, body: { company_name: 'hijack' } })).status).toBe(401);
    await expectAccessible(other, 'tenant-settings');
    await screenshot(other, 'tenant-settings');
    // The Tenants address typed in by hand: not found, and no sign-in loop (the API refuses the
    // tenant's token there; the console used to take that for an ended session and sign in again
    // and again).
    // A page load renews the token once, silently (prompt=none: the role may have changed).
    const authorizations = { interactive: 0, silent: 0 };
    other.on('request', (r) => {
      const url = new URL(r.url());
      if (url.pathname === '/oidc/v1/auth') authorizations[url.searchParams.get('prompt') === 'none' ? 'silent' : 'interactive']++;
    });
    await other.goto(`http://${slug}.localhost:${port}/admin/tenants`);
    await other.getByRole('heading', { level: 1, name: 'Page not found' }).waitFor();
    await other.waitForTimeout(1500);
    expect(authorizations).toEqual({ interactive: 0, silent: 1 });
    await other.context().close();
  });

  it('the superadmin searches the tenants, edits a display name and domain (errors at the field) and is offered no suspend or delete on `_platforms`', async () => {
    const write = await token('svc:tenants:write');
    const [edited, taken] = [`edit-${slug}`, `taken-${slug}`];
    for (const body of [{ slug: edited, display_name: 'Edit Me' }, { slug: taken, display_name: 'Taken Domain', domain: `login.${taken}.example.com` }]) {
      const res = await send(port, 'POST', '/api/v1/tenants', { token: write, body });
      expect(res.status, res.text).toBe(201);
    }
    await page.goto(`http://_platforms.localhost:${port}/admin/tenants`);
    await page.getByRole('heading', { level: 1, name: 'Tenants' }).waitFor();
    const table = page.getByRole('table', { name: 'Tenants' });
    await table.getByRole('link', { name: taken }).waitFor();

    // Search: display name, case-insensitive; then by domain; the query string holds it.
    await page.getByRole('search').getByLabel('Search').fill('EDIT ME');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL((u) => u.searchParams.get('q') === 'EDIT ME');
    // The list reloads (the table leaves while loading): poll until the filtered page is shown.
    await expect.poll(() => table.getByRole('link').allTextContents()).toEqual([edited]);
    await check('tenants-search');
    await page.getByRole('search').getByLabel('Search').fill(`${taken}.example`);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => table.getByRole('link').allTextContents()).toEqual([taken]);

    // Edit: a malformed domain is refused at its field (422), a domain in use too (409); then saved.
    await page.goto(`http://_platforms.localhost:${port}/admin/tenants/${edited}`);
    await page.getByRole('heading', { level: 1, name: 'Edit Me' }).waitFor();
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const domain = page.getByLabel('Domain');
    await domain.fill('Not A Host');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.locator('.field.invalid').first().waitFor();
    expect(await domain.getAttribute('aria-invalid')).toBe('true');
    await check('tenant-edit-error');
    await domain.fill(`login.${taken}.example.com`);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: 'Another tenant already uses this domain' }).waitFor();
    expect(await domain.getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('.field.invalid .field-error').allTextContents()).toEqual(['Another tenant already uses this domain']);
    await page.getByLabel('Display name').fill('Edited Ltd');
    await domain.fill(`login.${edited}.example.com`);
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Saved.', { exact: true }).waitFor();
    await page.getByRole('heading', { level: 1, name: 'Edited Ltd' }).waitFor();
    await page.getByText(`login.${edited}.example.com`, { exact: true }).waitFor();
    const read = await token('svc:tenants:read');
    expect((await send(port, 'GET', `/api/v1/tenants/${edited}`, { token: read })).json.data).toMatchObject({ display_name: 'Edited Ltd', domain: `login.${edited}.example.com`, status: 'active' });
    // An emptied domain is removed.
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await domain.fill('');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Saved.', { exact: true }).waitFor();
    await page.getByLabel('Domain').waitFor({ state: 'detached' });
    expect((await send(port, 'GET', `/api/v1/tenants/${edited}`, { token: read })).json.data).toMatchObject({ display_name: 'Edited Ltd', domain: null });

    // `_platforms`: renamed like any tenant, but neither suspended nor deleted (the API's 409 stays).
    await page.goto(`http://_platforms.localhost:${port}/admin/tenants/_platforms`);
    await page.getByRole('link', { name: 'Configuration' }).waitFor();
    await page.getByRole('button', { name: 'Edit', exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Suspend' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Delete' }).count()).toBe(0);
    await check('tenant-platforms');
    const del = await token('svc:tenants:delete');
    expect((await send(port, 'DELETE', '/api/v1/tenants/_platforms', { token: del })).status).toBe(409);
    expect((await send(port, 'PATCH', '/api/v1/tenants/_platforms', { token: write, body: { status: 'suspended' } })).status).toBe(409);
    expect(watch.problems).toEqual([]);
  });

  it('deleting the tenant from the console purges it', async () => {
    await page.goto(`http://_platforms.localhost:${port}/admin/tenants/${slug}`);
    await page.getByRole('heading', { level: 1, name: 'Acme <b>Corp</b>' }).waitFor();
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('heading', { level: 1, name: 'Tenants' }).waitFor();
    const res = await send(port, 'GET', `/api/v1/tenants/${slug}`, { token: await token('svc:tenants:read') });
    expect(res.status).toBe(404);
  });
});
