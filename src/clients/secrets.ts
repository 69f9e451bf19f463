/**
 * Client secrets: generated here, stored as sha256 hashes. They are 256-bit random values, so a
 * fast hash is as safe as a slow one and keeps the token endpoint fast. Registration tokens use
 * the same hash (src/oidc/register-rp.ts).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const HASH_PREFIX = '$sha256$';

export function newClientSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function hashSecret(secret: string): string {
  return HASH_PREFIX + createHash('sha256').update(secret).digest('base64url');
}

/** Constant-time comparison of a presented secret with a stored hash. */
export function secretMatches(presented: string, storedHash: string | null): boolean {
  if (!storedHash) return false;
  const a = Buffer.from(hashSecret(presented));
  const b = Buffer.from(storedHash);
  return a.length === b.length && timingSafeEqual(a, b);
}
