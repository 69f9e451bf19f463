/**
 * Random token values and ids cut from a pooled buffer: one getrandom call per `perFill` values
 * instead of one per token (the token endpoint issues thousands a second; issue 17).
 */
import { randomBytes } from 'node:crypto';

/** A generator of base64url values of `bytes` random bytes each. */
export function pooledRandom(bytes: number, perFill: number): () => string {
  let pool = Buffer.alloc(0);
  let offset = 0;
  return () => {
    if (offset + bytes > pool.length) {
      pool = randomBytes(bytes * perFill);
      offset = 0;
    }
    const value = pool.toString('base64url', offset, offset + bytes);
    offset += bytes;
    return value;
  };
}
