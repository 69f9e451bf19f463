/**
 * The language catalogues and the choice of language: every key in every language (same
 * placeholders, nothing empty), the translator's escaping, and the negotiation order of
 * CONTRACT.md (explicit choice, ui_locales, Accept-Language, among available_locales, default).
 */
import { describe, expect, it } from 'vitest';
import { html } from '../../src/ui/html.js';
import { CATALOGUES, LOCALES, translator } from '../../src/ui/i18n/index.js';
import { en } from '../../src/ui/i18n/messages/en.js';
import { acceptLanguageRanges, negotiateLocale, offeredLocales, uiLocalesLocale } from '../../src/ui/i18n/negotiate.js';
import { buildPageUi } from '../../src/ui/page-ui.js';

const placeholders = (s: string) => [...s.matchAll(/\{([a-z_]+)\}/g)].map((m) => m[1]).sort();

describe('message catalogues', () => {
  it('has the four languages of CONTRACT.md', () => {
    expect([...LOCALES].sort()).toEqual(['de', 'en', 'es', 'fr']);
  });

  for (const lang of LOCALES) {
    it(`${lang}: every key of en.ts, no other, none empty, same placeholders`, () => {
      const messages = CATALOGUES[lang] as Record<string, string>;
      expect(Object.keys(messages).sort()).toEqual(Object.keys(en).sort());
      for (const [key, text] of Object.entries(en)) {
        expect(typeof messages[key], key).toBe('string');
        expect(messages[key]!.trim().length, key).toBeGreaterThan(0);
        expect(placeholders(messages[key]!), key).toEqual(placeholders(text));
      }
    });
  }

  it('other languages really are translated (not English copies)', () => {
    for (const lang of ['fr', 'de', 'es'] as const) {
      const same = Object.keys(en).filter((k) => CATALOGUES[lang][k as keyof typeof en] === en[k as keyof typeof en]);
      // A few words are the same in two languages; most must differ.
      expect(same.length, `${lang}: ${same.join(', ')}`).toBeLessThan(Object.keys(en).length / 10);
    }
  });
});

describe('translator', () => {
  it('fills placeholders; html() escapes text and values but keeps Html', () => {
    const t = translator('fr');
    expect(t.lang).toBe('fr');
    expect(t('logout.question', { client: 'Shop' })).toBe('Voulez-vous vous déconnecter de Shop ?');
    expect(t.html('signin.to_continue', { client: '<script>x</script>' }).value).toBe('pour continuer vers &lt;script&gt;x&lt;/script&gt;');
    expect(t.html('signin.to_continue', { client: html`<strong>${'A&B'}</strong>` }).value).toBe('pour continuer vers <strong>A&amp;B</strong>');
    // An apostrophe in the catalogue is escaped in markup.
    expect(translator('fr').html('consent.title').value).toBe('Autoriser l&#39;accès');
  });
});

describe('negotiation', () => {
  it('takes the explicit choice, then ui_locales, then Accept-Language, then the default', () => {
    expect(negotiateLocale({ chosen: ['de'], uiLocales: 'fr', acceptLanguage: 'es' }, undefined)).toBe('de');
    expect(negotiateLocale({ uiLocales: 'it fr-CA en', acceptLanguage: 'es' }, undefined)).toBe('fr');
    expect(negotiateLocale({ acceptLanguage: 'it, de-AT;q=0.8, fr;q=0.9' }, undefined)).toBe('fr');
    expect(negotiateLocale({ acceptLanguage: 'it' }, { default_locale: 'es' })).toBe('es');
    expect(negotiateLocale({}, undefined)).toBe('en');
  });

  it('only among the tenant’s available locales, falling back to its default', () => {
    const settings = { available_locales: ['en', 'de'], default_locale: 'de' };
    expect(offeredLocales(settings)).toEqual(['en', 'de']);
    expect(negotiateLocale({ uiLocales: 'fr', acceptLanguage: 'es' }, settings)).toBe('de');
    expect(negotiateLocale({ chosen: ['fr'], acceptLanguage: 'en-GB' }, settings)).toBe('en');
    // Locales the product does not have are ignored; nothing left means English.
    expect(offeredLocales({ available_locales: ['pt-BR'] })).toEqual(['en', 'fr', 'de', 'es']);
  });

  it('the language ui_locales alone names (carried past the logout confirmation): none when it names no offered one', () => {
    expect(uiLocalesLocale('it fr-CA en', undefined)).toBe('fr');
    expect(uiLocalesLocale('fr', { available_locales: ['en', 'de'] })).toBeUndefined();
    // Never the default: a ui_locales the tenant cannot honour leaves Accept-Language its say.
    expect(uiLocalesLocale('tlh', { default_locale: 'de' })).toBeUndefined();
    expect(uiLocalesLocale(undefined, undefined)).toBeUndefined();
  });

  it('parses Accept-Language q-values and ignores junk', () => {
    expect(acceptLanguageRanges('fr;q=0.5, de, *;q=0.1, es;q=0')).toEqual(['de', 'fr']);
    expect(acceptLanguageRanges(';;;,q=x')).toEqual([]);
  });

  it('the switcher links keep the query, replace lang, and only an offered explicit choice sets the cookie', () => {
    const { ui, setCookie } = buildPageUi({ stylesheet: '/s.css' }, { path: '/oidc/v1/interaction/abc', query: 'method=recovery&lang=de', headers: {} });
    expect(ui.t.lang).toBe('de');
    expect(setCookie).toMatch(/^svc_lang=de; Path=\/;.*HttpOnly/);
    expect(ui.languages.map((l) => l.href)).toContain('/oidc/v1/interaction/abc?method=recovery&lang=fr');
    expect(ui.languages.find((l) => l.current)?.lang).toBe('de');
    const junk = buildPageUi({ stylesheet: '/s.css' }, { path: '/x', query: 'lang=%3Cscript%3E', headers: { cookie: 'svc_lang=es' } });
    expect(junk.ui.t.lang).toBe('es');
    expect(junk.setCookie).toBeUndefined();
    const single = buildPageUi({ stylesheet: '/s.css', application: { available_locales: ['fr'] } }, { path: '/x', headers: {} });
    expect(single.ui.languages).toEqual([]);
    expect(single.ui.t.lang).toBe('fr');
  });
});
