/**
 * What a person is told when their account cannot sign in (issue 12, hole 6). The answer depends
 * only on the account's state, never on whether the password was right: while an account is locked
 * or disabled, the right and a wrong password get the same page, so the lock is no password oracle.
 * An automatic (brute-force) lock says how long it still lasts; an administrator's lock and a
 * disabled account have no end, so the page points to the administrator.
 */
import type { UserRecord } from '../storage/types.js';

/** Whole minutes left of an automatic lock in force (at least 1); undefined for any other state. */
export function lockMinutesLeft(user: UserRecord, now = Date.now()): number | undefined {
  if (!user.account_enabled || user.deleted_at || !user.locked || !user.locked_until) return undefined;
  const left = Date.parse(user.locked_until) - now;
  return left > 0 ? Math.max(1, Math.ceil(left / 60_000)) : undefined;
}

/** The user as the brute-force guard just locked it (the record read before does not show it yet). */
export function lockedNow(user: UserRecord, lockoutSeconds: number, now = Date.now()): UserRecord {
  return { ...user, locked: true, locked_until: new Date(now + lockoutSeconds * 1000).toISOString() };
}
