/**
 * The users domain: every create, change and erase of an end user goes through here, whichever
 * surface asks (Management API, platform routes, the coming sign-up and account pages, the console).
 * Passwords are hashed on the Argon2 worker pool, never here. Each write and its audit entry are
 * one storage transaction (storage/types.ts), so an accepted change is never unaudited.
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Attribution, AuditEvent } from '../audit/audit-log.js';
import type { AppContext } from '../context.js';
import { Conflict, Invalid, NotFound, type FieldError } from '../errors.js';
import { findSessions, revokeAccount, sessionTtl } from '../sessions/store.js';
import { UniqueViolation } from '../storage/errors.js';
import type { AuditEntry, UserRecord, UserRepository } from '../storage/types.js';
import type { EffectiveConfig } from '../tenancy/config/merge.js';
import { PLATFORM_TENANT } from '../tenancy/resolver.js';
import { ruleMessage, unmetPasswordRules } from './password-policy.js';
import { MUTABLE_USER_FIELDS, PLATFORM_ROLES, type UserCreateInput, type UserUpdateInput } from './schema.js';

export interface UserScope {
  ctx: Pick<AppContext, 'storage' | 'passwords' | 'audit' | 'sessionsEnded'>;
  tenant: string;
  /** The tenant's effective configuration (session lifetime, and the password policy to come). */
  config: EffectiveConfig;
  by?: Attribution;
  /**
   * Tells the account owner that the caller changed their password or MFA (the Management API: a
   * security alert mail after the answer). Called once the change is stored; absent, nobody is told.
   */
  alertUser?: (user: UserRecord, change: 'password_changed' | 'mfa_changed') => void;
}

type UserChange = Parameters<UserRepository['update']>[2];

/** Only the public fields; the hash, sealed MFA material and internal state never leave. */
export function presentUser(u: UserRecord, now = new Date().toISOString()) {
  return {
    id: u.id,
    email: u.email,
    username: u.username,
    given_name: u.given_name,
    family_name: u.family_name,
    name: u.name,
    nickname: u.nickname,
    role: u.role,
    account_enabled: u.account_enabled,
    email_verified: u.email_verified,
    // A brute-force lock reads as unlocked once it has run out; an admin lock has no end.
    locked: u.locked && (u.locked_until === null || u.locked_until > now),
    auth_provider: u.auth_provider,
    mfa: { enabled: u.mfa_enabled, methods: u.mfa_methods },
    created_at: u.created_at,
    updated_at: u.updated_at,
    last_login_at: u.last_login_at,
  };
}

/** The key of an account's failed-sign-in counter (the brute-force guard, oidc/login-guard.ts). */
export const accountKey = (id: string) => `account:${id}`;

/**
 * The audit entry of a write, attributed to the caller; written by the repository with the write.
 * The acting user (a user token) is named even though the event names the affected user in
 * user_id; the affected id stays in details (issue 12).
 */
function entry(scope: UserScope, event: AuditEvent): AuditEntry {
  const actingUser = scope.by?.user_id ? { user_id: scope.by.user_id, username: scope.by.username ?? null } : {};
  return scope.ctx.audit.entry(scope.tenant, { ...scope.by, ...event, ...actingUser });
}

/**
 * Hole 8 (issue 12): an administrator's password reset, MFA reset, lock, disable and delete end
 * everything the account holds (sessions, grants, refresh and access tokens), so whoever held the
 * old password or a stolen session is out at once and stays out after an unlock or re-enable.
 * `count` first (the audit entry is written with the change and names how many end), `end` after
 * the change, so no new sign-in slips in between.
 */
const accountSessions = {
  count: async (scope: UserScope, userId: string) => (await findSessions(scope.ctx.storage.oidc, scope.tenant, { username: userId }, sessionTtl(scope.config))).length,
  end: (scope: UserScope, userId: string) => revokeAccount(scope.ctx, scope.tenant, userId, sessionTtl(scope.config)),
};

/**
 * The links mailed for the account (password reset, address confirmation) act only for the state
 * they were sent in. An administrator's new address, new password, disable or lock leaves none
 * pending, as the user's own password change does (account page): otherwise a reset link in the
 * old mailbox still set a password after the address moved, an old confirmation link moved the
 * address back (verified), and a link asked for before a lock or disable worked after the unlock
 * or re-enable.
 */
export async function expireMailedLinks(scope: { ctx: Pick<AppContext, 'storage'>; tenant: string }, userId: string): Promise<void> {
  const now = new Date().toISOString();
  await scope.ctx.storage.accountTokens.expireForUser(scope.tenant, 'password_reset', userId, now);
  await scope.ctx.storage.accountTokens.expireForUser(scope.tenant, 'verify_email', userId, now);
}

/**
 * A user the API can see. A deleted user's anonymised row stays in storage for the audit trail only
 * (issue 18 item 3): to the API it is gone, 404 on every read, change and repeated delete.
 */
export async function getUser(scope: Pick<UserScope, 'ctx' | 'tenant'>, id: string): Promise<UserRecord> {
  const user = await scope.ctx.storage.users.get(scope.tenant, id);
  if (!user || user.deleted_at) throw new NotFound(`User ${id} not found`);
  return user;
}

/** For changes: the same as a read (a deleted user is not found, so it cannot be edited back to life). */
const getLiveUser = (scope: UserScope, id: string): Promise<UserRecord> => getUser(scope, id);

function checkRole(role: string | undefined, tenant: string): void {
  if (role && PLATFORM_ROLES.has(role) && tenant !== PLATFORM_TENANT) {
    throw new Invalid([{ field: 'role', message: `the role ${role} can only be given in the ${PLATFORM_TENANT} tenant` }]);
  }
}

/** 409 when another live account already has the e-mail (checked up front for a clear answer). */
async function checkEmailFree(scope: Pick<UserScope, 'ctx' | 'tenant'>, email: string, selfId?: string): Promise<void> {
  const other = await scope.ctx.storage.users.findByEmail(scope.tenant, email);
  if (other && other.id !== selfId) throw new Conflict('A user with this e-mail address already exists', 'email');
}

/** The unique indexes are the real guard (two concurrent writers): their violation is a 409 too. */
function uniqueToConflict(err: unknown): never {
  if (err instanceof UniqueViolation) {
    throw err.field === 'username' ? new Conflict('A user with this username already exists', 'username') : new Conflict('A user with this e-mail address already exists', 'email');
  }
  throw err;
}

async function mustUpdate(scope: UserScope, id: string, change: UserChange, event: AuditEvent): Promise<UserRecord> {
  const updated = await scope.ctx.storage.users.update(scope.tenant, id, change, entry(scope, event)).catch(uniqueToConflict);
  if (!updated) throw new NotFound(`User ${id} not found`);
  return updated;
}

/**
 * `recordedAs`: the entry written with the user instead of `user.created`, for a creation that has
 * an end-user event of its own (a self sign-up is audited `signup`, as a first social sign-in is):
 * one entry per account created, in the user's own transaction.
 */
/**
 * What a new account is checked for before its password: the role allowed in the tenant, the
 * e-mail free. The CLI runs it before asking for the password; createUser runs it again.
 */
export async function checkNewUser(scope: Pick<UserScope, 'ctx' | 'tenant'>, b: Pick<UserCreateInput, 'email' | 'role'>): Promise<void> {
  checkRole(b.role, scope.tenant);
  await checkEmailFree(scope, b.email);
}

export async function createUser(scope: UserScope, b: UserCreateInput, recordedAs?: (id: string) => AuditEvent): Promise<UserRecord> {
  // Before hashing: a duplicate should not cost an Argon2 run.
  await checkNewUser(scope, b);
  checkPasswordPolicy(scope, b.password, b.email, 'password');
  const passwordHash = await scope.ctx.passwords.hash(b.password);
  const now = new Date().toISOString();
  const user: UserRecord = {
    id: randomUUID(),
    email: b.email,
    email_verified: b.email_verified ?? false,
    username: b.username ?? null,
    given_name: b.given_name ?? null,
    family_name: b.family_name ?? null,
    name: b.name ?? null,
    nickname: b.nickname ?? null,
    role: b.role ?? 'user',
    account_enabled: b.account_enabled ?? true,
    locked: false,
    locked_until: null,
    auth_provider: 'local',
    password_hash: passwordHash,
    mfa_enabled: false,
    mfa_methods: [],
    mfa_secret_sealed: null,
    mfa_recovery_sealed: null,
    deleted_at: null,
    created_at: now,
    updated_at: now,
    last_login_at: null,
  };
  const event = recordedAs?.(user.id) ?? { type: 'user.created', user_id: user.id, details: { user_id: user.id, role: user.role } };
  await scope.ctx.storage.users.create(scope.tenant, user, entry(scope, event)).catch(uniqueToConflict);
  return user;
}

/**
 * The stored change for PUT (every mutable field; omitted ones back to their defaults, except the
 * e-mail, which has no default and is kept) or PATCH (supplied fields only; null clears).
 */
function buildChange(input: UserUpdateInput, existing: UserRecord, mode: 'put' | 'patch'): UserChange {
  const change: UserChange = {};
  if (mode === 'put') {
    Object.assign(change, {
      username: null, given_name: null, family_name: null, name: null, nickname: null,
      role: 'user', account_enabled: true, email_verified: false,
    });
  }
  for (const key of MUTABLE_USER_FIELDS) {
    if (input[key] !== undefined) (change as Record<string, unknown>)[key] = input[key];
  }
  // A new address is unverified unless the caller says otherwise.
  const newEmail = change.email;
  if (newEmail && newEmail.toLowerCase() !== existing.email?.toLowerCase() && input.email_verified === undefined) {
    change.email_verified = false;
  }
  return change;
}

/**
 * The fields whose stored value the change alters, in schema order: what the `user.updated` entry
 * names. A PUT's cleared fields and a new address's lost verification are there; a field sent with
 * the value it already had is not (nothing changed). Names only, never values.
 */
function changedFields(change: UserChange, existing: UserRecord): string[] {
  return MUTABLE_USER_FIELDS.filter((k) => k in change && change[k] !== existing[k]);
}

/**
 * The read-only fields a PUT or PATCH may carry (a GET sent back) are ignored only while they say
 * what is stored: one that differs asks for a change this request does not make, and a 200 would
 * say it was made (a script "locking" a user with `{"locked": true}`). `id` and `auth_provider`
 * never change; the lock has /lock, second factors are the user's own (/account) and an
 * administrator removes them with /mfa/reset. The timestamps are not settings: ignored whatever
 * they say. Compared with the user as a GET shows it (a brute-force lock that ran out reads false).
 */
function readOnlyChanges(existing: UserRecord, input: UserUpdateInput): void {
  const shown = presentUser(existing);
  const errors: FieldError[] = [];
  for (const field of ['id', 'auth_provider'] as const) {
    if (input[field] !== undefined && input[field] !== shown[field]) errors.push({ field, message: 'cannot be changed' });
  }
  if (input.locked !== undefined && input.locked !== shown.locked) {
    errors.push({ field: 'locked', message: `is read-only: use ${shown.locked ? 'DELETE' : 'POST'} /api/v1/users/${existing.id}/lock` });
  }
  if (input.mfa !== undefined && !isDeepStrictEqual(input.mfa, shown.mfa)) {
    errors.push({ field: 'mfa', message: `is read-only: the user sets up second factors on their account page; POST /api/v1/users/${existing.id}/mfa/reset removes them` });
  }
  if (errors.length) throw new Invalid(errors);
}

export async function updateUser(scope: UserScope, id: string, input: UserUpdateInput, mode: 'put' | 'patch'): Promise<UserRecord> {
  const existing = await getLiveUser(scope, id);
  readOnlyChanges(existing, input);
  checkRole(input.role, scope.tenant);
  const change = buildChange(input, existing, mode);
  if (change.email) await checkEmailFree(scope, change.email, existing.id);
  const fields = changedFields(change, existing);
  const disabling = existing.account_enabled && change.account_enabled === false;
  const ended = disabling ? { sessions_revoked: await accountSessions.count(scope, existing.id) } : {};
  const updated = await mustUpdate(scope, existing.id, change, { type: 'user.updated', user_id: existing.id, details: { user_id: existing.id, fields, method: mode.toUpperCase(), ...ended } });
  if (disabling) await accountSessions.end(scope, existing.id);
  const newAddress = updated.email?.toLowerCase() !== existing.email?.toLowerCase();
  if (disabling || newAddress) await expireMailedLinks(scope, existing.id);
  return updated;
}

export async function setUserLock(scope: UserScope, id: string, locked: boolean): Promise<UserRecord> {
  const existing = await getLiveUser(scope, id);
  const ended = locked ? { sessions_revoked: await accountSessions.count(scope, existing.id) } : {};
  const event = { type: locked ? 'user.locked' : 'user.unlocked', user_id: existing.id, details: { user_id: existing.id, ...ended } };
  const updated = await mustUpdate(scope, existing.id, { locked, locked_until: null }, event);
  if (locked) await accountSessions.end(scope, existing.id);
  if (locked) await expireMailedLinks(scope, existing.id);
  // Unlocking also forgets earlier failures, or the next wrong password would lock again at once.
  if (!locked) await scope.ctx.storage.loginAttempts.clear(scope.tenant, accountKey(existing.id));
  return updated;
}

/** Erases everything personal; the row stays so audit entries and references keep their target. */
const ANONYMISED: UserChange = {
  email: null, email_verified: false, username: null, given_name: null, family_name: null, name: null, nickname: null,
  password_hash: null, mfa_enabled: false, mfa_methods: [], mfa_secret_sealed: null, mfa_recovery_sealed: null,
  account_enabled: false, locked: false, locked_until: null,
};

/** Anonymises a user: personal data and credentials erased, sign-in impossible, sessions revoked. */
export async function deleteUser(scope: UserScope, id: string): Promise<void> {
  const existing = await getUser(scope, id); // a second DELETE is 404: the user is gone
  // The sessions are counted first, so the entry written with the erasure can name how many end.
  const ttl = sessionTtl(scope.config);
  const sessions = await findSessions(scope.ctx.storage.oidc, scope.tenant, { username: existing.id }, ttl);
  const event = { type: 'user.deleted', user_id: existing.id, details: { user_id: existing.id, anonymised: true, sessions_revoked: sessions.length } };
  await mustUpdate(scope, existing.id, { ...ANONYMISED, deleted_at: new Date().toISOString() }, event);
  await scope.ctx.storage.webauthn.deleteUserCredentials(scope.tenant, existing.id); // passkeys are credentials too
  // After the erasure, so no new sign-in can slip in between (the account cannot sign in any more).
  await revokeAccount(scope.ctx, scope.tenant, existing.id, ttl);
  await scope.ctx.storage.loginAttempts.clear(scope.tenant, accountKey(existing.id));
  // Linked social accounts go too: they are personal data, and a link must not outlive its user.
  await scope.ctx.storage.socialIdentities.unlinkAll(scope.tenant, existing.id);
}

/** An administrator sets a new password (the user's own reset comes with the account pages). */
export async function setPassword(scope: UserScope, id: string, newPassword: string): Promise<void> {
  const existing = await getLiveUser(scope, id);
  checkPasswordPolicy(scope, newPassword, existing.email, 'new_password');
  const passwordHash = await scope.ctx.passwords.hash(newPassword);
  const revoked = await accountSessions.count(scope, existing.id);
  const updated = await mustUpdate(scope, existing.id, { password_hash: passwordHash }, { type: 'password_reset', user_id: existing.id, details: { user_id: existing.id, by: 'admin', sessions_revoked: revoked } });
  scope.alertUser?.(updated, 'password_changed');
  await accountSessions.end(scope, existing.id);
  await expireMailedLinks(scope, existing.id);
}

/**
 * TOTP disabled, recovery codes cleared and passkeys removed (issue 14). The user is alerted only
 * when something was removed: a reset of an account with no second factor changes nothing for
 * its owner, and a mail saying it changed would be noise (docs/decisions.md).
 */
export async function resetMfa(scope: UserScope, id: string): Promise<void> {
  const existing = await getLiveUser(scope, id);
  const passkeys = (await scope.ctx.storage.webauthn.listCredentials(scope.tenant, existing.id)).length;
  const event = {
    type: 'user.mfa_reset',
    user_id: existing.id,
    details: { user_id: existing.id, methods: existing.mfa_methods, passkeys_removed: passkeys, sessions_revoked: await accountSessions.count(scope, existing.id) },
  };
  const updated = await mustUpdate(scope, existing.id, { mfa_enabled: false, mfa_methods: [], mfa_secret_sealed: null, mfa_recovery_sealed: null }, event);
  const removed = await scope.ctx.storage.webauthn.deleteUserCredentials(scope.tenant, existing.id);
  const hadTotp = existing.mfa_secret_sealed !== null || existing.mfa_recovery_sealed !== null;
  if (hadTotp || existing.mfa_methods.length > 0 || passkeys > 0 || removed > 0) scope.alertUser?.(updated, 'mfa_changed');
  await accountSessions.end(scope, existing.id);
}

/** The tenant's password policy (password-policy.ts): a 422 naming each unmet rule on `field`. */
export function checkPasswordPolicy(scope: Pick<UserScope, 'config'>, password: string, email: string | null | undefined, field: string): void {
  const policy = scope.config.security.password_policy;
  const unmet = unmetPasswordRules(password, policy, email);
  if (unmet.length) throw new Invalid(unmet.map((rule) => ({ field, message: ruleMessage(rule, policy) })));
}
