/**
 * Brute-force guard (CONTRACT.md): 5 failed attempts for one account within 15 minutes lock it
 * for 15 minutes (audited as failed_login and account_locked); attempts per IP are rate limited.
 * The guard decides; the writes to the user are users/sign-in.ts operations.
 */
import type { AppContext } from '../context.js';
import { ipLimitKey } from '../http/ip.js';
import type { TenantId, UserRecord } from '../storage/types.js';
import type { Locale } from '../ui/i18n/index.js';
import type { EffectiveConfig } from '../tenancy/config/merge.js';
import { clearFailures, countFailure, liftExpiredLock, lockAfterFailures } from '../users/sign-in.js';
import { attemptCounter } from './attempt-counter.js';

/**
 * The guard's services (the app context: the shared attempt counter is keyed by it); its settings
 * come from the tenant's effective configuration, never from ctx.config.
 */
type GuardDeps = AppContext;

export class LoginGuard {
  private dummy: Promise<string> | undefined;

  constructor(
    private readonly ctx: GuardDeps,
    /** The tenant's effective configuration as it is now (it changes with a reload), never the global one. */
    private readonly config: () => EffectiveConfig,
    /** Told when an account gets locked (the security alert mail, in the language of the page the attempt came from). */
    private readonly onLocked?: (tenant: TenantId, user: UserRecord, lang: Locale | undefined) => void,
  ) {}

  /**
   * Counts one attempt of this IP; false once it has used up its attempts for the current minute.
   * The count is the app's (Redis when configured: every instance), so it survives actor eviction.
   */
  async allowIp(tenant: TenantId, ip: string): Promise<boolean> {
    const limit = this.config().security.login.per_ip_per_minute;
    return (await attemptCounter(this.ctx).hit(tenant, 'signin-ip', ipLimitKey(ip), 60)) <= limit;
  }

  /** A hash to verify against when the account does not exist (same cost, no timing oracle). */
  dummyHash(): Promise<string> {
    if (!this.dummy) {
      const pending = this.ctx.passwords.hash('not-a-real-password-0000');
      this.dummy = pending;
      // A refused hash (queue full) is not kept: the next unknown e-mail tries again.
      pending.catch(() => {
        if (this.dummy === pending) this.dummy = undefined;
      });
    }
    return this.dummy;
  }

  /** An expired automatic lock is lifted; returns the user as it now stands. */
  liftExpiredLock(tenant: TenantId, user: UserRecord): Promise<UserRecord> {
    return liftExpiredLock(this.ctx, tenant, user);
  }

  /**
   * Records a failed password (or code) for an existing account; true once the failures reach the
   * threshold: the account is locked, by this attempt or one before it. The count is atomic (one
   * attempt counts exactly the threshold and writes the lock and its one `account_locked` entry);
   * attempts counted past it, in flight while the lock was written, get the lock's answer too.
   * `lang`: the language of the page the attempt was made on, for the lock's alert mail.
   */
  async recordFailure(tenant: TenantId, user: UserRecord, ip: string, userAgent: string | undefined, lang?: Locale): Promise<boolean> {
    const { max_failed_attempts, failure_window_seconds, lockout_seconds } = this.config().security.login;
    const now = new Date();
    const failures = await countFailure(this.ctx, tenant, user.id, now, failure_window_seconds);
    if (failures < max_failed_attempts) return false;
    // An administrator's lock (no end) is not turned into a timed one.
    if (failures === max_failed_attempts && !user.locked) {
      const until = new Date(now.getTime() + lockout_seconds * 1000).toISOString();
      await lockAfterFailures(this.ctx, tenant, user, { until, failures }, { ip_address: ip, user_agent: userAgent });
      this.onLocked?.(tenant, user, lang);
    }
    return true;
  }

  recordSuccess(tenant: TenantId, user: UserRecord): Promise<void> {
    return clearFailures(this.ctx, tenant, user.id);
  }
}
