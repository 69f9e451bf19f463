/**
 * The end-user surface in multi-tenant mode on PostgreSQL + Redis: a branded tenant (company name,
 * logo with alt text, palette, application.title, French by default) shows its brand on the
 * sign-in page (screenshot taken, logo loaded and named) and in its mails, which go through the
 * tenant's own SMTP server (its override), not the platform's. Hostile: a reset asked at another
 * tenant for this tenant's user sends nothing, and a tenant's reset link is void at another tenant.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import * as oidc from 'openid-client';
import { type Browser } from 'playwright-core';
import { TENANT_SUBDOMAINS, launchBrowser } from '../helpers/browser.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, dropRedisKeys, startTestApp, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { send } from '../helpers/tenant-http.js';

const LOGO = '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40"><rect width="120" height="40" fill="#0b6e4f"/></svg>';
const run = randomBytes(3).toString('hex');

describe('end-user surface, multi-tenant on PostgreSQL + Redis', () => {
  let t: TestApp;
  let port: number;
  let prefix: string;
  let platformSink: SmtpSink;
  let acmeSink: SmtpSink;
  let rp: RpServer;
  let logoServer: Server;
  let logoUrl: string;
  let browser: Browser;
  const acme = `acme-${run}`;
  const globex = `globex-${run}`;
  const user = { email: `ada-${run}@example.com`, password: 'Correct-Horse-Battery-9' };

  const basic = `Basic ${Buffer.from(`${BOOTSTRAP_ID}:${BOOTSTRAP_SECRET}`).toString('base64')}`;
  async function platformToken(scope: string): Promise<string> {
    const res = await send(port, 'POST', '/oidc/v1/token', { tenant: '_platforms', headers: { authorization: basic }, form: { grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope } });
    return res.json.access_token as string;
  }
  const issuerOf = (tenant: string) => `http://${tenant}.localhost:${port}/oidc/v1`;

  beforeAll(async () => {
    platformSink = await startSmtpSink();
    acmeSink = await startSmtpSink({ username: 'acme-mailer', password: 'acme-smtp-secret' });
    rp = await startRpServer();
    logoServer = createServer((_req, res) => {
      res.setHeader('content-type', 'image/svg+xml');
      res.end(LOGO);
    });
    await new Promise<void>((r) => logoServer.listen(0, '127.0.0.1', r));
    logoUrl = `http://127.0.0.1:${(logoServer.address() as AddressInfo).port}/logo.svg`;
    prefix = uniquePrefix('enduser');
    t = await startTestApp({ MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', REDIS_URL: SHARED_REDIS_URL, REDIS_KEY_PREFIX: prefix, ...platformSink.env() });
    port = t.app.port;
    const write = await platformToken('svc:tenants:write svc:cross-tenant:write svc:users:write');
    for (const slug of [acme, globex]) expect((await send(port, 'POST', '/api/v1/tenants', { token: write, body: { slug, display_name: slug } })).status).toBe(201);
    const put = async (section: string, body: unknown) => {
      const res = await send(port, 'PUT', `/api/v1/tenants/${acme}/config/${section}`, { token: write, body });
      expect(res.status, res.text).toBe(200);
      return res;
    };
    await put('branding', { company_name: 'Acme <Corp>', logo_light_url: logoUrl, palette_light: { primary: '#ffcc00', text: '#eeeeee', surface: '#ffffff' } });
    await put('application', { title: 'Acme Portal', available_locales: ['fr', 'en'], default_locale: 'fr' });
    const smtp = await put('integrations', { smtp: { host: '127.0.0.1', port: acmeSink.port, username: 'acme-mailer', password: 'acme-smtp-secret', from: 'login@acme.example' } });
    expect(JSON.stringify(smtp.json)).not.toContain('acme-smtp-secret');
    const users = await send(port, 'POST', '/api/v1/users', { tenant: acme, token: write, body: { ...user, email_verified: true } });
    expect(users.status, users.text).toBe(201);
    browser = await launchBrowser([TENANT_SUBDOMAINS]);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rp?.close();
    await platformSink?.close();
    await acmeSink?.close();
    await new Promise((r) => logoServer?.close(r));
    if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
  });

  async function signInPage(tenant: string) {
    const write = await platformToken('svc:tenants:write svc:cross-tenant:write svc:clients:write');
    const client = await send(port, 'POST', '/api/v1/clients', { tenant, token: write, body: { client_name: 'RP', application_type: 'web', redirect_uris: [`${rp.origin}/cb`], grant_types: ['authorization_code'], scope: 'openid' } });
    const config = new oidc.Configuration({ issuer: issuerOf(tenant), authorization_endpoint: `${issuerOf(tenant)}/auth` }, client.json.data.client_id, client.json.data.client_secret);
    oidc.allowInsecureRequests(config);
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: `${rp.origin}/cb`, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256', state: 's' });
    // A browser language the tenant does not offer: the tenant's default (French) applies.
    const page = await (await browser.newContext({ locale: 'it-IT' })).newPage();
    await page.goto(url.href);
    return page;
  }

  it('the branded sign-in page: French by default, title, company name and logo (screenshot), readable contrast', async () => {
    const page = await signInPage(acme);
    expect(await page.locator('html').getAttribute('lang')).toBe('fr');
    expect(await page.title()).toBe('Connexion - Acme Portal');
    const logo = page.getByRole('img', { name: 'Acme <Corp>' });
    await expect(logo.isVisible()).resolves.toBe(true);
    await expect(logo.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).resolves.toBe(120);
    const shot = await page.screenshot({ fullPage: true });
    expect(shot.subarray(1, 4).toString()).toBe('PNG');
    const box = (await logo.boundingBox())!;
    const size = page.viewportSize()!;
    expect(box.width).toBeGreaterThan(0);
    expect(box.x + box.width).toBeLessThanOrEqual(size.width);
    // The unreadable text colour (#eee on white) was replaced; axe checks the rendered contrast.
    expect(await seriousViolations(page)).toEqual([]);
    await page.context().close();
  });

  it('mail goes through the tenant’s own SMTP server, branded and in its language', async () => {
    const page = await signInPage(acme);
    await page.getByRole('link', { name: /forgot|reset|oubli/i }).click();
    await page.locator('input[type="email"][name="email"]').fill(user.email);
    await page.getByRole('button', { name: /envoyer/i }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Consultez vos e-mails');
    const [mail] = await acmeSink.waitFor(user.email);
    expect(mail!.from).toBe('login@acme.example');
    expect(mail!.subject).toBe('Réinitialisez votre mot de passe - Acme <Corp>');
    expect(mail!.html).toContain(`<img src="${logoUrl}" alt="Acme &lt;Corp&gt;"`);
    expect(mail!.links).toHaveLength(1);
    expect(mail!.links[0]).toMatch(new RegExp(`^http://${acme}\\.localhost:${port}/account/password/reset\\?token=`));
    expect(platformSink.messages).toHaveLength(0);
    await page.context().close();

    // That link is this tenant's: at another tenant it is void.
    const token = new URL(mail!.links[0]!).searchParams.get('token')!;
    const elsewhere = await send(port, 'GET', `/account/password/reset?token=${token}`, { tenant: globex });
    expect(elsewhere.status).toBe(400);
  });

  it('hostile: a reset asked at another tenant for this tenant’s user answers the same and sends nothing', async () => {
    const page = await signInPage(globex);
    await page.getByRole('link', { name: /forgot|reset/i }).click();
    await page.locator('input[type="email"][name="email"]').fill(user.email);
    await page.getByRole('button', { name: /send/i }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Check your e-mail');
    await t.app.ctx.mailer.drain();
    expect(platformSink.messages).toHaveLength(0);
    expect(acmeSink.messages.filter((m) => m.to.includes(user.email))).toHaveLength(1);
    await page.context().close();
  });
});
