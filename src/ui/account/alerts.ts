/**
 * Security alerts (notifications.security_alerts): an e-mail to the user on a password change,
 * an MFA change, a lock, and a sign-in from a new device (when security.device_matching is on).
 * The tenant's defaults apply unless the user chose otherwise on the account page (stored in
 * user_preferences as `alerts`). Sent off the request path; a failure is logged, never thrown.
 */
import { afterAnswer } from '../../http/after-answer.js';
import type { UserRecord } from '../../storage/types.js';
import type { Locale } from '../i18n/index.js';
import { securityAlertMail, type SecurityAlert } from '../mail-templates.js';
import { alertDefaults, mailAvailable, mailLocale, sendMail, type AccountHost, type AlertKind } from './host.js';

export const ALERT_KINDS: AlertKind[] = ['new_device_login', 'password_changed', 'mfa_changed', 'account_locked'];

const SETTING: Record<SecurityAlert, AlertKind> = {
  password_changed: 'password_changed',
  mfa_changed: 'mfa_changed',
  account_locked: 'account_locked',
  new_device: 'new_device_login',
};

/** The user's alert choices where made, else the tenant's defaults. */
export async function alertChoices(host: AccountHost, userId: string): Promise<Record<AlertKind, boolean>> {
  const stored = (await host.ctx.storage.userPreferences.get(host.tenant, userId))?.alerts as Partial<Record<AlertKind, unknown>> | undefined;
  const out = alertDefaults(host);
  for (const k of ALERT_KINDS) if (typeof stored?.[k] === 'boolean') out[k] = stored[k] as boolean;
  return out;
}

interface AlertDetails {
  lang?: Locale;
  device?: string;
  byAdmin?: boolean;
}

/** Queues the alert when the user has an address, mail is available and the alert is chosen. */
async function sendAlert(host: AccountHost, user: UserRecord, alert: SecurityAlert, details: AlertDetails): Promise<void> {
  if (!user.email || !mailAvailable(host)) return;
  const to = user.email;
  const choices = await alertChoices(host, user.id);
  if (!choices[SETTING[alert]]) return;
  const accountUrl = `${host.origin.origin}/account`;
  const { device, byAdmin } = details;
  sendMail(host, 'security_alert', user, to, mailLocale(host, details.lang), (a) => securityAlertMail(a, alert, accountUrl, new Date(), { device, byAdmin }));
}

const notSent = (host: AccountHost, alert: SecurityAlert) => (err: unknown) => host.ctx.log.error({ err, tenant: host.tenant, alert }, 'security alert not sent');

/** The user's own change or sign-in, told after the answer (tracked like the admin's: the mailer's drain and the shutdown wait for it). */
export function securityAlert(host: AccountHost, user: UserRecord, alert: SecurityAlert, lang?: Locale, device?: string): void {
  afterAnswer(() => sendAlert(host, user, alert, { lang, device }), notSent(host, alert));
}

/**
 * An administrator changed the user's credentials through the Management API (a password set, an
 * MFA reset): the same alert and choices as the user's own change, in the tenant's default
 * language (no page to take one from), saying an administrator made it. Runs after the answer
 * (http/after-answer.ts: the mailer's drain and the shutdown wait for it).
 */
export function adminChangeAlert(host: AccountHost, user: UserRecord, alert: 'password_changed' | 'mfa_changed'): void {
  afterAnswer(() => sendAlert(host, user, alert, { byAdmin: true }), notSent(host, alert));
}
