/**
 * Fixed-window rate limits per (tenant, client_id, class) (CONTRACT.md), counted in memory.
 * The limiter interface lets a Redis-backed counter (shared by all instances) take its place.
 */
import type { Config } from '../config/index.js';

export type RateClass = 'read' | 'write' | 'delete' | 'sensitive';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  reset: number;
}

export interface RateLimiter {
  /** `limit`: the tenant's limit for the class (its config overrides); the global one when omitted. */
  hit(tenant: string, clientId: string, cls: RateClass, limit?: number): Promise<RateDecision>;
}

export class MemoryRateLimiter implements RateLimiter {
  private windows = new Map<string, { start: number; count: number }>();
  private readonly windowMs: number;
  private lastPrune = 0;

  constructor(private readonly config: Config) {
    this.windowMs = config.security.rate_limit.window_seconds * 1000;
  }

  async hit(tenant: string, clientId: string, cls: RateClass, limit = this.config.security.rate_limit[cls]): Promise<RateDecision> {
    const now = Date.now();
    const start = now - (now % this.windowMs);
    if (now - this.lastPrune > this.windowMs) this.prune(start);
    const key = `${tenant}\u0000${clientId}\u0000${cls}`;
    let w = this.windows.get(key);
    if (!w || w.start !== start) {
      w = { start, count: 0 };
      this.windows.set(key, w);
    }
    w.count++;
    const reset = Math.max(1, Math.ceil((start + this.windowMs - now) / 1000));
    return { allowed: w.count <= limit, limit, remaining: Math.max(0, limit - w.count), reset };
  }

  private prune(currentStart: number): void {
    this.lastPrune = Date.now();
    for (const [k, w] of this.windows) if (w.start < currentStart) this.windows.delete(k);
  }
}

export function rateHeaders(d: RateDecision): Record<string, string> {
  return { 'ratelimit-limit': String(d.limit), 'ratelimit-remaining': String(d.remaining), 'ratelimit-reset': String(d.reset) };
}
