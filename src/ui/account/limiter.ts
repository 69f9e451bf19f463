/**
 * Fixed-window counters for the self-service forms (reset requests per address and per IP,
 * verification resends): in Redis when configured (shared by every instance), in memory otherwise.
 */
import type { Redis } from 'ioredis';

export class WindowLimiter {
  private readonly memory = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly redis: Redis | undefined,
    private readonly prefix: string,
  ) {}

  /** Counts one hit; true while the key stays within `limit` hits per `windowSeconds`. */
  async allow(key: string, limit: number, windowSeconds: number): Promise<boolean> {
    const now = Date.now();
    const start = now - (now % (windowSeconds * 1000));
    if (this.redis) {
      const k = `${this.prefix}:${key}:${start}`;
      try {
        const [[, count]] = (await this.redis.multi().incr(k).expire(k, windowSeconds + 5).exec()) as [[unknown, number]];
        return count <= limit;
      } catch {
        // Redis down: fall back to this instance's count rather than refusing everyone or no one.
      }
    }
    if (this.memory.size > 50_000) this.memory.clear();
    let w = this.memory.get(key);
    if (!w || w.start !== start) {
      w = { start, count: 0 };
      this.memory.set(key, w);
    }
    w.count++;
    return w.count <= limit;
  }
}
