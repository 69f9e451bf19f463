/**
 * The providers' marks on the sign-in page: every built-in preset's "Continue with <name>" link
 * carries its small inline SVG mark, hidden from assistive technology, so the accessible name stays
 * exactly "Continue with <name>" (in each language); a generic OpenID Connect provider has none.
 * The page's CSP (no inline style or script) is kept: the marks are drawn with presentation
 * attributes, the browser reports no CSP violation, and axe-core finds nothing serious.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';
import { seriousViolations } from '../helpers/social-a11y.js';
import { createClient } from '../helpers/users.js';

const PRESETS = [
  ['google', 'Google'],
  ['microsoft', 'Microsoft'],
  ['apple', 'Apple'],
  ['gitlab', 'GitLab'],
  ['github', 'GitHub'],
  ['facebook', 'Facebook'],
] as const;

const CONTINUE: Record<string, string> = { en: 'Continue with', fr: 'Continuer avec', de: 'Weiter mit', es: 'Continuar con' };

describe('social login: provider marks on the sign-in page', () => {
  let t: TestApp;
  let browser: Browser;
  let config: oidc.Configuration;
  let dir: string;
  const REDIRECT = 'https://rp.example/cb';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-social-'));
    const file = join(dir, 'config.json');
    const providers: Record<string, Record<string, unknown>> = {};
    for (const [name] of PRESETS) providers[name] = { enabled: true, client_id: `${name}-client`, client_secret: `${name}-secret` };
    providers.apple = { ...providers.apple, team_id: 'TEAM123456', key_id: 'KEY1234567' };
    // A generic provider (never contacted: the page only lists it).
    providers.corp = { type: 'oidc', enabled: true, issuer: 'https://sso.corp.example', client_id: 'svc', client_secret: 'x', display_name: 'Corp SSO' };
    writeFileSync(file, JSON.stringify({ features: { social_login: { providers } } }));
    t = await startTestApp({ SVC_CONFIG_FILE: file });
    browser = await launchBrowser();
    const client = await createClient(t, { client_name: 'Web App', application_type: 'web', redirect_uris: [REDIRECT], grant_types: ['authorization_code'], scope: 'openid', first_party: true });
    config = await oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const signInUrl = async (lang: string) =>
    oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256', ui_locales: lang }).href;

  for (const lang of Object.keys(CONTINUE)) {
    it(`[${lang}] each preset's link has its mark, aria-hidden, and keeps "${CONTINUE[lang]} <name>" as its accessible name; axe-clean`, async () => {
      const context = await browser.newContext({ bypassCSP: true });
      const page = await context.newPage();
      await page.goto(await signInUrl(lang));
      expect(await page.locator('html').getAttribute('lang')).toBe(lang);
      for (const [, display] of PRESETS) {
        const link = page.getByRole('link', { name: `${CONTINUE[lang]} ${display}`, exact: true });
        expect(await link.count(), display).toBe(1);
        const mark = link.locator('svg.social-mark');
        expect(await mark.count(), display).toBe(1);
        expect(await mark.getAttribute('aria-hidden')).toBe('true');
        expect(await mark.getAttribute('focusable')).toBe('false');
        expect(await mark.locator('path, rect, circle').count()).toBeGreaterThan(0);
      }
      const generic = page.getByRole('link', { name: `${CONTINUE[lang]} Corp SSO`, exact: true });
      expect(await generic.count()).toBe(1);
      expect(await generic.locator('svg').count()).toBe(0);
      // Six distinct drawings, not one icon repeated.
      const drawings = await page.locator('svg.social-mark').evaluateAll((svgs) => svgs.map((s) => s.innerHTML));
      expect(new Set(drawings).size).toBe(PRESETS.length);
      expect(await seriousViolations(page)).toEqual([]);
      await context.close();
    });
  }

  it('draws the marks under the page CSP: no style attributes, no CSP violation reported, each mark laid out at 20x20 beside its text', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const refused: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) refused.push(m.text());
    });
    const res = await page.goto(await signInUrl('en'));
    const csp = res!.headers()['content-security-policy']!;
    expect(csp).toContain("style-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(await page.locator('svg.social-mark [style], svg.social-mark[style], svg.social-mark script').count()).toBe(0);
    for (const [, display] of PRESETS) {
      const link = page.getByRole('link', { name: `Continue with ${display}`, exact: true });
      const box = await link.locator('svg.social-mark').boundingBox();
      expect(box, display).not.toBeNull();
      expect(Math.round(box!.width)).toBe(20);
      expect(Math.round(box!.height)).toBe(20);
      const text = await link.locator('span').boundingBox();
      expect(box!.x + box!.width).toBeLessThanOrEqual(text!.x); // the mark before the text, on one line
    }
    expect(refused).toEqual([]);
    await context.close();
  });
});
