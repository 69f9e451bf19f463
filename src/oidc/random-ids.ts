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

/** base64url's 64 characters in ASCII order: a prefix written with them sorts as its number does. */
const ORDERED = '-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz';

/** How many leading characters of a time-ordered value are its clock. */
export const TIME_PREFIX_LENGTH = 8;

/**
 * Token values that sort by issue time: 8 characters of the millisecond clock (ORDERED radix 64),
 * then 35 random characters (210 bits), 43 base64url characters in all like oidc-provider's
 * opaque values. Stored under the value itself, values issued close together land next to each
 * other in the primary-key index, so a group commit writes a few index pages instead of one per
 * token (docs/decisions.md).
 */
export function timeOrderedValue(random: () => string): () => string {
  return () => {
    let ms = Date.now();
    let prefix = '';
    for (let i = 0; i < TIME_PREFIX_LENGTH; i++) {
      prefix = ORDERED[ms % 64]! + prefix;
      ms = Math.floor(ms / 64);
    }
    return prefix + random().slice(0, 35);
  };
}
