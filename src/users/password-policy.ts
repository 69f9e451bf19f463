/**
 * The password policy (security.password_policy, global floor with tenant override merged into the
 * effective config): length, character classes, not the user's own e-mail, and optionally
 * (`check_breached`) not one of the 10,000 most common breached passwords shipped in
 * assets/breached-passwords.txt (no network). Every place a password is set calls
 * unmetPasswordRules(): the Management API (create, admin reset), sign-up, the reset page and the
 * account page; each turns the unmet rules into its own message (problem+json field error, or a
 * translated page message naming the rule).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface PasswordPolicy {
  min_length: number;
  require_uppercase: boolean;
  require_lowercase: boolean;
  require_digit: boolean;
  require_symbol: boolean;
  check_breached?: boolean;
}

/** Spec 8: passwords are at most 128 characters. */
export const PASSWORD_MAX = 128;

export type PasswordRule = 'min_length' | 'max_length' | 'uppercase' | 'lowercase' | 'digit' | 'symbol' | 'email' | 'breached';

/** The rules a password fails, in a stable order (empty when it is acceptable). */
export function unmetPasswordRules(password: string, policy: PasswordPolicy, email?: string | null): PasswordRule[] {
  const unmet: PasswordRule[] = [];
  // Length in code points, so an emoji counts as one character as the user sees it.
  const length = [...password].length;
  if (length < policy.min_length) unmet.push('min_length');
  if (length > PASSWORD_MAX) unmet.push('max_length');
  if (policy.require_uppercase && !/\p{Lu}/u.test(password)) unmet.push('uppercase');
  if (policy.require_lowercase && !/\p{Ll}/u.test(password)) unmet.push('lowercase');
  if (policy.require_digit && !/\p{Nd}/u.test(password)) unmet.push('digit');
  if (policy.require_symbol && !/[^\p{L}\p{Nd}\s]/u.test(password)) unmet.push('symbol');
  if (email && isOwnEmail(password, email)) unmet.push('email');
  if (policy.check_breached && isBreached(password)) unmet.push('breached');
  return unmet;
}

/** The e-mail itself or its local part (at least 4 characters), ignoring case. */
function isOwnEmail(password: string, email: string): boolean {
  const p = password.trim().toLowerCase();
  const e = email.trim().toLowerCase();
  const local = e.split('@')[0] ?? '';
  return p === e || (local.length >= 4 && p === local);
}

/** English text of a rule for the Management API's field errors (pages use the catalogues). */
export function ruleMessage(rule: PasswordRule, policy: PasswordPolicy): string {
  switch (rule) {
    case 'min_length':
      return `must be at least ${policy.min_length} characters (security.password_policy.min_length)`;
    case 'max_length':
      return `must be at most ${PASSWORD_MAX} characters`;
    case 'uppercase':
      return 'must contain an upper-case letter (security.password_policy.require_uppercase)';
    case 'lowercase':
      return 'must contain a lower-case letter (security.password_policy.require_lowercase)';
    case 'digit':
      return 'must contain a digit (security.password_policy.require_digit)';
    case 'symbol':
      return 'must contain a symbol (security.password_policy.require_symbol)';
    case 'email':
      return 'must not be the e-mail address';
    case 'breached':
      return 'is too common: it appears in lists of breached passwords (security.password_policy.check_breached)';
  }
}

let breached: Set<string> | undefined;

/** assets/ at the package root, from src/users (tests) or dist/src/users (built). */
function listPath(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'assets', 'breached-passwords.txt');
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error('assets/breached-passwords.txt not found');
}

/** Loaded once on first use (~10k entries, ~1 MB of heap). */
export function isBreached(password: string): boolean {
  breached ??= new Set(
    readFileSync(listPath(), 'utf8')
      .split('\n')
      .filter((l) => l && !l.startsWith('#')),
  );
  return breached.has(password.toLowerCase());
}
