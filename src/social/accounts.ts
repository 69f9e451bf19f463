/**
 * Who an upstream identity signs in as: the linking rules of social login.
 *  - An upstream account already linked signs in its user (if that user may sign in at all).
 *  - Otherwise, a user with the same e-mail is never taken over silently: the upstream must say the
 *    e-mail is verified AND the user must confirm with the password (or link from the account
 *    page while signed in). An unverified upstream e-mail never links.
 *  - Otherwise a new user is created, under the sign-up rules: sign-up enabled
 *    (`security.signup.enabled`) and, when `security.signup.allowed_email_domains` is set, an
 *    upstream e-mail that is verified and in one of those domains. With sign-up off only
 *    already-linked users come in. An upstream that shares no e-mail cannot create an account.
 * Unlinking never removes the last way to sign in (a password, or another linked account).
 */
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../context.js';
import { UniqueViolation } from '../storage/errors.js';
import type { SocialIdentityRecord, TenantId, UserRecord } from '../storage/types.js';
import type { EffectiveConfig } from '../tenancy/config/merge.js';
import { PROFILE_MAX, type ProfileField } from '../users/schema.js';
import type { SocialProvider } from './providers.js';
import type { UpstreamIdentity } from './upstream.js';

export type AccountResolution =
  | { kind: 'linked'; user: UserRecord; identity: SocialIdentityRecord }
  | { kind: 'create' }
  | { kind: 'confirm_link'; user: UserRecord }
  | { kind: 'refused'; reason: 'email_in_use' | 'signup_closed' | 'domain_not_allowed' | 'no_email' };

/** Request facts every audit entry of the flow carries. */
export interface Who {
  ip_address: string;
  user_agent: string | null;
  client_id?: string | null;
}

interface SignupRules {
  enabled: boolean;
  allowedDomains: string[];
}

/** `security.signup` of the tenant override over the global one (when the global schema has it). */
export function signupRules(config: EffectiveConfig): SignupRules {
  const global = (config.security as { signup?: { enabled?: unknown; allowed_email_domains?: unknown } }).signup;
  const own = config.overrides.security?.signup;
  const globalDomains = Array.isArray(global?.allowed_email_domains) ? global.allowed_email_domains.filter((d): d is string => typeof d === 'string') : [];
  return {
    enabled: own?.enabled ?? global?.enabled === true,
    allowedDomains: (own?.allowed_email_domains ?? globalDomains).map((d) => d.toLowerCase()),
  };
}

export async function resolveAccount(ctx: AppContext, tenant: TenantId, config: EffectiveConfig, provider: SocialProvider, identity: UpstreamIdentity): Promise<AccountResolution> {
  const linked = await ctx.storage.socialIdentities.find(tenant, provider.name, identity.subject);
  if (linked) {
    const user = await ctx.storage.users.get(tenant, linked.user_id);
    if (user && !user.deleted_at) return { kind: 'linked', user, identity: linked };
    // The user was deleted: the stale link goes, and the identity is treated as new.
    await ctx.storage.socialIdentities.unlink(tenant, linked.user_id, linked.provider, linked.subject);
  }
  if (identity.email) {
    const existing = await ctx.storage.users.findByEmail(tenant, identity.email);
    if (existing) return identity.emailVerified ? { kind: 'confirm_link', user: existing } : { kind: 'refused', reason: 'email_in_use' };
  }
  const rules = signupRules(config);
  if (!rules.enabled) return { kind: 'refused', reason: 'signup_closed' };
  // Every account has an e-mail (spec 2.3): it is how the person recovers it and hears of changes.
  // An upstream that shares none (Facebook without a confirmed address, a declined permission)
  // cannot create one; an identity linked earlier still signs in (above).
  if (!identity.email) return { kind: 'refused', reason: 'no_email' };
  if (rules.allowedDomains.length) {
    const domain = identity.email?.split('@').pop()?.toLowerCase();
    if (!identity.emailVerified || !domain || !rules.allowedDomains.includes(domain)) return { kind: 'refused', reason: 'domain_not_allowed' };
  }
  return { kind: 'create' };
}

/** A profile field through the attribute mapping, cut to the field's limit (spec 2.3, as the Management API holds it). */
function mapped(provider: SocialProvider, identity: UpstreamIdentity, field: ProfileField): string | null {
  const claim = provider.mapping[field];
  const value = claim ? identity.claims[claim] : undefined;
  return typeof value === 'string' && value.trim() ? [...value.trim()].slice(0, PROFILE_MAX[field]).join('').trim() : null;
}

/**
 * The first sign-in: a user without a password (`auth_provider` = the provider), `email_verified`
 * as the upstream says, profile fields through the attribute mapping, and the link, audited as
 * `signup` and `social_link`. Undefined when the e-mail or username was taken in the meantime.
 */
export async function createSocialUser(ctx: AppContext, tenant: TenantId, provider: SocialProvider, identity: UpstreamIdentity, who: Who): Promise<UserRecord | undefined> {
  const now = new Date().toISOString();
  const email = identity.email;
  const user: UserRecord = {
    id: randomUUID(),
    email,
    email_verified: email !== null && identity.emailVerified,
    username: mapped(provider, identity, 'username'),
    given_name: mapped(provider, identity, 'given_name'),
    family_name: mapped(provider, identity, 'family_name'),
    name: mapped(provider, identity, 'name'),
    nickname: mapped(provider, identity, 'nickname'),
    role: 'user',
    account_enabled: true,
    locked: false,
    locked_until: null,
    auth_provider: provider.name,
    password_hash: null,
    mfa_enabled: false,
    mfa_methods: [],
    mfa_secret_sealed: null,
    mfa_recovery_sealed: null,
    deleted_at: null,
    created_at: now,
    updated_at: now,
    last_login_at: null,
  };
  // The account and its one entry in one transaction (never an unaudited account).
  const signedUp = () => ctx.audit.entry(tenant, { type: 'signup', status: 'success', username: email, user_id: user.id, ...who, details: { user_id: user.id, method: 'social', provider: provider.name } });
  try {
    await ctx.storage.users.create(tenant, user, signedUp());
  } catch (err) {
    if (!(err instanceof UniqueViolation)) throw err;
    if (err.field !== 'username') return undefined;
    // A taken username is not worth refusing the sign-up for: the user can pick one later.
    user.username = null;
    await ctx.storage.users.create(tenant, user, signedUp());
  }
  await linkIdentity(ctx, tenant, user, provider, identity, who);
  return user;
}

/** Links an upstream account to a user (already checked by the caller), audited as `social_link`. */
export async function linkIdentity(ctx: AppContext, tenant: TenantId, user: UserRecord, provider: SocialProvider, identity: UpstreamIdentity, who: Who): Promise<'linked' | 'taken'> {
  const now = new Date().toISOString();
  try {
    await ctx.storage.socialIdentities.link(tenant, { provider: provider.name, subject: identity.subject, user_id: user.id, email: identity.email, linked_at: now, last_used_at: now });
  } catch (err) {
    if (err instanceof UniqueViolation) return 'taken';
    throw err;
  }
  await ctx.audit.record(tenant, { type: 'social_link', status: 'success', username: user.email, user_id: user.id, ...who, details: { user_id: user.id, provider: provider.name } });
  return 'linked';
}

/**
 * Removes one linked account of a user, refusing when it is the user's last way to sign in
 * (no password and no other link). Audited as `social_unlink`.
 */
export async function unlinkIdentity(ctx: AppContext, tenant: TenantId, user: UserRecord, provider: string, subject: string, who: Who): Promise<'unlinked' | 'not_found' | 'last_method'> {
  const links = await ctx.storage.socialIdentities.listByUser(tenant, user.id);
  if (!links.some((l) => l.provider === provider && l.subject === subject)) return 'not_found';
  if (!user.password_hash && links.length <= 1) return 'last_method';
  if (!(await ctx.storage.socialIdentities.unlink(tenant, user.id, provider, subject))) return 'not_found';
  await ctx.audit.record(tenant, { type: 'social_unlink', status: 'success', username: user.email, user_id: user.id, ...who, details: { user_id: user.id, provider } });
  return 'unlinked';
}
