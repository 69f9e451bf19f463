/**
 * Security alerts (notifications.security_alerts): an e-mail to the user on a password change,
 * an MFA change, a lock, and a sign-in from a new device (when security.device_matching is on).
 * The tenant's defaults apply unless the user chose otherwise on the account page (stored in
 * user_preferences as `alerts`). Sent off the request path; a failure is logged, never thrown.
 */
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

export function securityAlert(host: AccountHost, user: UserRecord, alert: SecurityAlert, lang?: Locale, device?: string): void {
  if (!user.email || !mailAvailable(host)) return;
  const to = user.email;
  void alertChoices(host, user.id)
    .then((choices) => {
      if (!choices[SETTING[alert]]) return;
      const accountUrl = `${host.origin.origin}/account`;
      sendMail(host, 'security_alert', user, to, mailLocale(host, lang), (a) => securityAlertMail(a, alert, accountUrl, new Date(), device));
    })
    .catch((err: unknown) => host.ctx.log.error({ err, tenant: host.tenant, alert }, 'security alert not sent'));
}
