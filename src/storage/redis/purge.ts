/**
 * Removes every Redis key of one tenant (`<prefix>:<tenant>:*`: OIDC artefacts, their indexes,
 * rate-limit counters) when the tenant is deleted. SCAN in batches and UNLINK, so a large key
 * space neither blocks Redis nor is held in memory at once. Keys written concurrently by a request
 * still in flight may survive; they all carry TTLs and reference a tenant that no longer resolves.
 */
import type { Redis } from 'ioredis';
import { redisCall, tenantKeyPrefix } from './client.js';

const BATCH = 500;

export async function purgeTenantKeys(redis: Redis, prefix: string, tenant: string): Promise<number> {
  // tenantKeyPrefix refuses names with glob characters, so the pattern matches this tenant only.
  const pattern = `${tenantKeyPrefix(prefix, tenant)}*`;
  let cursor = '0';
  let removed = 0;
  do {
    const [next, keys] = await redisCall(() => redis.scan(cursor, 'MATCH', pattern, 'COUNT', BATCH));
    cursor = next;
    if (keys.length) removed += await redisCall(() => redis.unlink(...keys));
  } while (cursor !== '0');
  return removed;
}
