/**
 * RedisEventBus against real Redis: delivery between two bus instances (two service instances) on
 * the shared server with channels of their own, and recovery after a private server restarts.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { channelPattern, rotationChannel, type JwksRotatedEvent } from '../../src/events/bus.js';
import { RedisEventBus } from '../../src/events/redis-bus.js';
import { privateRedis, SHARED_REDIS_URL, uniquePrefix, type PrivateRedis } from '../helpers/redis.js';
import { onChannel } from '../helpers/bus.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually<T>(get: () => T | Promise<T>, ok: (v: T) => boolean, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (ok(v) || Date.now() > end) return v;
    await sleep(20);
  }
}

const buses: RedisEventBus[] = [];
let server: PrivateRedis | undefined;
/** A plain connection to look at the server's side (PUBSUB NUMPAT). */
const observer = new Redis(SHARED_REDIS_URL);
afterAll(async () => {
  await observer.quit();
  await Promise.all(buses.map((b) => b.close()));
  await server?.stop();
});

function bus(url: string, errors: unknown[] = []): RedisEventBus {
  const b = new RedisEventBus(url, (err) => errors.push(err));
  buses.push(b);
  return b;
}

describe('RedisEventBus', () => {
  // A tenant name of this run only, so parallel runs on the shared server never see each other.
  const tenant = uniquePrefix('bus');
  const event: JwksRotatedEvent = { tenant, kids: ['k1', 'k2'], promoted: 1, at: '2026-01-01T00:00:00.000Z' };

  it('delivers JSON payloads published by one instance to the subscribers of another, isolating failing handlers', async () => {
    const errors: unknown[] = [];
    const a = bus(SHARED_REDIS_URL, errors);
    const b = bus(SHARED_REDIS_URL);
    expect(await a.ready(3000)).toBe(true);
    expect(await b.ready(3000)).toBe(true);

    const got: unknown[] = [];
    const other: unknown[] = [];
    const off = onChannel(a, rotationChannel(tenant), (p) => got.push(p));
    onChannel(a, rotationChannel(tenant), () => {
      throw new Error('bad subscriber');
    });
    const second: unknown[] = [];
    onChannel(a, rotationChannel(tenant), (p) => second.push(p));
    onChannel(a, rotationChannel(`${tenant}-other`), (p) => other.push(p));
    await sleep(100); // SUBSCRIBE is asynchronous

    await b.publish(`svc:${tenant}:jwks:rotated`, event);
    await eventually(() => got.length, (n) => n === 1, 2000);
    expect(got).toEqual([event]);
    expect(second).toEqual([event]);
    expect(second[0]).not.toBe(got[0]); // each subscriber has its own copy
    expect(other).toEqual([]);
    expect(errors).toHaveLength(1);

    off();
    await b.publish(rotationChannel(tenant), { ...event, promoted: 2 });
    await eventually(() => second.length, (n) => n === 2, 2000);
    expect(got).toHaveLength(1);
    await expect(a.ping()).resolves.toBeUndefined();
  });

  it('unsubscribes from Redis when the last handler of a pattern goes', async () => {
    // A server of its own: PUBSUB NUMPAT counts the patterns of every client of a server.
    const own = await privateRedis();
    const look = new Redis(own.url);
    try {
      const a = bus(own.url);
      expect(await a.ready(3000)).toBe(true);
      const channel = rotationChannel(`${tenant}-unsub`);
      const offs = [onChannel(a, channel, () => {}), onChannel(a, channel, () => {})];
      await sleep(100);
      const patterns = async () => Number(await look.pubsub('NUMPAT'));
      expect(await patterns()).toBe(1);
      offs[0]!();
      await sleep(50);
      expect(await patterns()).toBe(1);
      offs[1]!();
      expect(await eventually(patterns, (n) => n === 0, 2000)).toBe(0);
      await a.close();
    } finally {
      await look.quit();
      await own.stop();
    }
  });

  it('delivers the channel of every tenant of a kind to one pattern subscription, matching the prefix literally', async () => {
    const a = bus(SHARED_REDIS_URL);
    const b = bus(SHARED_REDIS_URL);
    expect(await a.ready(3000)).toBe(true);
    expect(await b.ready(3000)).toBe(true);
    const prefix = `${uniquePrefix('pat')}*?`;
    const got: Array<[string, unknown]> = [];
    const off = a.subscribePattern(channelPattern(prefix, 'jwks:rotated'), (channel, payload) => got.push([channel, payload]));
    await eventually(async () => Number(await observer.pubsub('NUMPAT')), (n) => n > 0, 2000);
    await sleep(100); // PSUBSCRIBE is asynchronous
    await b.publish(rotationChannel('t1', prefix), { tenant: 't1' });
    await b.publish(rotationChannel('t2', prefix), { tenant: 't2' });
    await b.publish(rotationChannel('t3', prefix.replace('*?', 'xx')), { tenant: 't3' });
    await b.publish(`${prefix}:t4:config:changed`, { tenant: 't4' });
    await eventually(() => got.length, (n) => n >= 2, 2000);
    await sleep(100);
    expect(got).toEqual([
      [rotationChannel('t1', prefix), { tenant: 't1' }],
      [rotationChannel('t2', prefix), { tenant: 't2' }],
    ]);
    off();
    await sleep(100);
    await b.publish(rotationChannel('t5', prefix), { tenant: 't5' });
    await sleep(200);
    expect(got).toHaveLength(2);
  });

  it('rejects publishing after close', async () => {
    const a = bus(SHARED_REDIS_URL);
    await a.close();
    await expect(a.publish(rotationChannel(tenant), event)).rejects.toThrow(/closed/);
  });

  it('fails fast while Redis is down and subscribes again by itself when it is back', async () => {
    server = await privateRedis();
    const a = bus(server.url);
    const b = bus(server.url);
    expect(await a.ready(3000)).toBe(true);
    expect(await b.ready(3000)).toBe(true);
    const got: unknown[] = [];
    onChannel(a, rotationChannel('acme'), (p) => got.push(p));
    await sleep(100);
    await b.publish(rotationChannel('acme'), event);
    await eventually(() => got.length, (n) => n === 1, 2000);

    await server.stop();
    const started = Date.now();
    // A neutral Unavailable (src/errors.ts), which each surface maps to its 503.
    await expect(b.publish(rotationChannel('acme'), event)).rejects.toMatchObject({ name: 'Unavailable' });
    await expect(a.ping()).rejects.toMatchObject({ name: 'Unavailable' });
    expect(Date.now() - started).toBeLessThan(1500);

    // A restarted server (empty, no subscriptions) gets the SUBSCRIBE again from ioredis.
    await server.start();
    await eventually(() => a.ping().then(() => true, () => false), Boolean, 10_000);
    await eventually(() => b.ping().then(() => true, () => false), Boolean, 10_000);
    const recovered = { ...event, promoted: 3 };
    const delivered = await eventually(
      async () => {
        await b.publish(rotationChannel('acme'), recovered).catch(() => {});
        await sleep(100);
        return got.length;
      },
      (n) => n >= 2,
      5000,
    );
    expect(delivered).toBeGreaterThanOrEqual(2);
    expect(got[1]).toEqual(recovered);
  });
});
