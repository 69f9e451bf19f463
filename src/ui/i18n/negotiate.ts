/**
 * Which language a page or e-mail is in. In order: the user's explicit choice (the switcher's
 * `lang` parameter, remembered in a cookie), the relying party's `ui_locales` (OIDC Core 3.1.2.1,
 * space-separated, preferred first), the browser's Accept-Language (q-values honoured), and the
 * tenant's `application.default_locale`; each only among the tenant's
 * `application.available_locales` (default: every language the product has). A tag matches by its
 * primary subtag (`fr-CA` -> `fr`): the product has one variant per language.
 */
import { LOCALES, isLocale, type Locale } from './index.js';

export interface LocaleSettings {
  available_locales?: readonly string[];
  default_locale?: string;
}

export interface LocaleInputs {
  /** `lang` query parameter or the remembered choice. */
  chosen?: readonly (string | null | undefined)[];
  uiLocales?: string | null;
  acceptLanguage?: string | null;
}

/** The languages this tenant offers, in the product's order, never empty. */
export function offeredLocales(settings: LocaleSettings | undefined): Locale[] {
  const wanted = settings?.available_locales?.map(primary).filter(isLocale);
  const list = wanted?.length ? LOCALES.filter((l) => wanted.includes(l)) : [...LOCALES];
  return list.length ? list : ['en'];
}

function primary(tag: string): string {
  return tag.trim().toLowerCase().split(/[-_]/)[0] ?? '';
}

/** Accept-Language ranges, best first (RFC 9110 12.5.4); `*` and q=0 dropped. */
export function acceptLanguageRanges(header: string): string[] {
  return header
    .split(',')
    .slice(0, 30)
    .map((part, i) => {
      const [tag = '', ...params] = part.trim().split(';');
      const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
      const q = qParam ? Number(qParam.slice(2)) : 1;
      return { tag: tag.trim(), q: Number.isFinite(q) ? q : 0, i };
    })
    .filter((r) => /^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/.test(r.tag) && r.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i)
    .map((r) => r.tag);
}

/** The first of `tags` (by primary subtag) among `offered`. */
function pick(tags: readonly (string | null | undefined)[], offered: readonly Locale[]): Locale | undefined {
  for (const tag of tags) {
    const p = tag ? primary(tag) : '';
    if (isLocale(p) && offered.includes(p)) return p;
  }
  return undefined;
}

const uiLocalesTags = (uiLocales: string | null | undefined) => (uiLocales ?? '').split(' ').slice(0, 20);

export function negotiateLocale(inputs: LocaleInputs, settings: LocaleSettings | undefined): Locale {
  const offered = offeredLocales(settings);
  return (
    pick(inputs.chosen ?? [], offered) ??
    pick(uiLocalesTags(inputs.uiLocales), offered) ??
    pick(acceptLanguageRanges(inputs.acceptLanguage ?? ''), offered) ??
    pick([settings?.default_locale], offered) ??
    offered[0]!
  );
}

/** The language `ui_locales` asks for among the offered ones; undefined when it names none of them. */
export function uiLocalesLocale(uiLocales: string | null | undefined, settings: LocaleSettings | undefined): Locale | undefined {
  return pick(uiLocalesTags(uiLocales), offeredLocales(settings));
}
