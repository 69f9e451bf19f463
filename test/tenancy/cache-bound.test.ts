/**
 * entryBound (src/tenancy/cache-bound.ts): the tenant registry's and tenant state cache's bound
 * without lru-cache's up-front allocation (issue 17). Same bound and eviction as `max`.
 */
import { LRUCache } from 'lru-cache';
import { describe, expect, it } from 'vitest';
import { entryBound } from '../../src/tenancy/cache-bound.js';

describe('entryBound', () => {
  it('evicts the least recently used entry past the bound, like max', () => {
    const disposed: Array<[string, string]> = [];
    const opts = { ttl: 60_000, dispose: (_v: number, k: string, reason: string) => disposed.push([k, reason]) };
    const bounded = new LRUCache<string, number>({ ...entryBound(3), ...opts });
    const reference = new LRUCache<string, number>({ max: 3, ...opts });
    for (const cache of [bounded, reference]) {
      cache.set('a', 1);
      cache.set('b', 2);
      cache.set('c', 3);
      cache.get('a'); // b is now the least recently used
      cache.set('d', 4);
      cache.set('d', 5); // an update is not a new entry
    }
    expect([...bounded.keys()]).toEqual(['d', 'a', 'c']);
    expect([...bounded.keys()]).toEqual([...reference.keys()]);
    expect(bounded.size).toBe(3);
    expect(disposed.filter(([, reason]) => reason === 'evict')).toEqual([
      ['b', 'evict'],
      ['b', 'evict'],
    ]);
  });

  it('allocates nothing up front for a large bound', () => {
    const before = process.memoryUsage().heapUsed;
    // With max: 1,000,000 lru-cache allocates ~30 MB of index arrays per cache in its constructor.
    const caches = [1, 2, 3].map(() => new LRUCache<string, number>({ ...entryBound(1_000_000), ttl: 60_000 }));
    const grown = process.memoryUsage().heapUsed - before;
    expect(caches).toHaveLength(3);
    expect(grown).toBeLessThan(20 * 1048576);
  });
});
