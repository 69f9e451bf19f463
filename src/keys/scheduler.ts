/**
 * Automatic key rotation (spec 1.6): once at start and then hourly, every live tenant (and
 * `default`) is rotated when due and has its expired keys retired. Every instance runs this;
 * rotateIfDue re-checks inside its transaction, so two instances never rotate twice.
 *
 * The next check comes after the interval or at the earliest end of an overlap window seen,
 * whichever is sooner, so expiring keys stop verifying close to the configured time; a rotation
 * between checks brings the next one forward the same way (keysChanged).
 */
import type { AppContext } from '../context.js';
import { DEFAULT_TENANT, defaultTenantServes } from '../tenancy/resolver.js';
import { nextExpiry, retireExpired, rotateIfDue, type KeyLifecycleDeps } from './rotation.js';

export const HOUR_MS = 3_600_000;
/** A window end seen at a check is acted on this long after it (clock skew between instances). */
const EXPIRY_GRACE_MS = 1_000;

export type SchedulerDeps = KeyLifecycleDeps & Pick<AppContext, 'audit'>;

export interface TickReport {
  rotated: string[];
  retired: Record<string, number>;
  /** Milliseconds until the next check. */
  nextInMs: number;
}

export class RotationScheduler {
  private timer: NodeJS.Timeout | undefined;
  /** When the pending check fires (epoch ms). */
  private dueAt = Number.POSITIVE_INFINITY;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly deps: SchedulerDeps,
    /** Tenants with a live actor (pool.tenants()). */
    private readonly liveTenants: () => string[],
    private readonly intervalMs = HOUR_MS,
  ) {}

  start(): void {
    this.schedule(0);
  }

  /** One pass over the tenants; errors of one tenant are logged and do not stop the others. */
  async tick(now = new Date()): Promise<TickReport> {
    const report: TickReport = { rotated: [], retired: {}, nextInMs: this.intervalMs };
    const always = defaultTenantServes(this.deps.config) ? [DEFAULT_TENANT] : [];
    for (const tenant of new Set([...always, ...this.liveTenants()])) {
      if (this.stopped) break;
      try {
        const rotation = await rotateIfDue(this.deps, tenant, now);
        if (rotation) {
          report.rotated.push(tenant);
          await this.deps.audit.record(tenant, { type: 'jwks.rotated', details: { trigger: 'schedule', ...rotation } });
        }
        const retirement = await retireExpired(this.deps, tenant, now);
        if (retirement.retired) {
          report.retired[tenant] = retirement.retired;
          await this.deps.audit.record(tenant, { type: 'jwks.retired', details: { trigger: 'schedule', ...retirement } });
        }
        const expiry = nextExpiry(await this.deps.storage.keys.list(tenant));
        if (expiry !== undefined) report.nextInMs = Math.min(report.nextInMs, Math.max(expiry - now.getTime(), 0) + EXPIRY_GRACE_MS);
      } catch (err) {
        this.deps.log.error({ err, tenant }, 'scheduled key rotation failed');
      }
    }
    if (report.rotated.length || Object.keys(report.retired).length) {
      this.deps.log.info({ rotated: report.rotated, retired: report.retired }, 'scheduled key maintenance');
    }
    return report;
  }

  /**
   * A tenant's keys changed (a rotation through the API on any instance, announced on its
   * jwks:rotated channel): when one of its overlap windows now ends before the pending check, the
   * check moves to that end, so the old keys stop verifying when the window says, not up to an
   * hour later.
   */
  async keysChanged(tenant: string, now = Date.now()): Promise<void> {
    if (this.stopped) return;
    const expiry = nextExpiry(await this.deps.storage.keys.list(tenant));
    if (expiry === undefined) return;
    const delay = Math.max(expiry - now, 0) + EXPIRY_GRACE_MS;
    // A check in progress schedules the next one itself (from what it reads after this change).
    if (now + delay < this.dueAt && !this.running) {
      clearTimeout(this.timer);
      this.schedule(delay);
    }
  }

  /** Stops the timer and waits for a check in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.dueAt = Date.now() + delayMs;
    this.timer = setTimeout(() => {
      this.dueAt = Number.POSITIVE_INFINITY;
      const run = this.tick();
      this.running = run;
      const next = (delay: number) => {
        this.running = undefined;
        this.schedule(delay);
      };
      run.then(
        (report) => next(report.nextInMs),
        () => next(this.intervalMs),
      );
    }, delayMs);
    // The schedule alone must not keep the process alive.
    this.timer.unref();
  }
}
