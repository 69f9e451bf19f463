/**
 * The Management API rate limits counted in Redis, so every instance shares one count per
 * (tenant, client_id, class) and window (CONTRACT.md). Same fixed window, decision and headers as
 * MemoryRateLimiter. The window comes from this instance's clock; instances with skewed clocks
 * would disagree only about the edge of a window.
 *
 * Key: `<prefix>:<tenant>:ratelimit:<class>:<window start ms>:<client_id>`, expiring with its window.
 * When Redis is down the call fails fast with 503 (redisCall): no silent fail-open.
 */
import type { Redis } from 'ioredis';
import type { Config } from '../config/index.js';
import { redisCall, tenantKeyPrefix } from '../storage/redis/client.js';
import type { RateClass, RateDecision, RateLimiter } from './rate-limit.js';

export class RedisRateLimiter implements RateLimiter {
  private readonly windowMs: number;

  constructor(
    private readonly config: Config,
    private readonly redis: Redis,
    private readonly prefix = 'svc',
  ) {
    this.windowMs = config.security.rate_limit.window_seconds * 1000;
  }

  async hit(tenant: string, clientId: string, cls: RateClass, limit = this.config.security.rate_limit[cls]): Promise<RateDecision> {
    const now = Date.now();
    const start = now - (now % this.windowMs);
    const key = `${tenantKeyPrefix(this.prefix, tenant)}ratelimit:${cls}:${start}:${clientId}`;
    // One transaction: the counter never exists without its expiry.
    const hits = await redisCall(async () => {
      const replies = await this.redis.multi().incr(key).pexpireat(key, start + this.windowMs).exec();
      // exec() resolves null only for a WATCH conflict, which this transaction cannot have.
      const [err, count] = replies?.[0] ?? [new Error('rate-limit transaction returned no reply'), null];
      if (err) throw err;
      return Number(count);
    });
    const reset = Math.max(1, Math.ceil((start + this.windowMs - now) / 1000));
    return { allowed: hits <= limit, limit, remaining: Math.max(0, limit - hits), reset };
  }

  async ping(): Promise<void> {
    await redisCall(() => this.redis.ping());
  }
}
