import { afterEach, describe, expect, it, vi } from 'vitest';
import { ActorPool, type EvictionReason, type PoolOptions } from '../../src/tenancy/pool.js';

class FakeActor {
  closed = 0;
  constructor(readonly tenant: string) {}
  close(): void {
    this.closed++;
  }
}

interface Harness {
  pool: ActorPool<FakeActor>;
  created: FakeActor[];
  evictions: Array<[string, EvictionReason]>;
  hits: number;
  misses: number;
}

const pools: ActorPool<FakeActor>[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

function harness(opts: Partial<PoolOptions<FakeActor>> = {}): Harness {
  const h: Harness = { created: [], evictions: [], hits: 0, misses: 0 } as unknown as Harness;
  h.pool = new ActorPool<FakeActor>({
    maxSize: 3,
    idleTtlMs: 60_000,
    cleanupIntervalMs: 60_000,
    create: async (tenant) => {
      const a = new FakeActor(tenant);
      h.created.push(a);
      return a;
    },
    onEvict: (tenant, reason) => h.evictions.push([tenant, reason]),
    onHit: () => h.hits++,
    onMiss: () => h.misses++,
    ...opts,
  });
  pools.push(h.pool);
  return h;
}

/** Lets the microtasks of dispose -> close run. */
const settle = () => new Promise((r) => setImmediate(r));

describe('ActorPool', () => {
  it('creates an actor on first use and reuses it', async () => {
    const h = harness();
    const a = await h.pool.get('acme');
    expect(a.tenant).toBe('acme');
    expect(await h.pool.get('acme')).toBe(a);
    expect(h.created).toHaveLength(1);
    expect(h.misses).toBe(1);
    expect(h.hits).toBe(1);
    expect(h.pool.size).toBe(1);
    expect(h.pool.has('acme')).toBe(true);
  });

  it('evicts and closes the least recently used actor at maxSize', async () => {
    const h = harness({ maxSize: 3 });
    const a = await h.pool.get('a');
    const b = await h.pool.get('b');
    const c = await h.pool.get('c');
    await h.pool.get('a'); // a is now more recent than b and c
    const d = await h.pool.get('d');
    await settle();

    expect(h.pool.size).toBe(3);
    expect(h.evictions).toEqual([['b', 'lru']]);
    expect(b.closed).toBe(1);
    expect([a.closed, c.closed, d.closed]).toEqual([0, 0, 0]);
    expect(h.pool.tenants().sort()).toEqual(['a', 'c', 'd']);

    await h.pool.get('e'); // c is the least recently used now
    await settle();
    expect(h.evictions).toEqual([
      ['b', 'lru'],
      ['c', 'lru'],
    ]);
    expect(c.closed).toBe(1);

    // An evicted tenant gets a fresh actor on its next request.
    const b2 = await h.pool.get('b');
    expect(b2).not.toBe(b);
    expect(b2.closed).toBe(0);
  });

  it('does not refresh recency on peek', async () => {
    const h = harness({ maxSize: 2 });
    await h.pool.get('a');
    await h.pool.get('b');
    expect(h.pool.peek('a')?.tenant).toBe('a');
    expect(h.pool.peek('zzz')).toBeUndefined();
    await h.pool.get('c');
    expect(h.evictions).toEqual([['a', 'lru']]);
    expect(h.created.map((x) => x.tenant)).toEqual(['a', 'b', 'c']); // peek created nothing
  });

  it('evicts idle actors in the periodic sweep, without any request touching them (real timers)', async () => {
    // A TTL far above the 20 ms between touches: a loaded machine can stall the loop for tens of ms.
    const h = harness({ idleTtlMs: 400, cleanupIntervalMs: 20 });
    const idle = await h.pool.get('idle');
    const busy = await h.pool.get('busy');
    const until = Date.now() + 1000;
    while (Date.now() < until) {
      await h.pool.get('busy');
      await new Promise((r) => setTimeout(r, 20));
    }
    await settle();
    expect(h.evictions).toEqual([['idle', 'idle']]);
    expect(idle.closed).toBe(1);
    expect(busy.closed).toBe(0);
    expect(h.pool.tenants()).toEqual(['busy']);
  });

  it('leaves expiry to the sweep timer: past the TTL nothing happens until the timer fires (fake interval)', async () => {
    // Only the sweep interval is faked; the idle clock is real.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const h = harness({ idleTtlMs: 30, cleanupIntervalMs: 10_000 });
    const a = await h.pool.get('a');
    await new Promise((r) => setTimeout(r, 100));
    expect(h.evictions).toEqual([]);
    expect(a.closed).toBe(0);
    vi.advanceTimersByTime(10_000);
    await settle();
    expect(h.evictions).toEqual([['a', 'idle']]);
    expect(a.closed).toBe(1);
    expect(h.pool.size).toBe(0);
  });

  it('treats an idle actor found by a request as expired and builds a new one', async () => {
    const h = harness({ idleTtlMs: 30, cleanupIntervalMs: 60_000 });
    const a = await h.pool.get('a');
    await new Promise((r) => setTimeout(r, 80));
    const a2 = await h.pool.get('a');
    await settle();
    expect(a2).not.toBe(a);
    expect(a.closed).toBe(1);
    expect(h.evictions).toEqual([['a', 'idle']]);
  });

  it('shares one creation among concurrent first requests for a tenant', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let calls = 0;
    const h = harness({
      create: async (tenant) => {
        calls++;
        await gate;
        return new FakeActor(tenant);
      },
    });
    const waiting = Array.from({ length: 25 }, () => h.pool.get('acme'));
    const other = h.pool.get('other');
    release();
    const actors = await Promise.all(waiting);
    expect(calls).toBe(2); // acme once, other once
    expect(new Set(actors).size).toBe(1);
    expect((await other).tenant).toBe('other');
    expect(h.misses).toBe(2);
    expect(h.pool.size).toBe(2);
  });

  it('does not keep a failed creation: the next request tries again', async () => {
    let attempt = 0;
    const h = harness({
      create: async (tenant) => {
        attempt++;
        await Promise.resolve();
        if (attempt === 1) throw new Error('keys unavailable');
        return new FakeActor(tenant);
      },
    });
    const both = await Promise.allSettled([h.pool.get('t'), h.pool.get('t')]);
    expect(both.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(h.pool.size).toBe(0);
    const a = await h.pool.get('t');
    expect(a.tenant).toBe('t');
    expect(attempt).toBe(2);
  });

  it('evicts explicitly with the given reason', async () => {
    const h = harness();
    const a = await h.pool.get('gone');
    h.pool.evict('gone');
    await settle();
    expect(h.evictions).toEqual([['gone', 'deleted']]);
    expect(a.closed).toBe(1);
    expect(h.pool.has('gone')).toBe(false);
    // Later LRU evictions still report 'lru'.
    const small = harness({ maxSize: 1 });
    await small.pool.get('x');
    small.pool.evict('x', 'idle');
    await small.pool.get('y');
    await small.pool.get('z');
    expect(small.evictions).toEqual([
      ['x', 'idle'],
      ['y', 'lru'],
    ]);
  });

  it('reports a failing close through onError and keeps going', async () => {
    const errors: unknown[] = [];
    const h = harness({
      maxSize: 1,
      create: async (tenant) => Object.assign(new FakeActor(tenant), { close: () => Promise.reject(new Error('boom')) }),
      onError: (_tenant, err) => errors.push(err),
    });
    await h.pool.get('a');
    await h.pool.get('b');
    await settle();
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).message).toBe('boom');
    expect(h.pool.tenants()).toEqual(['b']);
  });

  it('reports a close that throws synchronously through onError, and closes a synchronous member at once', async () => {
    const errors: unknown[] = [];
    const h = harness({
      maxSize: 1,
      create: async (tenant) =>
        tenant === 'bad'
          ? Object.assign(new FakeActor(tenant), {
              close: () => {
                throw new Error('sync boom');
              },
            })
          : new FakeActor(tenant),
      onError: (_tenant, err) => errors.push(err),
    });
    await h.pool.get('bad');
    const b = await h.pool.get('b');
    expect((errors[0] as Error | undefined)?.message).toBe('sync boom');
    await h.pool.get('c');
    // A synchronous close has run by the time the evicting get resolves (no microtask hop).
    expect(b.closed).toBe(1);
    expect(h.pool.tenants()).toEqual(['c']);
  });

  it('close() closes every actor, waits for creations in progress and refuses new ones', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const created: FakeActor[] = [];
    const h = harness({
      create: async (tenant) => {
        if (tenant === 'slow') await gate;
        const a = new FakeActor(tenant);
        created.push(a);
        return a;
      },
    });
    const a = await h.pool.get('a');
    const b = await h.pool.get('b');
    const slow = h.pool.get('slow');
    const closing = h.pool.close();
    release();
    await closing;
    await expect(slow).rejects.toThrow(/closed/);
    const slowActor = created.find((x) => x.tenant === 'slow')!;
    expect([a.closed, b.closed, slowActor.closed]).toEqual([1, 1, 1]);
    expect(h.pool.size).toBe(0);
    expect(h.evictions.map(([, r]) => r)).toEqual(['shutdown', 'shutdown']);
    await expect(h.pool.get('late')).rejects.toThrow(/closed/);
    expect(created.find((x) => x.tenant === 'late')?.closed).toBe(1);
  });
});
