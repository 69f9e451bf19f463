/**
 * Client secrets: generated here, stored as keyed hashes: HMAC-SHA-256 with a server key derived
 * from SVC_ENCRYPTION_KEY (issue 12 item 10), so an operator-chosen secret (the bootstrap client's)
 * cannot be brute-forced offline from a database dump alone. A fast keyed hash keeps the token
 * endpoint fast. Hashes stored before (`$sha256$`, unkeyed) still verify; the bootstrap secret is
 * rehashed at start (bootstrap.ts) and any other on its next rotation.
 *
 * Registration tokens are 256-bit random values looked up by their hash: they keep the unkeyed
 * SHA-256 (`hashRandomToken`), where offline guessing is hopeless anyway.
 */
import { createHash, createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';

export const HASH_PREFIX = '$sha256$';
export const HMAC_PREFIX = '$hmac256$';

// A KeyObject, imported once: createHmac with a raw Buffer imports the key on every call, and
// every client authentication hashes the presented secret (issue 17).
let hmacKey: KeyObject | undefined;

/** Set once at start with the sealer's derived key (app.ts); until then secrets hash unkeyed. */
export function setSecretHashKey(key: Buffer): void {
  hmacKey = createSecretKey(key);
}

export function newClientSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** Unkeyed SHA-256 for random bearer tokens found by their hash (registration tokens). */
export function hashRandomToken(token: string): string {
  return HASH_PREFIX + createHash('sha256').update(token).digest('base64url');
}

/** The stored form of a client secret: HMAC-SHA-256 under the server key. */
export function hashSecret(secret: string): string {
  if (!hmacKey) return hashRandomToken(secret);
  return HMAC_PREFIX + createHmac('sha256', hmacKey).update(secret).digest('base64url');
}

/** True when `stored` is a hash this module made (either form). */
export function isSecretHash(stored: string): boolean {
  return stored.startsWith(HMAC_PREFIX) || stored.startsWith(HASH_PREFIX);
}

/** Constant-time comparison of a presented secret with a stored hash of either form. */
export function secretMatches(presented: string, storedHash: string | null): boolean {
  if (!storedHash) return false;
  const candidate = storedHash.startsWith(HMAC_PREFIX) ? hashSecret(presented) : hashRandomToken(presented);
  const a = Buffer.from(candidate);
  const b = Buffer.from(storedHash);
  return a.length === b.length && timingSafeEqual(a, b);
}
