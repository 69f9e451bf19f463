/** A page message naming each unmet password rule, in the page's language. */
import { PASSWORD_MAX, type PasswordPolicy, type PasswordRule } from '../../users/password-policy.js';
import type { MessageKey, Translator } from '../i18n/index.js';

const KEYS: Record<PasswordRule, MessageKey> = {
  min_length: 'password.rule.min_length',
  max_length: 'password.rule.max_length',
  uppercase: 'password.rule.uppercase',
  lowercase: 'password.rule.lowercase',
  digit: 'password.rule.digit',
  symbol: 'password.rule.symbol',
  email: 'password.rule.email',
  breached: 'password.rule.breached',
};

export function passwordRuleMessage(t: Translator, rule: PasswordRule, policy: PasswordPolicy): string {
  return t(KEYS[rule], { min: policy.min_length, max: PASSWORD_MAX });
}

export function passwordRulesMessage(t: Translator, rules: PasswordRule[], policy: PasswordPolicy): string {
  return rules.map((r) => passwordRuleMessage(t, r, policy)).join(' ');
}
