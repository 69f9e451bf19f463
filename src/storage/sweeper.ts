/**
 * Periodic removal of expired OIDC artefacts from the SQL backends (SQLite, PostgreSQL). Readers
 * already ignore expired rows, so the sweep only reclaims space. Every instance runs its own:
 * concurrent sweeps are harmless (each is one DELETE of rows expired by then; on PostgreSQL through
 * svc_sweep_oidc_payloads, docs/postgresql.md). Not used with Redis, which expires keys itself.
 */
import type { Logger } from '../log.js';
import type { OidcPayloadRepository } from './types.js';

export const SWEEP_INTERVAL_MS = 10 * 60_000;

export class ExpirySweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly oidc: Pick<OidcPayloadRepository, 'sweepExpired'>,
    private readonly log: Pick<Logger, 'info' | 'warn' | 'debug'>,
    private readonly intervalMs = SWEEP_INTERVAL_MS,
  ) {}

  start(): void {
    // Spread over the first interval, so instances started together do not sweep in step.
    this.schedule(Math.round(this.intervalMs * (0.5 + Math.random() / 2)));
  }

  /** One sweep; failures (the database away) are logged and the next interval tries again. */
  async sweep(now = Date.now()): Promise<number> {
    try {
      const removed = await this.oidc.sweepExpired(Math.floor(now / 1000));
      if (removed) this.log.info({ removed }, 'expired OIDC artefacts swept');
      else this.log.debug({ removed }, 'expired OIDC artefacts swept');
      return removed;
    } catch (err) {
      this.log.warn({ err }, 'sweeping expired OIDC artefacts failed; retrying at the next interval');
      return 0;
    }
  }

  /** Stops the timer and waits for a sweep in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      const run = this.sweep();
      this.running = run;
      void run.then(() => this.schedule(this.intervalMs));
    }, delayMs);
    // The schedule alone must not keep the process alive.
    this.timer.unref();
  }
}
