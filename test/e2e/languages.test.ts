/**
 * End-user pages in the user's language, in headless Chromium with openid-client as the relying
 * party: `ui_locales=fr` gives a French sign-in page (`<html lang="fr">`, French labels, French
 * error after a wrong password), `Accept-Language: de` a German one, the switcher changes the
 * language and the choice sticks for the form answer; each page passes axe-core.
 */
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { seriousViolations } from '../helpers/axe.js';
import { launchBrowser } from '../helpers/browser.js';
import { startRpServer, type RpServer } from '../helpers/rp-server.js';
import { createClient, createUser, type TestUser } from '../helpers/users.js';

describe('languages of the end-user pages', () => {
  let t: TestApp;
  let browser: Browser;
  let rp: RpServer;
  let config: oidc.Configuration;
  let user: TestUser;
  let redirect: string;

  beforeAll(async () => {
    rp = await startRpServer();
    redirect = `${rp.origin}/cb`;
    t = await startTestApp();
    browser = await launchBrowser();
    user = await createUser(t, { email_verified: true });
    const client = await createClient(t, { client_name: 'Appli <Démo>', application_type: 'web', redirect_uris: [redirect], grant_types: ['authorization_code'], scope: 'openid profile email' });
    config = await oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rp?.close();
  });

  async function authorizationUrl(extra: Record<string, string>): Promise<string> {
    return oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirect,
      scope: 'openid',
      code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
      code_challenge_method: 'S256',
      state: oidc.randomState(),
      ...extra,
    }).href;
  }

  async function signInPage(extra: Record<string, string>, locale?: string): Promise<Page> {
    const context = await browser.newContext(locale ? { locale } : {});
    const page = await context.newPage();
    await page.goto(await authorizationUrl(extra));
    return page;
  }

  it('ui_locales=fr: a French sign-in page, French errors, accessible', async () => {
    const page = await signInPage({ ui_locales: 'fr' }, 'en-US');
    expect(await page.locator('html').getAttribute('lang')).toBe('fr');
    await expect(page.title()).resolves.toBe('Connexion');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Connexion');
    // The client name is text, never markup.
    await expect(page.getByText('pour continuer vers Appli <Démo>').isVisible()).resolves.toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel('Adresse e-mail').fill(user.email);
    await page.getByLabel('Mot de passe').fill('wrong-password-123');
    await page.getByRole('button', { name: 'Se connecter' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Adresse e-mail ou mot de passe incorrect.');
    expect(await page.locator('html').getAttribute('lang')).toBe('fr');
    await page.context().close();
  });

  it('Accept-Language: de gives German; the switcher changes the language and the choice sticks', async () => {
    const page = await signInPage({}, 'de-DE');
    expect(await page.locator('html').getAttribute('lang')).toBe('de');
    await expect(page.getByRole('button', { name: 'Anmelden' }).isVisible()).resolves.toBe(true);
    const switcher = page.getByRole('navigation', { name: 'Sprache' });
    await expect(switcher.getByRole('link').allTextContents()).resolves.toEqual(['English', 'Français', 'Deutsch', 'Español']);
    expect(await seriousViolations(page)).toEqual([]);

    await Promise.all([page.waitForURL(/lang=es/), switcher.getByRole('link', { name: 'Español' }).click()]);
    expect(await page.locator('html').getAttribute('lang')).toBe('es');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Iniciar sesión');
    // The form answer (a POST, no lang parameter) stays in the chosen language.
    await page.getByLabel('Correo electrónico').fill(user.email);
    await page.getByLabel('Contraseña').fill(user.password);
    await page.getByRole('button', { name: 'Iniciar sesión' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('¿Permitir acceso?');
    await expect(page.getByRole('button', { name: 'Permitir' }).isVisible()).resolves.toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Permitir' }).click();
    await page.waitForURL(`${redirect}**`);
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    await page.context().close();
  });

  it('the forgot-password link keeps the page language without storing a choice: later pages follow ui_locales again', async () => {
    const page = await signInPage({ ui_locales: 'fr' }, 'en-US');
    await page.getByRole('link', { name: 'Mot de passe oublié ?' }).click();
    expect(await page.locator('html').getAttribute('lang')).toBe('fr');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Réinitialiser votre mot de passe');
    // The form's answer (a POST) is in the same language, carried by the form, not by a cookie.
    await page.locator('input[type="email"][name="email"]').fill('nobody@example.com');
    await page.getByRole('button', { name: 'Envoyer le lien' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Consultez vos e-mails');
    expect(await page.locator('html').getAttribute('lang')).toBe('fr');
    expect((await page.context().cookies()).map((c) => c.name)).not.toContain('svc_lang');
    // The next sign-in asks for German: nothing the user never chose holds it in French.
    await page.goto(await authorizationUrl({ ui_locales: 'de' }));
    expect(await page.locator('html').getAttribute('lang')).toBe('de');
    await page.goto(await authorizationUrl({}));
    expect(await page.locator('html').getAttribute('lang')).toBe('en');
    await page.context().close();
  });

  it('the built-in clients are named in the page language (the account page: "Page de compte", not "Account")', async () => {
    const context = await browser.newContext({ locale: 'fr-FR' });
    const page = await context.newPage();
    await page.goto(`${new URL(t.issuer).origin}/account`);
    expect(await page.locator('html').getAttribute('lang')).toBe('fr');
    await expect(page.getByText('pour continuer vers Page de compte').isVisible()).resolves.toBe(true);
    await context.close();
    const german = await browser.newContext({ locale: 'de-DE' });
    const other = await german.newPage();
    await other.goto(`${new URL(t.issuer).origin}/account`);
    await expect(other.getByText('um mit Kontoseite fortzufahren').isVisible()).resolves.toBe(true);
    await german.close();
  });

  it('a language the product lacks falls back to English; a hostile lang value changes nothing', async () => {
    const page = await signInPage({ ui_locales: 'tlh it' }, 'it-IT');
    expect(await page.locator('html').getAttribute('lang')).toBe('en');
    const url = new URL(page.url());
    url.searchParams.set('lang', '"><script>alert(1)</script>');
    const res = await page.goto(url.href);
    expect(res?.status()).toBe(200);
    expect(await page.locator('html').getAttribute('lang')).toBe('en');
    expect(res?.headers()['set-cookie']).toBeUndefined();
    expect(await res?.text()).not.toContain('<script>alert(1)</script>');
    await page.context().close();
  });

  it('pages oidc-provider renders are translated too: the device page in French', async () => {
    const context = await browser.newContext({ locale: 'fr-FR' });
    const page = await context.newPage();
    await page.goto(`${t.issuer}/device`);
    expect(await page.locator('html').getAttribute('lang')).toBe('fr');
    await expect(page.getByLabel("Code de l'appareil").isVisible()).resolves.toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    await context.close();
  });
});
