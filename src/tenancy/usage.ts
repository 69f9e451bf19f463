/**
 * Client usage counters (tokens issued, last use), written behind: counted in memory per
 * (tenant, client) and written once a second for every tenant at once (one transaction, one round
 * trip on PostgreSQL: ClientRepository.recordUsageBatch). Process-wide rather than per actor, so
 * an actor's eviction writes nothing and a busy pool churning through tenants does not turn into
 * an UPDATE per token.
 */
import type { Logger } from '../log.js';
import type { ClientRepository, UsageEntry } from '../storage/types.js';

/** Rows per write: bounds one statement batch when very many clients were used in a second. */
const CHUNK = 500;

/**
 * How long counts gather before they are written: what a crash loses at most, and how late another
 * instance's statistics see them. 5 s was tried on 10,000 tenants (docs/decisions.md, "Client usage
 * counters"): a third fewer UPDATEs, no throughput the bench could tell apart from noise.
 */
export const USAGE_FLUSH_MS = 1000;

export class UsageRecorder {
  /** Counted per (tenant, client); the last use as epoch ms, made an ISO string only when written (issue 17). */
  private batch = new Map<string, Omit<UsageEntry, 'lastUsedAt'> & { lastUsedMs: number }>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly repo: Pick<ClientRepository, 'recordUsageBatch'>,
    private readonly log: Pick<Logger, 'warn'>,
    intervalMs = USAGE_FLUSH_MS,
  ) {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  record(tenant: string, clientId: string): void {
    const key = `${tenant}\0${clientId}`;
    const now = Date.now();
    const entry = this.batch.get(key);
    if (entry) {
      entry.tokens++;
      entry.lastUsedMs = now;
    } else this.batch.set(key, { tenant, clientId, tokens: 1, lastUsedMs: now });
  }

  /** Tokens counted but not written yet, so statistics are exact at any moment. */
  pending(tenant: string, clientId: string): number {
    return this.batch.get(`${tenant}\0${clientId}`)?.tokens ?? 0;
  }

  /** Writes what was counted so far; resolves when it (and any earlier flush) is written. */
  flush(): Promise<void> {
    if (!this.batch.size) return this.flushing;
    const entries: UsageEntry[] = [...this.batch.values()].map(({ lastUsedMs, ...e }) => ({ ...e, lastUsedAt: new Date(lastUsedMs).toISOString() }));
    this.batch = new Map();
    this.flushing = this.flushing.then(() => this.write(entries));
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async write(entries: UsageEntry[]): Promise<void> {
    for (let i = 0; i < entries.length; i += CHUNK) {
      const chunk = entries.slice(i, i + CHUNK);
      try {
        await this.repo.recordUsageBatch(chunk);
      } catch (err) {
        // Counters are informational: a failed write is logged, not retried (the tokens are issued).
        this.log.warn({ err, clients: chunk.length }, 'client usage could not be recorded');
      }
    }
  }
}
