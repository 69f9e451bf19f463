/**
 * The PHC string format of an Argon2id hash (the format @node-rs/argon2 writes and the users table
 * stores): `$argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<tag>`, salt and tag in standard
 * base64 without padding.
 *
 * Only what the native implementation (workers/argon2-native.ts) computes is parsed here: Argon2id,
 * version 0x13, no secret or associated data, parameters inside NATIVE_LIMITS. Anything else
 * (another variant, a foreign encoding, an unusual parameter) parses to undefined and is verified by
 * @node-rs/argon2 as before, so no stored hash changes meaning.
 */

export interface Argon2idHash {
  memoryKiB: number;
  passes: number;
  lanes: number;
  salt: Buffer;
  tag: Buffer;
}

/**
 * Bounds of the native path. Wider values stay valid hashes; they are left to @node-rs/argon2, whose
 * memory is returned after each call (the native area is kept per thread, so it must stay small).
 */
export const NATIVE_LIMITS = {
  maxMemoryKiB: 262_144,
  maxPasses: 16,
  maxLanes: 16,
  minSalt: 8,
  maxSalt: 64,
  minTag: 16,
  maxTag: 64,
} as const;

const PHC = /^\$argon2id\$v=19\$m=([1-9]\d{0,9}),t=([1-9]\d{0,9}),p=([1-9]\d{0,9})\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

export function encodeArgon2id(hash: Argon2idHash): string {
  return `$argon2id$v=19$m=${hash.memoryKiB},t=${hash.passes},p=${hash.lanes}$${b64(hash.salt)}$${b64(hash.tag)}`;
}

export function parseArgon2id(phc: string): Argon2idHash | undefined {
  const m = PHC.exec(phc);
  if (!m) return undefined;
  const memoryKiB = Number(m[1]);
  const passes = Number(m[2]);
  const lanes = Number(m[3]);
  const salt = unb64(m[4]!);
  const tag = unb64(m[5]!);
  if (!salt || !tag) return undefined;
  return withinNativeLimits({ memoryKiB, passes, lanes, saltBytes: salt.length, tagBytes: tag.length })
    ? { memoryKiB, passes, lanes, salt, tag }
    : undefined;
}

/** The shape of an Argon2id hash, without its salt and tag: what decides whether the native path takes it. */
export interface Argon2idShape {
  memoryKiB: number;
  passes: number;
  lanes: number;
  saltBytes: number;
  tagBytes: number;
}

export function withinNativeLimits(shape: Argon2idShape): boolean {
  const L = NATIVE_LIMITS;
  return (
    shape.memoryKiB <= L.maxMemoryKiB &&
    shape.passes <= L.maxPasses &&
    shape.lanes <= L.maxLanes &&
    // RFC 9106 3.1: at least 8 KiB per lane.
    shape.memoryKiB >= 8 * shape.lanes &&
    shape.saltBytes >= L.minSalt &&
    shape.saltBytes <= L.maxSalt &&
    shape.tagBytes >= L.minTag &&
    shape.tagBytes <= L.maxTag
  );
}

function b64(buf: Buffer): string {
  return buf.toString('base64').replace(/=+$/, '');
}

/** Strict: only the canonical encoding (Buffer.from alone would accept stray bits and characters). */
function unb64(text: string): Buffer | undefined {
  if (text.length % 4 === 1) return undefined;
  const buf = Buffer.from(text, 'base64');
  return b64(buf) === text ? buf : undefined;
}
