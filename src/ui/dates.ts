/**
 * Times as the pages show them: in the page's language, to the minute, in UTC and saying so (the
 * service knows no user's time zone). One format for every list of the account page (sessions,
 * passkeys), so a date reads the same wherever it appears.
 */
import type { Locale, Translator } from './i18n/index.js';

const formats = new Map<Locale, Intl.DateTimeFormat>();

export function pageTime(t: Translator, iso: string): string {
  let format = formats.get(t.lang);
  if (!format) formats.set(t.lang, (format = new Intl.DateTimeFormat(t.lang, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' })));
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? '?' : `${format.format(at)} UTC`;
}
