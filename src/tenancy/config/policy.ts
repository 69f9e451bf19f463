/**
 * Platform floors and ceilings for tenant overrides (spec 1.5 rule 2), all in this one table.
 * Floors stop a tenant from weakening security below the platform's settings; ceilings cap token
 * lifetimes (CONTRACT.md: access token <= 86400 s, refresh token <= 7776000 s) and rate limits.
 *
 * The same rules run twice: at write time a violation is a 422 naming the field (violations());
 * at merge time a stored value that no longer complies — the operator tightened the global
 * configuration after the tenant saved it — is clamped to the limit (clamp()), so a stale
 * override never weakens a tenant either.
 *
 * Field names: `errors[].field` is relative to the PUT body (the section), like every other
 * Management API validation error (`ttl.access_token` for PUT .../config/oidc); the message names
 * the full setting (`oidc.ttl.access_token`).
 */
import type { Config } from '../../config/index.js';
import { redirectsElsewhere, socialUrlProblems, type SocialProviderSettings } from '../../config/social.js';
import { outboundPolicy, urlProblem } from '../../outbound/policy.js';
import type { FieldError } from '../../http/problem.js';
import { valueAt, withValueAt, type JsonObject } from './json-path.js';
import type { SectionName, TenantOverrides } from './sections.js';

type RateClass = 'read' | 'write' | 'delete' | 'sensitive';
type PasswordFlag = 'require_uppercase' | 'require_lowercase' | 'require_digit' | 'require_symbol';

export type Rule =
  /** The value may not exceed limit(global). */
  | { path: string; max: (global: Config) => number; reason: string }
  /** The value may not go below limit(global). */
  | { path: string; min: (global: Config) => number; reason: string }
  /** The value may not be false while floor(global) is true. */
  | { path: string; floor: (global: Config) => boolean; reason: string }
  /** Accepted by the schema but acted on by nothing yet: any value is refused (developers' guide: act or refuse). */
  | { path: string; unsupported: true; reason: string };

/** Token lifetime ceilings (seconds); access and refresh tokens from CONTRACT.md, the rest match the global schema's maxima. */
export const TTL_CEILINGS = { access_token: 86400, id_token: 86400, refresh_token: 7776000, authorization_code: 600, device_code: 3600 } as const;
export const SESSION_TTL_CEILING = 7776000;
/** Spec 8: user passwords are at most 128 characters, so a longer minimum would lock everyone out. */
export const PASSWORD_MAX_LENGTH = 128;

/** Fields the schema knows but no code reads; a PUT setting any of them is a 422 "not supported yet". */
export const UNSUPPORTED_FIELDS = ['notifications.email', 'notifications.sms'] as const;

const RATE_CLASSES: RateClass[] = ['read', 'write', 'delete', 'sensitive'];
const PASSWORD_FLAGS: PasswordFlag[] = ['require_uppercase', 'require_lowercase', 'require_digit', 'require_symbol'];

export const RULES: readonly Rule[] = [
  ...Object.entries(TTL_CEILINGS).map(([name, limit]): Rule => ({ path: `oidc.ttl.${name}`, max: () => limit, reason: 'platform ceiling' })),
  { path: 'security.sessions.ttl_seconds', max: () => SESSION_TTL_CEILING, reason: 'platform ceiling' },
  ...RATE_CLASSES.map((cls): Rule => ({ path: `security.rate_limit.${cls}`, max: (g) => g.security.rate_limit[cls], reason: `global security.rate_limit.${cls}` })),
  { path: 'security.password_policy.min_length', min: (g) => g.security.password_policy.min_length, reason: 'global security.password_policy.min_length' },
  { path: 'security.password_policy.min_length', max: () => PASSWORD_MAX_LENGTH, reason: 'longest password accepted' },
  ...PASSWORD_FLAGS.map((flag): Rule => ({ path: `security.password_policy.${flag}`, floor: (g) => g.security.password_policy[flag], reason: `global security.password_policy.${flag} is true` })),
  { path: 'security.password_policy.check_breached', floor: (g) => g.security.password_policy.check_breached, reason: 'global security.password_policy.check_breached is true' },
  { path: 'security.mfa.required', floor: (g) => g.security.mfa.required, reason: 'global security.mfa.required is true' },
  // Settings nothing reads yet (docs/settings.md): refused rather than stored and ignored.
  ...UNSUPPORTED_FIELDS.map((path): Rule => ({ path, unsupported: true, reason: 'nothing acts on it yet' })),
];

/** Checks one rule against a value: undefined when it complies, else the compliant value and the message. */
function check(rule: Rule, value: unknown, global: Config): { fixed: number | boolean | undefined; message: string } | undefined {
  if ('unsupported' in rule) return value === undefined ? undefined : { fixed: undefined, message: `not supported yet (${rule.path}: ${rule.reason})` };
  if ('max' in rule && typeof value === 'number' && value > rule.max(global)) {
    return { fixed: rule.max(global), message: `must be at most ${rule.max(global)} (${rule.path}: ${rule.reason})` };
  }
  if ('min' in rule && typeof value === 'number' && value < rule.min(global)) {
    return { fixed: rule.min(global), message: `must be at least ${rule.min(global)} (${rule.path}: ${rule.reason})` };
  }
  if ('floor' in rule && value === false && rule.floor(global)) {
    return { fixed: true, message: `cannot be false (${rule.path}: ${rule.reason})` };
  }
  return undefined;
}

const inSection = (rule: Rule, section: string) => rule.path.startsWith(`${section}.`);
const relative = (rule: Rule) => rule.path.split('.').slice(1);

/** The field errors of one section's data (already shape-checked by its schema), fields relative to the section. */
export function violations(section: SectionName, data: JsonObject, global: Config): FieldError[] {
  const errors: FieldError[] = [];
  for (const rule of RULES) {
    if (!inSection(rule, section)) continue;
    const path = relative(rule);
    const bad = check(rule, valueAt(data, path), global);
    if (bad) errors.push({ field: path.join('.'), message: bad.message });
  }
  if (section === 'security') errors.push(...mfaMethodErrors(data, global));
  // The URLs a social provider makes the service fetch, under the outbound rule of this deployment.
  const providers = section === 'features' ? (data as { social_login?: { providers?: Record<string, SocialProviderSettings> } }).social_login?.providers : undefined;
  if (providers) {
    const policy = outboundPolicy(global);
    for (const p of socialUrlProblems(providers, (url) => urlProblem(url, policy))) errors.push({ field: ['social_login', 'providers', ...p.path].join('.'), message: p.message });
    // Another server than the platform's gets the tenant's own secret, never the platform's (social/providers.ts).
    for (const [name, p] of Object.entries(providers)) {
      const platform = global.features.social_login.providers[name];
      if (platform?.client_secret !== undefined && p.client_secret === undefined && redirectsElsewhere(platform, p)) {
        errors.push({ field: `social_login.providers.${name}.client_secret`, message: "required when the issuer or endpoints differ from the platform's: the platform's secret is not sent to another server" });
      }
    }
  }
  return errors;
}

const MFA_METHODS = ['totp_enabled', 'webauthn_enabled'] as const;

/**
 * MFA required (by the tenant or the platform) with every method off would ask for no second factor
 * at all: required would be accepted and ignored. The section's values over the platform's decide.
 */
function mfaWithoutMethod(security: JsonObject, global: Config): boolean {
  const own = (name: 'required' | (typeof MFA_METHODS)[number]) => {
    const v = valueAt(security, ['mfa', name]);
    return typeof v === 'boolean' ? v : global.security.mfa[name];
  };
  return own('required') && !own('totp_enabled') && !own('webauthn_enabled');
}

function mfaMethodErrors(security: JsonObject, global: Config): FieldError[] {
  if (!mfaWithoutMethod(security, global)) return [];
  const message = 'at least one of mfa.totp_enabled and mfa.webauthn_enabled must stay true while MFA is required (security.mfa.required, by this tenant or the platform)';
  return MFA_METHODS.filter((m) => valueAt(security, ['mfa', m]) === false).map((m) => ({ field: `mfa.${m}`, message }));
}

/** The overrides with every non-compliant value replaced by its limit (pure). */
export function clamp(overrides: TenantOverrides, global: Config): TenantOverrides {
  let out = overrides as JsonObject;
  for (const rule of RULES) {
    const path = rule.path.split('.');
    const bad = check(rule, valueAt(out, path), global);
    if (bad) out = withValueAt(out, path, bad.fixed);
  }
  // Stored before the platform required MFA: the tenant's method switches give way to the platform's.
  const security = valueAt(out, ['security']);
  if (security && typeof security === 'object' && !Array.isArray(security) && mfaWithoutMethod(security as JsonObject, global)) {
    for (const m of MFA_METHODS) out = withValueAt(out, ['security', 'mfa', m], undefined);
  }
  return out as TenantOverrides;
}
