/**
 * A tenant's brand colour as the link colour, in headless Chromium: on the sign-in page in dark mode
 * the "Create an account" link must read on the card it sits on (WCAG AA, 4.5:1) whatever primary
 * the dark palette sets: light, dark or mid grey. (The third audit of 2026-11-30 found links of a
 * light dark-mode primary computed against a white surface: black on the #1b212b card, 1.3:1.)
 * Light mode is checked alike. Single-tenant on SQLite: the stylesheet does not depend on the backend.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contrastRatio } from '../../src/ui/branding.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser } from '../helpers/browser.js';

/** `rgb(r, g, b)` (a computed colour) as #rrggbb. */
function hexOf(rgb: string): string {
  const m = /^rgba?\((\d+), (\d+), (\d+)(?:, ([\d.]+))?\)$/.exec(rgb);
  if (!m) throw new Error(`not an rgb colour: ${rgb}`);
  if (m[4] !== undefined && Number(m[4]) < 1) throw new Error(`translucent colour: ${rgb}`);
  return `#${[m[1], m[2], m[3]].map((c) => Number(c).toString(16).padStart(2, '0')).join('')}`;
}

describe('brand colour links in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp({ SECURITY_SIGNUP_ENABLED: 'true' });
    token = await t.token('svc:config:write');
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** The sign-in page (through /account) in the given colour scheme: the link's colour and its card's. */
  async function signupLinkColours(scheme: 'light' | 'dark'): Promise<{ link: string; card: string }> {
    const context = await browser.newContext({ colorScheme: scheme, locale: 'en-US' });
    try {
      const page: Page = await context.newPage();
      await page.goto(`${new URL(t.issuer).origin}/account`);
      const link = page.getByRole('link', { name: 'Create an account' });
      await link.waitFor();
      const [color, card] = await link.evaluate((a) => [getComputedStyle(a).color, getComputedStyle(a.closest('main.card')!).backgroundColor]);
      return { link: hexOf(color!), card: hexOf(card!) };
    } finally {
      await context.close();
    }
  }

  it('a palette that sets only the page background keeps the card text and the links around the card readable', async () => {
    // A black page in light mode, a white one in dark mode: the cards stay the product's own.
    const res = await api(t, 'PUT', '/api/v1/config/branding', { token, body: { palette_light: { background: '#000000' }, palette_dark: { background: '#ffffff' } } });
    expect(res.status, res.text).toBe(200);
    for (const scheme of ['light', 'dark'] as const) {
      const context = await browser.newContext({ colorScheme: scheme, locale: 'en-US' });
      try {
        const page = await context.newPage();
        await page.goto(`${new URL(t.issuer).origin}/account`);
        const heading = page.getByRole('heading', { level: 1 });
        const [text, card] = (await heading.evaluate((h) => [getComputedStyle(h).color, getComputedStyle(h.closest('main.card')!).backgroundColor])).map((c) => hexOf(c!));
        expect(contrastRatio(text!, card!), `${scheme}: heading ${text} on card ${card}`).toBeGreaterThanOrEqual(4.5);
        const language = page.getByRole('navigation').getByRole('link').first();
        const [link, body] = (await language.evaluate((a) => [getComputedStyle(a).color, getComputedStyle(document.body).backgroundColor])).map((c) => hexOf(c!));
        expect(contrastRatio(link!, body!), `${scheme}: language link ${link} on page ${body}`).toBeGreaterThanOrEqual(4.5);
      } finally {
        await context.close();
      }
    }
  });

  for (const [name, primary] of [['light', '#abcdef'], ['dark', '#1a237e'], ['mid grey', '#777777']] as const) {
    it(`a ${name} primary (${primary}) gives links that read on the card in dark and light mode`, async () => {
      const res = await api(t, 'PUT', '/api/v1/config/branding', { token, body: { palette_dark: { primary }, palette_light: { primary } } });
      expect(res.status, res.text).toBe(200);
      const dark = await signupLinkColours('dark');
      expect(dark.card).toBe('#1b212b');
      expect(contrastRatio(dark.link, dark.card), JSON.stringify(dark)).toBeGreaterThanOrEqual(4.5);
      // The brand colour itself wherever it reads: #abcdef on the dark card does.
      if (contrastRatio(primary, dark.card) >= 4.5) expect(dark.link).toBe(primary);
      const light = await signupLinkColours('light');
      expect(light.card).toBe('#ffffff');
      expect(contrastRatio(light.link, light.card), JSON.stringify(light)).toBeGreaterThanOrEqual(4.5);
    });
  }
});
