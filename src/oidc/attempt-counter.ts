/**
 * Fixed-window attempt counters shared by every tenant actor of the process, and by every instance
 * when Redis is configured (issue 12 items 7 and 11). A counter that lived in an actor was reset
 * whenever the actor was evicted and counted per instance; these do neither. Used for sign-in
 * attempts per IP, client-authentication failures and device user-code guesses.
 *
 * Redis key: `<prefix>:<tenant>:attempts:<kind>:<window start ms>:<subject>`, expiring with its
 * window. Redis down fails closed (503 through redisCall), like the Management API limits.
 */
import type { Redis } from 'ioredis';
import type { AppContext } from '../context.js';
import { redisCall, tenantKeyPrefix } from '../storage/redis/client.js';

export interface AttemptCounter {
  /** Counts one attempt of `subject` in the current window of `windowSeconds`; returns the count so far. */
  hit(tenant: string, kind: string, subject: string, windowSeconds: number): Promise<number>;
  /** The count so far without adding one. */
  peek(tenant: string, kind: string, subject: string, windowSeconds: number): Promise<number>;
  /** Several counts so far at once (one Redis round trip), in the order asked. */
  peekMany(tenant: string, counters: readonly Counted[]): Promise<number[]>;
}

/** One counter of `peekMany`. */
export interface Counted {
  kind: string;
  subject: string;
  windowSeconds: number;
}

const MAX_MEMORY_ENTRIES = 100_000;

export class MemoryAttemptCounter implements AttemptCounter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  async hit(tenant: string, kind: string, subject: string, windowSeconds: number): Promise<number> {
    return this.count(tenant, kind, subject, windowSeconds, 1);
  }

  async peek(tenant: string, kind: string, subject: string, windowSeconds: number): Promise<number> {
    return this.count(tenant, kind, subject, windowSeconds, 0);
  }

  async peekMany(tenant: string, counters: readonly Counted[]): Promise<number[]> {
    return counters.map((c) => this.count(tenant, c.kind, c.subject, c.windowSeconds, 0));
  }

  private count(tenant: string, kind: string, subject: string, windowSeconds: number, add: number): number {
    const ms = windowSeconds * 1000;
    const now = Date.now();
    const start = now - (now % ms);
    const key = `${tenant}\u0000${kind}\u0000${subject}`;
    let w = this.windows.get(key);
    if (!w || w.start !== start) {
      if (add === 0) return 0;
      if (this.windows.size >= MAX_MEMORY_ENTRIES) this.prune(now);
      w = { start, count: 0 };
      this.windows.set(key, w);
    }
    w.count += add;
    return w.count;
  }

  /** Drops finished windows (all windows are at most an hour long); everything if that frees nothing. */
  private prune(now: number): void {
    for (const [k, w] of this.windows) if (now - w.start > 3600_000) this.windows.delete(k);
    if (this.windows.size >= MAX_MEMORY_ENTRIES) this.windows.clear();
  }
}

export class RedisAttemptCounter implements AttemptCounter {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private key(tenant: string, kind: string, subject: string, windowSeconds: number): { key: string; end: number } {
    const ms = windowSeconds * 1000;
    const now = Date.now();
    const start = now - (now % ms);
    return { key: `${tenantKeyPrefix(this.prefix, tenant)}attempts:${kind}:${start}:${subject}`, end: start + ms };
  }

  async hit(tenant: string, kind: string, subject: string, windowSeconds: number): Promise<number> {
    const { key, end } = this.key(tenant, kind, subject, windowSeconds);
    return redisCall(async () => {
      const replies = await this.redis.multi().incr(key).pexpireat(key, end).exec();
      const [err, count] = replies?.[0] ?? [new Error('attempt counter transaction returned no reply'), null];
      if (err) throw err;
      return Number(count);
    });
  }

  async peek(tenant: string, kind: string, subject: string, windowSeconds: number): Promise<number> {
    const { key } = this.key(tenant, kind, subject, windowSeconds);
    return redisCall(async () => Number((await this.redis.get(key)) ?? 0));
  }

  async peekMany(tenant: string, counters: readonly Counted[]): Promise<number[]> {
    const keys = counters.map((c) => this.key(tenant, c.kind, c.subject, c.windowSeconds).key);
    return redisCall(async () => (await this.redis.mget(keys)).map((v) => Number(v ?? 0)));
  }
}

const counters = new WeakMap<AppContext, AttemptCounter>();

/** The one counter of this app (memory, or Redis when configured): outlives every actor. */
export function attemptCounter(ctx: AppContext): AttemptCounter {
  let c = counters.get(ctx);
  if (!c) {
    c = ctx.redis ? new RedisAttemptCounter(ctx.redis.client, ctx.config.redis.key_prefix) : new MemoryAttemptCounter();
    counters.set(ctx, c);
  }
  return c;
}
