/**
 * What a sign-in changes on a user: the last sign-in time, the failed-attempt counter and the
 * brute-force lock. The OIDC surface (oidc/interactions.ts, oidc/login-guard.ts) decides when; the
 * writes happen here, each with its audit entries in the same storage transaction (the repository
 * takes them), so a sign-in or a lock that committed is never unaudited.
 */
import type { AuditEvent } from '../audit/audit-log.js';
import type { AppContext } from '../context.js';
import type { TenantId, UserRecord } from '../storage/types.js';
import { accountKey } from './operations.js';

type Deps = Pick<AppContext, 'storage' | 'audit'>;

/** The request's side of an audit entry (address, agent, the client signed in to). */
export type SignInSource = Pick<AuditEvent, 'ip_address' | 'user_agent' | 'client_id'>;

/**
 * Every factor checked: the failure count starts over, and last_login_at is stamped together with
 * the `login` and `session.created` entries. Returns the user as stored now.
 */
export async function recordSignIn(deps: Deps, tenant: TenantId, user: UserRecord, method: string, who: SignInSource): Promise<UserRecord | undefined> {
  await clearFailures(deps, tenant, user.id);
  const named = { username: user.email, user_id: user.id, ...who };
  return deps.storage.users.update(tenant, user.id, { last_login_at: new Date().toISOString() }, [
    deps.audit.entry(tenant, { type: 'login', status: 'success', ...named, details: { method } }),
    deps.audit.entry(tenant, { type: 'session.created', status: 'info', ...named, details: { user_id: user.id } }),
  ]);
}

/**
 * An automatic lock that has run out is lifted (unaudited, as before), and the failure count starts
 * over with it; returns the user as it now stands.
 */
export async function liftExpiredLock(deps: Deps, tenant: TenantId, user: UserRecord, now = Date.now()): Promise<UserRecord> {
  if (user.locked && user.locked_until && Date.parse(user.locked_until) <= now) {
    const lifted = (await deps.storage.users.update(tenant, user.id, { locked: false, locked_until: null })) ?? user;
    await clearFailures(deps, tenant, user.id);
    return lifted;
  }
  return user;
}

/** Counts one failed sign-in of the account within the window; returns the failures counted in it. */
export function countFailure(deps: Deps, tenant: TenantId, userId: string, now: Date, windowSeconds: number): Promise<number> {
  const since = new Date(now.getTime() - windowSeconds * 1000).toISOString();
  return deps.storage.loginAttempts.recordFailure(tenant, accountKey(userId), now.toISOString(), since);
}

/** The account's failure count starts over (a sign-in that passed its password, e.g. linking a social identity). */
export function clearFailures(deps: Deps, tenant: TenantId, userId: string): Promise<void> {
  return deps.storage.loginAttempts.clear(tenant, accountKey(userId));
}

/**
 * The brute-force lock: locked until `until`, audited `account_locked` in the same transaction. The
 * count is kept while the lock lasts (liftExpiredLock clears it): attempts still in flight when the
 * lock was written count past the threshold and get the lock's answer, instead of starting a new
 * count of five (a burst of concurrent guesses got ~20 answers).
 */
export async function lockAfterFailures(
  deps: Deps,
  tenant: TenantId,
  user: UserRecord,
  lock: { until: string; failures: number },
  who: Pick<AuditEvent, 'ip_address' | 'user_agent'>,
): Promise<void> {
  await deps.storage.users.update(
    tenant,
    user.id,
    { locked: true, locked_until: lock.until },
    deps.audit.entry(tenant, {
      type: 'account_locked',
      status: 'warning',
      user_id: user.id,
      username: user.email,
      ...who,
      details: { user_id: user.id, reason: 'too_many_failed_logins', failures: lock.failures, locked_until: lock.until },
    }),
  );
}
