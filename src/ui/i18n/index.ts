/**
 * Languages of the end-user pages and e-mails: the catalogues, a translator per language, and the
 * choice of language for a request (negotiate.ts). Pages never hold literal text; they call
 * `t('key')` so every language has every string (see messages/en.ts for how to add one).
 */
import { PRODUCT_LOCALES } from '../../config/locales.js';
import { Html, esc } from '../escape.js';
import { de } from './messages/de.js';
import { en, type MessageKey, type Messages } from './messages/en.js';
import { es } from './messages/es.js';
import { fr } from './messages/fr.js';

export type { MessageKey, Messages };

export const LOCALES = PRODUCT_LOCALES;
export type Locale = (typeof LOCALES)[number];

export const CATALOGUES: Record<Locale, Messages> = { en, fr, de, es };

/** Each language named in itself, for the switcher. */
export const LANGUAGE_NAMES: Record<Locale, string> = { en: 'English', fr: 'Français', de: 'Deutsch', es: 'Español' };

export function isLocale(value: unknown): value is Locale {
  return typeof value === 'string' && (LOCALES as readonly string[]).includes(value);
}

export type Vars = Record<string, string | number | Html>;

export interface Translator {
  readonly lang: Locale;
  /** Plain text with `{name}` placeholders filled (escape it where it is rendered). */
  (key: MessageKey, vars?: Vars): string;
  /** Markup: the message escaped, placeholders filled with escaped values or trusted Html. */
  html(key: MessageKey, vars?: Vars): Html;
}

const PLACEHOLDER = /\{([a-z_]+)\}/g;

function fill(template: string, vars: Vars | undefined, escape: (s: string) => string): string {
  let out = '';
  let last = 0;
  for (const m of template.matchAll(PLACEHOLDER)) {
    out += escape(template.slice(last, m.index));
    const v = vars?.[m[1]!];
    out += v === undefined ? escape(m[0]) : v instanceof Html ? v.value : escape(String(v));
    last = m.index! + m[0].length;
  }
  return out + escape(template.slice(last));
}

const identity = (s: string) => s;

const cache = new Map<Locale, Translator>();

export function translator(lang: Locale): Translator {
  let t = cache.get(lang);
  if (!t) {
    const messages = CATALOGUES[lang];
    // A key missing at run time (a catalogue built from JSON, say) falls back to English, never to "undefined".
    const text = (key: MessageKey) => messages[key] ?? en[key] ?? key;
    const fn = ((key: MessageKey, vars?: Vars) => fill(text(key), vars, identity)) as Translator;
    Object.defineProperty(fn, 'lang', { value: lang });
    fn.html = (key, vars) => new Html(fill(text(key), vars, esc));
    t = fn;
    cache.set(lang, t);
  }
  return t;
}
