/**
 * A platform provider's client secret stays with the platform's server. A tenant may override a
 * provider field by field, but one that points the provider at another server (its `issuer`, a
 * GitHub/Facebook endpoint) must bring its own secret: the token request would otherwise post the
 * platform's client secret to a server the tenant chose (as SMTP never sends the platform's
 * password to a tenant's host, src/mail/settings.ts). Refused when saved (422 naming the field),
 * and a stored override of that shape leaves the provider out instead of using the secret.
 */
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from '../helpers/app.js';
import { expectValidation } from '../helpers/problem.js';
import { startRogueOidc, type RogueOidc } from '../helpers/rogue-oidc.js';
import { startSocialApp, type SocialApp } from '../helpers/social-app.js';

describe("social login: a tenant's override never carries the platform's secret to another server", () => {
  let platform: RogueOidc;
  let thief: RogueOidc;
  let app: SocialApp;
  let admin: string;

  beforeAll(async () => {
    platform = await startRogueOidc('platform-client', 'platform-secret-0123456789');
    thief = await startRogueOidc('platform-client', 'tenant-own-secret-0123456789');
    app = await startSocialApp({ corp: { type: 'oidc', enabled: true, issuer: platform.issuer, client_id: platform.clientId, client_secret: platform.clientSecret, display_name: 'Corp SSO' } });
    admin = await app.t.token('svc:config:read svc:config:write');
  });
  afterAll(async () => {
    await app?.close();
    await thief?.close();
    await platform?.close();
  });

  /** The "Continue with Corp SSO" links of a fresh sign-in page. */
  async function corpButtons(): Promise<number> {
    const context = await app.browser.newContext();
    const page = await context.newPage();
    const url = oidc.buildAuthorizationUrl(app.config, { redirect_uri: app.redirect, scope: 'openid email', code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256', state: 's', nonce: 'n' });
    await page.goto(url.href);
    const n = await page.getByRole('link', { name: 'Continue with Corp SSO' }).count();
    await context.close();
    return n;
  }

  it('refuses an issuer or endpoint of its own without its own secret (422 on client_secret)', async () => {
    const moved = await api(app.t, 'PUT', '/api/v1/config/features', { token: admin, body: { social_login: { providers: { corp: { type: 'oidc', issuer: thief.issuer } } } } });
    const body = expectValidation(moved, '/api/v1/config/features', 'social_login.providers.corp.client_secret');
    expect(body.errors.map((e: { field: string }) => e.field)).toEqual(['social_login.providers.corp.client_secret']);
    const renamed = await api(app.t, 'PUT', '/api/v1/config/features', { token: admin, body: { social_login: { providers: { corp: { type: 'oidc', display_name: 'Corp' } } } } });
    expect(renamed.status, renamed.text).toBe(200);
    // The platform's own issuer named again is no move.
    const same = await api(app.t, 'PUT', '/api/v1/config/features', { token: admin, body: { social_login: { providers: { corp: { type: 'oidc', issuer: platform.issuer, display_name: 'Corp SSO' } } } } });
    expect(same.status, same.text).toBe(200);
  });

  it('leaves out a provider whose stored override moved it without a secret; with its own secret it works there', async () => {
    // Stored before the rule (or written around the API): the sign-in page does not offer it, so no
    // token request ever carries the platform's secret to the other server.
    await app.t.app.ctx.storage.tenantConfig.put('default', 'features', { social_login: { providers: { corp: { type: 'oidc', issuer: thief.issuer } } } });
    await (await app.t.app.pool.get('default')).reload();
    expect(await corpButtons()).toBe(0);
    expect(thief.tokenRequests).toBe(0);

    // The tenant's own secret goes with its own issuer: the flow runs there.
    const own = await api(app.t, 'PUT', '/api/v1/config/features', { token: admin, body: { social_login: { providers: { corp: { type: 'oidc', issuer: thief.issuer, client_secret: thief.clientSecret } } } } });
    expect(own.status, own.text).toBe(200);
    const context = await app.browser.newContext();
    const page = await context.newPage();
    const url = oidc.buildAuthorizationUrl(app.config, { redirect_uri: app.redirect, scope: 'openid email', code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256', state: 's', nonce: 'n' });
    await page.goto(url.href);
    await page.getByRole('link', { name: 'Continue with Corp SSO' }).click();
    await page.waitForURL((u) => u.href.startsWith(thief.issuer));
    await page.locator('#continue').click();
    await page.waitForURL((u) => u.href.startsWith(app.redirect));
    await context.close();
    expect(thief.tokenRequests).toBe(1);
    expect(platform.tokenRequests).toBe(0);
  });
});
