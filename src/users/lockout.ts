/**
 * What a person is told when their account cannot sign in (issue 12, hole 6). The answer depends
 * only on the account's state, never on whether the password was right: while an account is locked
 * or disabled, the right and a wrong password get the same page, so the lock is no password oracle.
 * An automatic (brute-force) lock says how long it still lasts; an administrator's lock and a
 * disabled account have no end, so they point to the administrator.
 */
import type { UserRecord } from '../storage/types.js';

export type Refusal = 'locked' | 'disabled';

/** Why `user` cannot sign in now, or undefined when it can (the state canSignIn checks). */
export function refusalOf(user: UserRecord, now = Date.now()): Refusal | undefined {
  if (user.deleted_at || !user.account_enabled) return 'disabled';
  if (user.locked && !(user.locked_until && Date.parse(user.locked_until) <= now)) return 'locked';
  return undefined;
}

/** Whole minutes left of an automatic lock, at least 1; undefined for a lock without an end. */
export function lockMinutesLeft(user: UserRecord, now = Date.now()): number | undefined {
  if (!user.locked || !user.locked_until) return undefined;
  return Math.max(1, Math.ceil((Date.parse(user.locked_until) - now) / 60_000));
}

export function refusalMessage(user: UserRecord, now = Date.now()): string {
  const minutes = refusalOf(user, now) === 'locked' ? lockMinutesLeft(user, now) : undefined;
  if (minutes !== undefined) {
    return `This account cannot sign in right now: too many failed sign-in attempts locked it for ${minutes} more minute${minutes === 1 ? '' : 's'}. Try again after that.`;
  }
  return 'This account cannot sign in right now. Contact your administrator.';
}
