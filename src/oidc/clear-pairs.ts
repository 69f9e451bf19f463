/**
 * Client and address pairs known to be under the client-authentication limits (auth-throttle.ts),
 * when the counters live in Redis. A pair found under both limits stays known clear, so its token
 * requests skip the counters' round trip, until one of these happens:
 * - a failed authentication of that client, here or at any instance: every instance hears of it on
 *   the event bus (`<prefix>:<tenant>:client:auth-failed`, tenancy/tenant-events.ts) and counts the
 *   client's pairs again on their next request. Counts only fall as their window moves on, so
 *   without a new failure a pair under the limits stays under them;
 * - the event bus reconnects (pub/sub is at most once: a failure announced meanwhile may be lost),
 *   which forgets every pair (reset);
 * - TTL_MS passes: a safety net for an announcement lost without a reconnect.
 *
 * Before the bus carried failures a pair was trusted for one second only, so a client seen less
 * often than that (the tail of a fleet of tenants, or a client used from many addresses: a public
 * client's users refreshing from their own networks) paid a Redis round trip on every request
 * (issue 17).
 *
 * Invalidation is ordered by a sequence number rather than a clock: a pair counts as clear only if
 * it was found so after the client's last failure was heard of. The read that finds it clear takes
 * its number before it asks Redis (ticket), so a failure heard while the read is under way wins.
 */

/** How long a pair stays known clear without news of a failure (the safety net). */
export const CLEAR_TTL_MS = 10 * 60_000;
/** Pairs and failed clients kept (oldest dropped first). */
export const CLEAR_ENTRIES = 20_000;

export class ClearPairs {
  private seq = 0;
  /** A pair is clear only if found so after this: raised when a failed client is dropped from `failed`, or on reset. */
  private floor = 0;
  private readonly pairs = new Map<string, { until: number; seq: number }>();
  /** The sequence number of each client's last failure heard of. */
  private readonly failed = new Map<string, number>();

  constructor(
    private readonly ttlMs = CLEAR_TTL_MS,
    private readonly maxEntries = CLEAR_ENTRIES,
  ) {}

  /** Taken before the counters are read: the number mark() is then given. */
  ticket(): number {
    return ++this.seq;
  }

  /** Whether the pair is known to be under the limits now. */
  isClear(tenant: string, clientId: string, ip: string, now = Date.now()): boolean {
    const key = pairKey(tenant, clientId, ip);
    const entry = this.pairs.get(key);
    if (entry === undefined) return false;
    if (entry.until > now && entry.seq > this.floor && entry.seq > (this.failed.get(clientKey(tenant, clientId)) ?? 0)) return true;
    this.pairs.delete(key);
    return false;
  }

  /** The pair was found under both limits by the read that took `ticket`. */
  mark(tenant: string, clientId: string, ip: string, ticket: number, now = Date.now()): void {
    const key = pairKey(tenant, clientId, ip);
    // Deleted first, so a refreshed entry moves to the end of the Map's order (oldest first out).
    this.pairs.delete(key);
    if (this.pairs.size >= this.maxEntries) this.pairs.delete(this.pairs.keys().next().value!);
    this.pairs.set(key, { until: now + this.ttlMs, seq: ticket });
  }

  /** A failed authentication of the client, here or elsewhere: its pairs are counted again. */
  clientFailed(tenant: string, clientId: string): void {
    const key = clientKey(tenant, clientId);
    this.failed.delete(key);
    if (this.failed.size >= this.maxEntries) {
      // Forgetting a failure must not revive the pairs it invalidated: older pairs are all dropped.
      const [, oldest] = this.failed.entries().next().value!;
      this.floor = Math.max(this.floor, oldest);
      this.failed.delete(this.failed.keys().next().value!);
    }
    this.failed.set(key, ++this.seq);
  }

  /** Failures may have gone unheard (the event bus reconnected): nothing is known clear any more. */
  reset(): void {
    this.pairs.clear();
    this.failed.clear();
    this.floor = ++this.seq;
  }

  get size(): number {
    return this.pairs.size;
  }
}

const pairKey = (tenant: string, clientId: string, ip: string) => `${tenant}\u0000${clientId}\u0000${ip}`;
const clientKey = (tenant: string, clientId: string) => `${tenant}\u0000${clientId}`;
