/**
 * Security alerts (notifications.security_alerts): an e-mail to the user on a password change,
 * an MFA change, a lock, and a sign-in from a new device (when security.device_matching is on).
 * The tenant's defaults apply unless the user turned an alert off on the account page
 * (stored in the user's alert preferences).
 */
import type { UserRecord } from '../../storage/types.js';
import type { Locale } from '../i18n/index.js';
import { securityAlertMail, type SecurityAlert } from '../mail-templates.js';
import { alertDefaults, mailAvailable, mailLocale, sendMail, type AccountHost, type AlertKind } from './host.js';

const SETTING: Record<SecurityAlert, AlertKind> = {
  password_changed: 'password_changed',
  mfa_changed: 'mfa_changed',
  account_locked: 'account_locked',
  new_device: 'new_device_login',
};

/** The user's own choice where made, else the tenant's default. */
export function alertEnabled(host: AccountHost, user: Pick<UserRecord, 'id'> & { alert_preferences?: Partial<Record<AlertKind, boolean>> | null }, alert: SecurityAlert): boolean {
  const kind = SETTING[alert];
  return user.alert_preferences?.[kind] ?? alertDefaults(host)[kind];
}

export function securityAlert(host: AccountHost, user: UserRecord, alert: SecurityAlert, lang?: Locale, device?: string): void {
  if (!user.email || !mailAvailable(host) || !alertEnabled(host, user, alert)) return;
  const accountUrl = `${host.origin.origin}/account`;
  sendMail(host, 'security_alert', user, user.email, mailLocale(host, lang), (a) => securityAlertMail(a, alert, accountUrl, new Date(), device));
}
