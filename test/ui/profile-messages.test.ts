/**
 * The account page's profile errors in the user's language: the users domain's refusals (a taken
 * username, a value over its limit, any other refused value) become catalogue messages in each
 * language; the domain's English text is never shown.
 */
import { describe, expect, it } from 'vitest';
import { Conflict, Invalid, NotFound } from '../../src/errors.js';
import { LOCALES, translator } from '../../src/ui/i18n/index.js';
import { profileError } from '../../src/ui/account/profile-messages.js';

const ENGLISH_DOMAIN_TEXT = /already exists|must be|not found/i;

describe('profile errors', () => {
  for (const lang of LOCALES) {
    it(`${lang}: a taken username, a value too long, another refused value, anything else`, () => {
      const t = translator(lang);
      const input = { given_name: null, family_name: null, name: 'n'.repeat(201), username: 'ada' };
      const taken = profileError(t, new Conflict('A user with this username already exists', 'username'), input);
      expect(taken).toBe(t('account.profile.username_taken'));
      const long = profileError(t, new Invalid([{ field: 'name', message: 'must be at most 200 characters' }]), input);
      expect(long).toBe(t('account.profile.too_long', { field: t('account.profile.name'), max: 200 }));
      const bad = profileError(t, new Invalid([{ field: 'username', message: 'must not be empty' }]), input);
      expect(bad).toBe(t('account.profile.field_invalid', { field: t('account.profile.username') }));
      const other = profileError(t, new NotFound('User x not found'), input);
      expect(other).toBe(t('account.profile.not_saved'));
      for (const text of [taken, long, bad, other]) {
        expect(text).not.toMatch(ENGLISH_DOMAIN_TEXT);
        expect(text).not.toContain('{');
      }
    });
  }

  it('a server-side failure is not a refusal: left to the caller (a 5xx page)', () => {
    expect(profileError(translator('en'), new Error('boom'), {})).toBeUndefined();
  });
});
