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
    }
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

  it('only hex colours and a plain font list reach the stylesheet', () => {
    const css = brandStylesheet(brandOf({ font_family: 'x;}</style><script>', palette_light: { primary: 'red;}body{display:none' } }, undefined));
    expect(css).toBe('');
    expect(brandStylesheet(brandOf({ font_family: '"Inter", sans-serif' }, undefined))).toBe('body{font-family:"Inter", sans-serif,system-ui,sans-serif}');
  });
});
