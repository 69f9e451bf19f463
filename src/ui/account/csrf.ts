/**
 * CSRF protection of the self-service forms that have no session yet (password reset, e-mail
 * verification): a random value in an HttpOnly SameSite=Lax cookie, and in the form its HMAC under
 * the tenant's CSRF key (double submit, signed: a cookie planted by a sibling subdomain is useless
 * without the key). Compared in constant time.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { cookieValue } from '../page-ui.js';

const COOKIE = 'svc_form';

export interface FormCsrf {
  token: string;
  /** Set-Cookie to send when the browser had no cookie yet. */
  setCookie?: string;
}

export function formCsrf(key: Buffer, cookieHeader: string | undefined, secure: boolean): FormCsrf {
  const existing = cookieValue(cookieHeader, COOKIE);
  const value = existing && /^[A-Za-z0-9_-]{22,64}$/.test(existing) ? existing : randomBytes(18).toString('base64url');
  return {
    token: sign(key, value),
    setCookie: value === existing ? undefined : `${COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`,
  };
}

export function formCsrfValid(key: Buffer, cookieHeader: string | undefined, given: string | null): boolean {
  const value = cookieValue(cookieHeader, COOKIE);
  if (!value || !given) return false;
  const a = Buffer.from(sign(key, value));
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

function sign(key: Buffer, value: string): string {
  return createHmac('sha256', key).update(`form:${value}`).digest('base64url');
}
