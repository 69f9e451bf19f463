/**
 * lru-cache options that bound a cache to `entries` entries without allocating them up front.
 * With `max`, lru-cache allocates its index arrays for `max` entries in the constructor: the tenant
 * registry's 50,000 cost ~1.8 MB and ~12 ms of every start (issue 17), and the 1,000,000 that
 * MULTI_TENANCY_TENANT_CACHE_MAX_SIZE allows ~31 MB and ~150 ms, while a single-tenant instance
 * holds a handful of entries. Each entry counted as size 1 under `maxSize` gives the same bound and
 * the same eviction (least recently used first, disposed with reason 'evict'); the arrays grow
 * with the entries instead.
 */
export function entryBound(entries: number): { maxSize: number; sizeCalculation: () => number } {
  return { maxSize: entries, sizeCalculation: () => 1 };
}
