/**
 * A tenant's brand on its pages and e-mails: `branding` (company name, logos, favicon, font,
 * light and dark palettes), `application.title` and `description`, and the footer's links
 * (`integrations.urls`: website, privacy policy, terms). Every value is validated at write time
 * (tenancy/config/sections.ts: http(s) URLs, hex colours, a font-list pattern) and escaped again
 * where it is rendered. Colours and the font go into a per-tenant stylesheet served from the
 * tenant's own origin (CSP `style-src 'self'`, no inline styles); logos and favicon are
 * <img>/<link> URLs (CSP `img-src` allows their origins).
 */
import { createHash } from 'node:crypto';

export interface Palette {
  primary?: string;
  secondary?: string;
  accent?: string;
  background?: string;
  surface?: string;
  text?: string;
  error?: string;
}

export interface BrandingSettings {
  company_name?: string;
  logo_light_url?: string;
  logo_dark_url?: string;
  favicon_url?: string;
  font_family?: string;
  palette_light?: Palette;
  palette_dark?: Palette;
}

export interface Brand {
  /** Company name, or the application title, or undefined (product default). */
  name?: string;
  /** The page title suffix: application.title. */
  title?: string;
  /** `application.description`: a line under the brand on the pages. */
  description?: string;
  /** `integrations.urls`: the footer's links. */
  links: BrandLinks;
  logoLight?: string;
  logoDark?: string;
  favicon?: string;
  font?: string;
  light: Palette;
  dark: Palette;
}

/** The links of the pages' footer (`integrations.urls`): the organisation's website and policies. */
export interface BrandLinks {
  website?: string;
  privacy_policy?: string;
  terms?: string;
}

/** What a tenant's configuration says about its brand (the effective configuration's shape). */
export interface BrandSource {
  application: { title?: string };
  overrides: {
    branding?: BrandingSettings;
    application?: { title?: string; description?: string };
    integrations?: { urls?: BrandLinks };
  };
}

/** The tenant's brand from its effective configuration: pages and e-mails of the account host and the actor alike. */
export function tenantBrand(config: BrandSource): Brand {
  const app = config.overrides.application;
  return brandOf(config.overrides.branding, app?.title ?? config.application.title, { description: app?.description, links: config.overrides.integrations?.urls });
}

export function brandOf(branding: BrandingSettings | undefined, title: string | undefined, extra: { description?: string; links?: BrandLinks } = {}): Brand {
  const b = branding ?? {};
  return {
    name: b.company_name ?? title,
    title,
    description: extra.description,
    links: extra.links ?? {},
    logoLight: b.logo_light_url,
    logoDark: b.logo_dark_url ?? b.logo_light_url,
    favicon: b.favicon_url,
    font: b.font_family,
    light: b.palette_light ?? {},
    dark: b.palette_dark ?? {},
  };
}

/** The product's own colours (src/ui/style.ts `--card`, `--fg`, `--bg`, `--muted`, `--danger`), what a palette without them shows. */
const DEFAULT_CARD = { light: '#ffffff', dark: '#1b212b' } as const;
const DEFAULT_TEXT = { light: '#1d2433', dark: '#e6e9ef' } as const;
const DEFAULT_BG = { light: '#f4f6fa', dark: '#11151c' } as const;
const DEFAULT_MUTED = { light: '#5b6475', dark: '#a3abba' } as const;
const DEFAULT_DANGER = { light: '#b3261e', dark: '#ff8a80' } as const;

const VARS: Array<[keyof Palette, string]> = [
  ['primary', '--accent'],
  ['background', '--bg'],
  ['surface', '--card'],
  ['text', '--fg'],
  ['error', '--danger'],
  ['secondary', '--muted'],
];

/** Only what the tenant sets; hex colours and the font list are safe by their validation, re-checked here. */
const HEX = /^#[0-9a-fA-F]{3,8}$/;

/** A colour the tenant set, when it is a valid hex colour. */
const own = (colour: string | undefined): string | undefined => (colour && HEX.test(colour) ? colour : undefined);

/** The card a palette's text and links are read on: its surface, else the product's card of that scheme. */
const cardOf = (p: Palette, defaultCard: string): string => own(p.surface) ?? defaultCard;

/** The scheme whose card is `defaultCard`. */
const schemeOf = (defaultCard: string): 'light' | 'dark' => (defaultCard === DEFAULT_CARD.light ? 'light' : 'dark');

/** The product's text colour of the scheme whose card is `defaultCard`. */
const defaultTextFor = (defaultCard: string): string => DEFAULT_TEXT[schemeOf(defaultCard)];

/** The first colour that reads on `card` (4.5:1), else black or white. */
const firstReadable = (candidates: readonly string[], card: string): string => candidates.find((c) => contrastRatio(c, card) >= 4.5) ?? readableOn(card);

/**
 * A palette whose text would be hard to read on its card (WCAG AA, 4.5:1) gets black or white text
 * instead: a tenant can choose its colours, not make its sign-in page unreadable. The text (`--fg`)
 * is read on the card (the palette's surface, else the product's card of that scheme); what sits on
 * the page background around it has its own colour (pageText).
 */
export function readablePalette(p: Palette, defaultCard: string): Palette {
  const card = cardOf(p, defaultCard);
  const out = { ...p };
  if (own(out.text) && contrastRatio(out.text!, card) < 4.5) out.text = readableOn(card);
  if (!out.text && own(p.surface) && contrastRatio(defaultTextFor(defaultCard), card) < 4.5) out.text = readableOn(card);
  // The secondary (muted) and error texts are read on the card too: the tenant's, else the product's
  // of this scheme, else of the other scheme (a light card in dark mode), else black or white.
  for (const [key, defaults] of [['secondary', DEFAULT_MUTED], ['error', DEFAULT_DANGER]] as const) {
    const colour = own(out[key]) ?? defaults[schemeOf(defaultCard)];
    if (contrastRatio(colour, card) < 4.5) out[key] = firstReadable([defaults.light, defaults.dark], card);
  }
  return out;
}

/**
 * The colour of what sits on the page background outside the card (the footer's links, the
 * language switcher): the text colour where it reads there, else black or white. Undefined when
 * the palette keeps the product's background and text, where `--fg` reads.
 */
function pageText(p: Palette, defaultCard: string): string | undefined {
  // The product's background with the product's text needs nothing; a text colour changed to read
  // on the card (readablePalette) may not read on the product's background around it.
  if (!own(p.background) && !own(p.text)) return undefined;
  const background = own(p.background) ?? DEFAULT_BG[schemeOf(defaultCard)];
  const text = own(p.text) ?? defaultTextFor(defaultCard);
  return contrastRatio(text, background) >= 4.5 ? text : readableOn(background);
}

/**
 * Links in the brand colour when it reads on the card, else in the text colour when that does, else
 * black or white. Every `--link` link is inside `main.card` (footer and language links use
 * `--page-fg`), whose background is `--card` (cardOf). `background` only paints the page around the
 * card, so it is not what links are read on.
 */
function linkColour(p: Palette, defaultCard: string): string {
  const card = cardOf(p, defaultCard);
  if (contrastRatio(p.primary!, card) >= 4.5) return p.primary!;
  const text = own(p.text);
  return text && contrastRatio(text, card) >= 4.5 ? text : readableOn(card);
}

export function brandStylesheet(brand: Brand): string {
  const decl = (p: Palette, defaultCard: string) => {
    const page = pageText(p, defaultCard);
    return VARS.filter(([k]) => p[k] && HEX.test(p[k]!))
      .map(([k, v]) => `${v}:${p[k]}`)
      .concat(p.primary && HEX.test(p.primary) ? [`--accent-fg:${readableOn(p.primary)}`, `--link:${linkColour(p, defaultCard)}`] : [])
      .concat(page ? [`--page-fg:${page}`] : [])
      .join(';');
  };
  const parts: string[] = [];
  const light = decl(readablePalette(brand.light, DEFAULT_CARD.light), DEFAULT_CARD.light);
  const dark = decl(readablePalette(brand.dark, DEFAULT_CARD.dark), DEFAULT_CARD.dark);
  if (light) parts.push(`:root{${light}}`);
  if (dark) parts.push(`@media (prefers-color-scheme:dark){:root{${dark}}}`);
  if (brand.font && /^[A-Za-z0-9 ,'"-]+$/.test(brand.font)) parts.push(`body{font-family:${brand.font},system-ui,sans-serif}`);
  if (brand.logoDark && brand.logoDark !== brand.logoLight) {
    parts.push('.logo-dark{display:none}@media (prefers-color-scheme:dark){.logo-light{display:none}.logo-dark{display:inline}}');
  }
  return parts.join('\n');
}

export function brandStylesheetEtag(css: string): string {
  return `"${createHash('sha256').update(css).digest('base64url').slice(0, 22)}"`;
}

/** Relative luminance (WCAG 2.x) of a #rgb / #rrggbb colour. */
export function luminance(hex: string): number {
  let h = hex.replace('#', '');
  if (h.length === 3 || h.length === 4) h = [...h.slice(0, 3)].map((c) => c + c).join('');
  const [r, g, b] = [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16) / 255).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}

export function contrastRatio(a: string, b: string): number {
  const [l1, l2] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (l1! + 0.05) / (l2! + 0.05);
}

/** Black or white, whichever reads better on the given background (button text on the brand colour). */
export function readableOn(background: string): string {
  return contrastRatio(background, '#000000') >= contrastRatio(background, '#ffffff') ? '#000000' : '#ffffff';
}
