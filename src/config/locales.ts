/**
 * The languages the product's pages and e-mails are written in (src/ui/i18n/messages). A locale
 * setting may name only these, globally or per tenant: the pages match a tag by its primary
 * subtag (`fr-CA` is served in French), so a tag of another language would be advertised in
 * discovery (`ui_locales_supported`) and then ignored. Such a setting is refused instead (a
 * setting the product accepts must act).
 */
import { z } from 'zod';

export const PRODUCT_LOCALES = ['en', 'fr', 'de', 'es'] as const;

const TAG = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;

/** True when the tag's primary subtag is one of the product's languages. */
export function isProductLanguage(tag: string): boolean {
  return (PRODUCT_LOCALES as readonly string[]).includes(tag.split('-')[0] ?? '');
}

/** A language tag (`en`, `pt-BR`) of one of the product's languages. */
export const productLocale = z
  .string()
  .regex(TAG, 'must be a language tag such as en or fr-CA')
  .refine(isProductLanguage, `must be one of the product's languages: ${PRODUCT_LOCALES.join(', ')} (a regional tag such as fr-CA is served in its language)`);
