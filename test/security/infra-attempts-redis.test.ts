/**
 * Issue 12 items 7 and 11: attempt counters (sign-in per IP, client-authentication failures,
 * device user-code guesses) are shared by every instance through Redis.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisAttemptCounter } from '../../src/oidc/attempt-counter.js';
import { dropRedisKeys } from '../helpers/app.js';
import { awayFromWindowEdge } from '../helpers/fixed-window.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';

describe('RedisAttemptCounter', () => {
  const prefix = uniquePrefix('infra-attempts');
  const a = new Redis(SHARED_REDIS_URL);
  const b = new Redis(SHARED_REDIS_URL);
  afterAll(async () => {
    a.disconnect();
    b.disconnect();
    await dropRedisKeys(SHARED_REDIS_URL, prefix);
  });

  it('two instances count into one window, per tenant and subject, with an expiry', async () => {
    await awayFromWindowEdge(60);
    const one = new RedisAttemptCounter(a, prefix);
    const two = new RedisAttemptCounter(b, prefix);
    expect(await one.hit('acme', 'signin-ip', '6.6.6.6', 60)).toBe(1);
    expect(await two.hit('acme', 'signin-ip', '6.6.6.6', 60)).toBe(2);
    expect(await two.peek('acme', 'signin-ip', '6.6.6.6', 60)).toBe(2);
    expect(await one.hit('acme', 'signin-ip', '7.7.7.7', 60)).toBe(1);
    expect(await one.hit('other', 'signin-ip', '6.6.6.6', 60)).toBe(1);
    const keys = await a.keys(`${prefix}:acme:attempts:signin-ip:*`);
    expect(keys).toHaveLength(2);
    for (const k of keys) {
      const ttl = await a.pttl(k);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
  });
});
