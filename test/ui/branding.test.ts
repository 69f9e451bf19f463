/**
 * Branding: readable contrast (WCAG AA 4.5:1) of the product's own light and dark palettes and of
 * every brand stylesheet, whatever colours a tenant picks; nothing but validated values reaches CSS.
 */
import { describe, expect, it } from 'vitest';
import { brandOf, brandStylesheet, contrastRatio, readableOn, readablePalette } from '../../src/ui/branding.js';
import { STYLESHEET } from '../../src/ui/style.js';

function vars(block: string): Record<string, string> {
  return Object.fromEntries([...block.matchAll(/--([a-z-]+):(#[0-9a-fA-F]+)/g)].map((m) => [m[1]!, m[2]!]));
}

describe('contrast', () => {
  it('computes WCAG ratios', () => {
    expect(contrastRatio('#000000', '#ffffff')).toBeCloseTo(21, 1);
    expect(contrastRatio('#777777', '#ffffff')).toBeCloseTo(4.48, 1);
    expect(readableOn('#ffcc00')).toBe('#000000');
    expect(readableOn('#1a237e')).toBe('#ffffff');
  });

  it('the default light and dark palettes are readable: text, muted text, buttons, errors', () => {
    const light = vars(/:root\{([^}]*)\}/.exec(STYLESHEET)![1]!);
    const dark = vars(/prefers-color-scheme:dark\)\{:root\{([^}]*)\}/.exec(STYLESHEET)![1]!);
    for (const p of [light, dark]) {
      expect(contrastRatio(p.fg!, p.card!)).toBeGreaterThanOrEqual(4.5);
      expect(contrastRatio(p.muted!, p.card!)).toBeGreaterThanOrEqual(4.5);
      expect(contrastRatio(p['accent-fg']!, p.accent!)).toBeGreaterThanOrEqual(4.5);
      expect(contrastRatio(p.accent!, p.card!)).toBeGreaterThanOrEqual(4.5);
      expect(contrastRatio(p.danger!, p.card!)).toBeGreaterThanOrEqual(4.5);
      // WCAG 1.4.11: a text field's and a secondary button's border is what draws it (3:1).
      expect(contrastRatio(p['field-border']!, p.card!)).toBeGreaterThanOrEqual(3);
    }
    expect(STYLESHEET).toMatch(/input\[type=email\][^{]*\{[^}]*border:1px solid var\(--field-border\)/);
    // WCAG 1.4.10: a long e-mail address wraps inside the card at 320 px instead of scrolling sideways.
    expect(STYLESHEET).toMatch(/\.card\{[^}]*overflow-wrap:anywhere/);
  });

  it('a tenant’s unreadable text colour is replaced; button text follows the brand colour', () => {
    expect(readablePalette({ text: '#eeeeee', surface: '#ffffff' }, '#ffffff').text).toBe('#000000');
    expect(readablePalette({ text: '#222222', surface: '#ffffff' }, '#ffffff').text).toBe('#222222');
    const css = brandStylesheet(brandOf({ palette_light: { primary: '#ffcc00', text: '#eeeeee' }, palette_dark: { primary: '#1a237e', surface: '#000000' } }, undefined));
    const light = vars(/:root\{([^}]*)\}/.exec(css)![1]!);
    expect(contrastRatio(light['accent-fg']!, light.accent!)).toBeGreaterThanOrEqual(4.5);
    expect(contrastRatio(light.fg!, '#ffffff')).toBeGreaterThanOrEqual(4.5);
    expect(contrastRatio(light.link!, '#ffffff')).toBeGreaterThanOrEqual(4.5);
    expect(css).toContain('@media (prefers-color-scheme:dark)');
  });

  it('a page background alone changes neither the text on the card nor leaves the footer unreadable (--page-fg)', () => {
    const css = brandStylesheet(brandOf({ palette_light: { background: '#000000' } }, undefined));
    const light = vars(/:root\{([^}]*)\}/.exec(css)![1]!);
    expect(light.fg).toBeUndefined(); // the product's text on the product's white card
    expect(light['page-fg']).toBe('#ffffff');
    const kept = vars(/:root\{([^}]*)\}/.exec(brandStylesheet(brandOf({ palette_light: { background: '#f0f0f0', text: '#222222' } }, undefined)))![1]!);
    expect(kept['page-fg']).toBe('#222222');
    expect(brandStylesheet(brandOf({ palette_light: { primary: '#2456d3' } }, undefined))).not.toContain('--page-fg');
  });

  it('links read on the card they sit on in dark mode too (the default dark card unless the palette sets a surface)', () => {
    const DEFAULT_CARD = { light: '#ffffff', dark: '#1b212b' };
    const darkBlock = (css: string) => vars(/prefers-color-scheme:dark\)\{:root\{([^}]*)\}/.exec(css)![1]!);
    const lightBlock = (css: string) => vars(/^:root\{([^}]*)\}/.exec(css)![1]!);
    // The audit's case: a light primary on the default dark card is its own link colour, not black.
    expect(brandStylesheet(brandOf({ palette_dark: { primary: '#abcdef' } }, undefined))).toBe('@media (prefers-color-scheme:dark){:root{--accent:#abcdef;--accent-fg:#000000;--link:#abcdef}}');
    for (const primary of ['#abcdef', '#ffcc00', '#1a237e', '#777777', '#000000', '#ffffff', '#7aa2ff', '#2456d3']) {
      for (const extra of [{}, { surface: '#000000' }, { surface: '#ffffff' }, { background: '#000000' }, { text: '#222222' }, { text: '#eeeeee', surface: '#101010' }]) {
        const palette = { primary, ...extra };
        const dark = darkBlock(brandStylesheet(brandOf({ palette_dark: palette }, undefined)));
        const light = lightBlock(brandStylesheet(brandOf({ palette_light: palette }, undefined)));
        const ctx = JSON.stringify(palette);
        expect(contrastRatio(dark.link!, palette.surface ?? DEFAULT_CARD.dark), `dark ${ctx}`).toBeGreaterThanOrEqual(4.5);
        expect(contrastRatio(light.link!, palette.surface ?? DEFAULT_CARD.light), `light ${ctx}`).toBeGreaterThanOrEqual(4.5);
        // The brand colour itself whenever it reads on the card.
        if (contrastRatio(primary, palette.surface ?? DEFAULT_CARD.dark) >= 4.5) expect(dark.link, `dark ${ctx}`).toBe(primary);
        if (contrastRatio(primary, palette.surface ?? DEFAULT_CARD.light) >= 4.5) expect(light.link, `light ${ctx}`).toBe(primary);
      }
    }
  });

  it('a palette that sets only the card keeps every text readable: muted and error text on the card, the language switcher on the page (--page-fg)', () => {
    // The accessibility audit's palette: a light card in dark mode, a dark card in light mode.
    const css = brandStylesheet(brandOf({ palette_dark: { surface: '#f4f4f4', primary: '#0b57d0' }, palette_light: { surface: '#202530', primary: '#8ab4f8' } }, undefined));
    const dark = vars(/prefers-color-scheme:dark\)\{:root\{([^}]*)\}/.exec(css)![1]!);
    const light = vars(/^:root\{([^}]*)\}/.exec(css)![1]!);
    for (const [block, card, page] of [[dark, '#f4f4f4', '#11151c'], [light, '#202530', '#f4f6fa']] as const) {
      for (const v of ['fg', 'muted', 'danger', 'link']) expect(contrastRatio(block[v]!, card), `${v} on ${card}`).toBeGreaterThanOrEqual(4.5);
      expect(contrastRatio(block['page-fg']!, page), `page-fg on ${page}`).toBeGreaterThanOrEqual(4.5);
    }
  });

  it('only hex colours and a plain font list reach the stylesheet', () => {
    const css = brandStylesheet(brandOf({ font_family: 'x;}</style><script>', palette_light: { primary: 'red;}body{display:none' } }, undefined));
    expect(css).toBe('');
    expect(brandStylesheet(brandOf({ font_family: '"Inter", sans-serif' }, undefined))).toBe('body{font-family:"Inter", sans-serif,system-ui,sans-serif}');
  });
});
