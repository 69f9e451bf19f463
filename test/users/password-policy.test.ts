/** The password policy rules (src/users/password-policy.ts), each able to fail on its own. */
import { describe, expect, it } from 'vitest';
import { isBreached, ruleMessage, unmetPasswordRules, type PasswordPolicy } from '../../src/users/password-policy.js';

const loose: PasswordPolicy = { min_length: 8, require_uppercase: false, require_lowercase: false, require_digit: false, require_symbol: false };
const strict: PasswordPolicy = { min_length: 12, require_uppercase: true, require_lowercase: true, require_digit: true, require_symbol: true, check_breached: true };

describe('password policy', () => {
  it('names each unmet rule', () => {
    expect(unmetPasswordRules('short', loose)).toEqual(['min_length']);
    expect(unmetPasswordRules('x'.repeat(129), loose)).toEqual(['max_length']);
    expect(unmetPasswordRules('alllowercase1!', strict)).toEqual(['uppercase']);
    expect(unmetPasswordRules('ALLUPPERCASE1!', strict)).toEqual(['lowercase']);
    expect(unmetPasswordRules('NoDigitsHere!!', strict)).toEqual(['digit']);
    expect(unmetPasswordRules('NoSymbols1234', strict)).toEqual(['symbol']);
    expect(unmetPasswordRules('Fine-Password-42', strict)).toEqual([]);
  });

  it('counts characters as the user sees them and accepts non-Latin letters', () => {
    expect(unmetPasswordRules('Ärger-über-42x', strict)).toEqual([]);
    expect(unmetPasswordRules('🔑🔑🔑🔑🔑🔑🔑', loose)).toEqual(['min_length']);
  });

  it('refuses the user’s own e-mail address or its local part, ignoring case', () => {
    expect(unmetPasswordRules('Ada.Lovelace@Example.com', loose, 'ada.lovelace@example.com')).toEqual(['email']);
    expect(unmetPasswordRules('ADA.LOVELACE', loose, 'ada.lovelace@example.com')).toEqual(['email']);
    expect(unmetPasswordRules('ada.lovelace-2024', loose, 'ada.lovelace@example.com')).toEqual([]);
  });

  it('refuses common breached passwords only when check_breached is on', () => {
    expect(isBreached('Password1')).toBe(true);
    expect(isBreached('qwertyuiop')).toBe(true);
    expect(isBreached('Zq8#vLm2!pRt')).toBe(false);
    expect(unmetPasswordRules('iloveyou', loose)).toEqual([]);
    expect(unmetPasswordRules('iloveyou', { ...loose, check_breached: true })).toEqual(['breached']);
  });

  it('explains rules with the setting that asks for them', () => {
    expect(ruleMessage('min_length', strict)).toBe('must be at least 12 characters (security.password_policy.min_length)');
    expect(ruleMessage('symbol', strict)).toContain('require_symbol');
  });
});
