/** RedisRateLimiter: one count per (tenant, client, class) and window, shared by every instance. */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { MemoryRateLimiter } from '../../src/management/rate-limit.js';
import { RedisRateLimiter } from '../../src/management/rate-limit-redis.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';

const prefix = uniquePrefix('ratelimit');
const redis = new Redis(SHARED_REDIS_URL);
const config = loadConfig({ NODE_ENV: 'test', SECURITY_RATE_LIMIT_SENSITIVE: '3', SECURITY_RATE_LIMIT_WINDOW_SECONDS: '3600' });

afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  await redis.quit();
});

describe('RedisRateLimiter', () => {
  it('shares the count between instances and decides like the memory limiter', async () => {
    const a = new RedisRateLimiter(config, redis, prefix);
    const b = new RedisRateLimiter(config, redis, prefix);
    const memory = new MemoryRateLimiter(config);
    const decisions = [await a.hit('t1', 'c1', 'sensitive'), await b.hit('t1', 'c1', 'sensitive'), await a.hit('t1', 'c1', 'sensitive'), await b.hit('t1', 'c1', 'sensitive')];
    const expected = [];
    for (let i = 0; i < 4; i++) expected.push(await memory.hit('t1', 'c1', 'sensitive'));
    expect(decisions.map((d) => [d.allowed, d.limit, d.remaining])).toEqual(expected.map((d) => [d.allowed, d.limit, d.remaining]));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    for (const d of decisions) {
      expect(d.reset).toBeGreaterThanOrEqual(1);
      expect(d.reset).toBeLessThanOrEqual(3600);
    }
  });

  it('counts tenants, clients and classes apart, with a counter that expires with its window', async () => {
    const l = new RedisRateLimiter(config, redis, prefix);
    await l.hit('t2', 'c1', 'read');
    expect((await l.hit('t2', 'c1', 'read')).remaining).toBe(598);
    expect((await l.hit('t2', 'c2', 'read')).remaining).toBe(599);
    expect((await l.hit('t3', 'c1', 'read')).remaining).toBe(599);
    expect((await l.hit('t2', 'c1', 'write')).remaining).toBe(119);
    const [key] = await redis.keys(`${prefix}:t2:ratelimit:read:*:c1`);
    const windowEnd = Number(key!.split(':').at(-2)) + 3600_000;
    expect(await redis.pexpiretime(key!)).toBe(windowEnd);
  });

  it('refuses a tenant that could reach another tenant\'s keys', async () => {
    await expect(new RedisRateLimiter(config, redis, prefix).hit('a:b', 'c', 'read')).rejects.toThrow(/invalid tenant/);
  });
});
