/**
 * What every end-user page needs besides its own content: the stylesheet, the translator of the
 * negotiated language, the language switcher's links and (branding.ts) the tenant's brand. Built
 * once per request from the tenant's settings and the request (buildPageUi), then handed to the
 * page functions of pages.ts as `ui`.
 */
import { LANGUAGE_NAMES, translator, type Locale, type Translator } from './i18n/index.js';
import type { Brand } from './branding.js';
import { negotiateLocale, offeredLocales, type LocaleSettings } from './i18n/negotiate.js';

/** The switcher's choice, remembered for the forms that follow (POST answers have no `lang` parameter). */
export const LANG_COOKIE = 'svc_lang';
const LANG_COOKIE_MAX_AGE = 365 * 24 * 3600;

export interface LanguageLink {
  lang: Locale;
  name: string;
  href: string;
  current: boolean;
}

export interface PageUi {
  stylesheet: string;
  /** The tenant's brand stylesheet (palettes, font), when it has one. */
  brandStylesheet?: string;
  brand?: Brand;
  t: Translator;
  /** Empty when the tenant offers one language. */
  languages: LanguageLink[];
}

/** The tenant's settings a page depends on (from its effective configuration). */
export interface UiSettings {
  stylesheet: string;
  brandStylesheet?: string;
  brand?: Brand;
  application?: LocaleSettings;
}

export interface UiRequest {
  /** Where the switcher's links point: the GET address of this page, without query. */
  path: string;
  /** The query of that address (kept in the switcher's links, `lang` replaced). */
  query?: string;
  headers: Readonly<Record<string, string | undefined>>;
}

export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * The page context for this request, and the Set-Cookie to send when the request carries an
 * explicit `lang` choice the tenant offers.
 */
export function buildPageUi(settings: UiSettings, req: UiRequest, uiLocales?: unknown): { ui: PageUi; setCookie?: string } {
  const query = new URLSearchParams(req.query ?? '');
  const asked = query.get('lang');
  const remembered = cookieValue(req.headers.cookie, LANG_COOKIE);
  const lang = negotiateLocale(
    { chosen: [asked, remembered], uiLocales: typeof uiLocales === 'string' ? uiLocales : undefined, acceptLanguage: req.headers['accept-language'] },
    settings.application,
  );
  const offered = offeredLocales(settings.application);
  const languages =
    offered.length < 2
      ? []
      : offered.map((l) => {
          const q = new URLSearchParams(query);
          q.set('lang', l);
          return { lang: l, name: LANGUAGE_NAMES[l], href: `${req.path}?${q.toString()}`, current: l === lang };
        });
  const setCookie = asked && asked === lang ? `${LANG_COOKIE}=${lang}; Path=/; Max-Age=${LANG_COOKIE_MAX_AGE}; SameSite=Lax; HttpOnly` : undefined;
  return { ui: { stylesheet: settings.stylesheet, brandStylesheet: settings.brandStylesheet, brand: settings.brand, t: translator(lang), languages }, setCookie };
}

/** Adds the Set-Cookie of a language choice to a response's headers. */
export function withCookie<T extends { headers?: Record<string, string | string[]> }>(res: T, cookie: string | undefined): T {
  if (!cookie) return res;
  const prev = res.headers?.['set-cookie'];
  const all = prev === undefined ? [cookie] : Array.isArray(prev) ? [...prev, cookie] : [prev, cookie];
  res.headers = { ...res.headers, 'set-cookie': all };
  return res;
}
