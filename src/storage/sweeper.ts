/**
 * Periodic removal of expired rows from the SQL backends (SQLite, PostgreSQL): OIDC artefacts and
 * account tokens (password reset, e-mail verification). Readers already ignore expired rows, so the
 * sweep only reclaims space. Every instance runs its own: concurrent sweeps are harmless (each is
 * one DELETE of rows expired by then; on PostgreSQL through svc_sweep_oidc_payloads and
 * svc_sweep_account_tokens, docs/postgresql.md). With Redis the OIDC artefacts live there and
 * expire by themselves (no `oidc` here), but account tokens are always in SQL.
 */
import type { Logger } from '../log.js';
import type { AccountTokenRepository, OidcPayloadRepository } from './types.js';

export const SWEEP_INTERVAL_MS = 10 * 60_000;

export class ExpirySweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly oidc: Pick<OidcPayloadRepository, 'sweepExpired'> | undefined,
    private readonly log: Pick<Logger, 'info' | 'warn' | 'debug'>,
    private readonly intervalMs = SWEEP_INTERVAL_MS,
    private readonly accountTokens?: Pick<AccountTokenRepository, 'sweepExpired'>,
  ) {}

  start(): void {
    // Spread over the first interval, so instances started together do not sweep in step.
    this.schedule(Math.round(this.intervalMs * (0.5 + Math.random() / 2)));
  }

  /** One sweep of each kind; the rows removed in all. */
  async sweep(now = Date.now()): Promise<number> {
    const oidc = this.oidc;
    const tokens = this.accountTokens;
    const removed = await Promise.all([
      oidc ? this.sweepOne('OIDC artefacts', () => oidc.sweepExpired(Math.floor(now / 1000))) : 0,
      tokens ? this.sweepOne('account tokens', () => tokens.sweepExpired(new Date(now).toISOString())) : 0,
    ]);
    return removed[0] + removed[1];
  }

  /** Failures (the database away) are logged and the next interval tries again; one kind failing does not stop the other. */
  private async sweepOne(what: string, run: () => Promise<number>): Promise<number> {
    try {
      const removed = await run();
      if (removed) this.log.info({ removed }, `expired ${what} swept`);
      else this.log.debug({ removed }, `expired ${what} swept`);
      return removed;
    } catch (err) {
      this.log.warn({ err }, `sweeping expired ${what} failed; retrying at the next interval`);
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
