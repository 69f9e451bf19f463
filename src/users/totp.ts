/**
 * TOTP (RFC 6238 over RFC 4226 HOTP): HMAC-SHA1, 6 digits, 30-second steps, ±1 step accepted for
 * clock drift. Pure functions only; which steps a user already used (replay) is tracked in mfa.ts.
 * Also base32 (RFC 4648, what authenticator apps read) and recovery codes.
 */
import { createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

export const TOTP_DIGITS = 6;
export const TOTP_PERIOD_SECONDS = 30;
/** Steps either side of the current one that still count (RFC 6238 5.2 recommends at most one). */
export const TOTP_WINDOW = 1;

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

export function base32Encode(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = ((value << 8) | byte) & 0xffff; // only the low `bits` bits are ever read
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/** Lenient on input (case, spaces, padding), strict on the alphabet: throws on anything else. */
export function base32Decode(text: string): Buffer {
  const clean = text.replace(/[\s=]/g, '').toUpperCase();
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of clean) {
    const idx = BASE32.indexOf(ch);
    if (idx < 0) throw new Error('invalid base32 character');
    value = ((value << 5) | idx) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** 160 random bits (the HMAC-SHA1 block-size recommendation of RFC 4226 4), base32. */
export function generateTotpSecret(): string {
  return base32Encode(randomBytes(20));
}

/** The Key Uri Format authenticator apps import; the label is "<issuer host>:<account>". */
export function otpauthUri(secret: string, issuerHost: string, account: string): string {
  const label = `${encodeURIComponent(issuerHost)}:${encodeURIComponent(account)}`;
  const query = new URLSearchParams({ secret, issuer: issuerHost, algorithm: 'SHA1', digits: String(TOTP_DIGITS), period: String(TOTP_PERIOD_SECONDS) });
  return `otpauth://totp/${label}?${query.toString().replace(/\+/g, '%20')}`;
}

/** RFC 4226 HOTP value of `counter` (key bytes raw, not base32). */
export function hotp(key: Buffer, counter: number | bigint, digits = TOTP_DIGITS): string {
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', key).update(msg).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const bin = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(bin % 10 ** digits).padStart(digits, '0');
}

export function totpStep(nowMs: number): number {
  return Math.floor(nowMs / 1000 / TOTP_PERIOD_SECONDS);
}

/** The TOTP code of a base32 secret at a time (what the authenticator app shows). */
export function totpAt(secret: string, nowMs: number, digits = TOTP_DIGITS): string {
  return hotp(base32Decode(secret), totpStep(nowMs), digits);
}

/**
 * The step a submitted code belongs to, within ±TOTP_WINDOW of now, or undefined. Every candidate
 * is compared (constant-time) so timing does not tell which step matched or whether any did.
 */
export function matchTotp(secret: string, code: string, nowMs: number): number | undefined {
  const given = code.replace(/\s/g, '');
  if (!/^\d+$/.test(given) || given.length !== TOTP_DIGITS) return undefined;
  const key = base32Decode(secret);
  const now = totpStep(nowMs);
  let matched: number | undefined;
  for (let step = now - TOTP_WINDOW; step <= now + TOTP_WINDOW; step++) {
    if (timingSafeEqual(Buffer.from(hotp(key, step)), Buffer.from(given)) && matched === undefined) matched = step;
  }
  return matched;
}

export const RECOVERY_CODE_COUNT = 10;
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789'; // no 0/o, 1/l/i: read off paper

/** Ten single-use codes like "k3m9p-x2r7c" (50 bits each), shown to the user once. */
export function generateRecoveryCodes(count = RECOVERY_CODE_COUNT): string[] {
  return Array.from({ length: count }, () => {
    const chars = Array.from({ length: 10 }, () => RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)]!).join('');
    return `${chars.slice(0, 5)}-${chars.slice(5)}`;
  });
}

/** Stored form: sha256 of the code without separators or case, so "K3M9P X2R7C" matches too. */
export function hashRecoveryCode(code: string): string {
  const normal = code.toLowerCase().replace(/[^a-z0-9]/g, '');
  return createHash('sha256').update(`recovery:${normal}`).digest('base64url');
}
