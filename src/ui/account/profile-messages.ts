/**
 * The account page's profile errors in the page's language. The users domain words its refusals in
 * English for the Management API (a 409 for a taken username, a 422 naming each field); the page
 * names the case from the catalogue instead and never repeats the domain's text.
 */
import { Conflict, Invalid, UniqueViolation } from '../../errors.js';
import { toProblem } from '../../http/problem.js';
import { PROFILE_MAX, overProfileLimit } from '../../users/schema.js';
import type { MessageKey, Translator } from '../i18n/index.js';

/** The profile form's fields and their labels (limits: the users domain's PROFILE_MAX). */
export const PROFILE_LABELS = {
  given_name: 'account.profile.given_name',
  family_name: 'account.profile.family_name',
  name: 'account.profile.name',
  username: 'account.profile.username',
} as const satisfies Record<string, MessageKey>;

export type ProfileFormField = keyof typeof PROFILE_LABELS;

const isFormField = (field: string): field is ProfileFormField => Object.hasOwn(PROFILE_LABELS, field);

/** The form field a refused profile change is about, if it names one (its message is tied to it). */
export function profileErrorField(err: unknown): ProfileFormField | undefined {
  if ((err instanceof Conflict || err instanceof UniqueViolation) && err.field === 'username') return 'username';
  return err instanceof Invalid ? err.errors.map((e) => e.field).find(isFormField) : undefined;
}

/**
 * The message for a refused profile change, or undefined when `err` is no refusal (a failure the
 * caller raises, answered as a server error). `input`: the values the user sent, by field.
 */
export function profileError(t: Translator, err: unknown, input: Partial<Record<string, string | null>>): string | undefined {
  if ((err instanceof Conflict || err instanceof UniqueViolation) && err.field === 'username') return t('account.profile.username_taken');
  if (err instanceof Invalid) {
    const field = err.errors.map((e) => e.field).find(isFormField);
    if (field) {
      const label = t(PROFILE_LABELS[field]);
      if (overProfileLimit(field, input[field] ?? '')) return t('account.profile.too_long', { field: label, max: PROFILE_MAX[field] });
      return t('account.profile.field_invalid', { field: label });
    }
  }
  const problem = toProblem(err);
  return problem && problem.status < 500 ? t('account.profile.not_saved') : undefined;
}
