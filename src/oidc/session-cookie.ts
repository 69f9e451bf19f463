/**
 * oidc-provider 9's signed session cookie as its `cookies` library (0.9, keygrip 1.1) reads and
 * writes it, for the direct silent re-authentication (silent-auth.ts): `_session` carries the
 * Session's id, `_session.sig` the HMAC-SHA1 (base64url, no padding) of `_session=<id>` under the
 * tenant's cookie key; both are re-set on every save with the `long` cookie options of provider.ts
 * (path /, SameSite=Lax, HttpOnly, Secure on https) and the session's expiry appended
 * (shared/session.js).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = '_session';
const SIG_COOKIE = `${SESSION_COOKIE}.sig`;
/** cookies' getPattern: the first `name=` at the start or after a `;` and spaces, up to the next `;`. */
const SESSION_VALUE = /(?:^|;) *_session=([^;]*)/;
const SIG_VALUE = /(?:^|;) *_session\.sig=([^;]*)/;

/** keygrip's sign with the default sha1/base64 and its URL-safe replacements (= base64url). */
const sign = (data: string, key: string): string => createHmac('sha1', key).update(data).digest('base64url');

/** A verified session cookie: the Session's id and its signature (the same when it is set again). */
export interface SessionCookie {
  id: string;
  sig: string;
}

/**
 * The session cookie of a request's Cookie header when its signature verifies with the first of
 * the tenant's keys (oidc-provider would re-sign under a later key: not served), else undefined.
 * Quoted values (which the library unquotes) and empty values are not served either.
 */
export function signedSessionCookie(header: string | undefined, keys: readonly string[]): SessionCookie | undefined {
  if (!header || !keys.length) return undefined;
  const value = SESSION_VALUE.exec(header)?.[1];
  const remote = SIG_VALUE.exec(header)?.[1];
  if (!value || !remote || value.startsWith('"') || remote.startsWith('"')) return undefined;
  const sig = sign(`${SESSION_COOKIE}=${value}`, keys[0]!);
  const expected = Buffer.from(sig);
  const given = Buffer.from(remote);
  return expected.length === given.length && timingSafeEqual(expected, given) ? { id: value, sig } : undefined;
}

/**
 * The two Set-Cookie lines oidc-provider sends when it saves the session of `cookie` again,
 * expiring at `exp` (epoch seconds): the same id, so the same signature.
 */
export function sessionSetCookies(cookie: SessionCookie, exp: number, secure: boolean): string[] {
  const attributes = `; path=/; samesite=lax${secure ? '; secure' : ''}; httponly; expires=${new Date(exp * 1000).toUTCString()}`;
  return [`${SESSION_COOKIE}=${cookie.id}${attributes}`, `${SIG_COOKIE}=${cookie.sig}${attributes}`];
}
