/**
 * Recognising returning devices (security.device_matching): after a sign-in the browser gets a
 * long-lived cookie naming it as a device of this user (a random id and its HMAC under the
 * tenant's key, bound to the user: it cannot be forged or moved to another account). A sign-in
 * without a valid one is from a new device: with `notify_new_device` the user gets a security
 * alert (not on the account's very first sign-in: every device is new then).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { HttpRequest } from '../../http/types.js';
import type { UserRecord } from '../../storage/types.js';
import type { Locale } from '../i18n/index.js';
import { cookieValue } from '../page-ui.js';
import { securityAlert } from './alerts.js';
import type { AccountHost } from './host.js';

export interface DeviceMatching {
  enabled: boolean;
  days: number;
  notify: boolean;
}

export function deviceMatching(host: AccountHost): DeviceMatching {
  const own = host.config.overrides.security?.device_matching;
  const global = host.config.security.device_matching;
  return { enabled: own?.enabled ?? global.enabled, days: own?.trusted_device_days ?? global.trusted_device_days, notify: own?.notify_new_device ?? global.notify_new_device };
}

const cookieName = (userId: string) => `svc_device_${createHash('sha256').update(userId).digest('base64url').slice(0, 10)}`;
const mac = (host: AccountHost, userId: string, id: string) => createHmac('sha256', host.csrfKey).update(`device:${host.tenant}:${userId}:${id}`).digest('base64url');

function known(host: AccountHost, req: HttpRequest, userId: string): boolean {
  const value = cookieValue(req.headers.cookie, cookieName(userId));
  const [id, given] = (value ?? '').split('.');
  if (!id || !given) return false;
  const a = Buffer.from(mac(host, userId, id));
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Called once a sign-in is complete: alerts on a new device, returns the Set-Cookie to send. */
export function recogniseDevice(host: AccountHost, req: HttpRequest, user: UserRecord, lang: Locale): string | undefined {
  const m = deviceMatching(host);
  if (!m.enabled) return undefined;
  if (!known(host, req, user.id) && m.notify && user.last_login_at) {
    securityAlert(host, user, 'new_device', lang, (req.headers['user-agent'] ?? 'unknown browser').slice(0, 120));
  }
  const id = randomBytes(12).toString('base64url');
  const secure = host.origin.protocol === 'https:' ? '; Secure' : '';
  return `${cookieName(user.id)}=${id}.${mac(host, user.id, id)}; Path=/; Max-Age=${m.days * 86400}; HttpOnly; SameSite=Lax${secure}`;
}
