/**
 * The e-mails' content: multipart text + HTML in the recipient's language, branded (company
 * name, logo with alt text, the brand colour on the button), with exactly one action link to the
 * service. Every value is escaped in the HTML part; subjects carry no line breaks (no header
 * injection even before nodemailer's own encoding).
 */
import type { MailMessage } from '../mail/types.js';
import type { Brand } from './branding.js';
import { readableOn } from './branding.js';
import { html, type Html } from './escape.js';
import type { MessageKey, Translator, Vars } from './i18n/index.js';

export interface MailAudience {
  t: Translator;
  brand: Brand;
  to: string;
  /** The recipient's name, if known (shown in the greeting, escaped). */
  name?: string | null;
}

interface Composition {
  subject: MessageKey;
  /** Paragraphs before the action. */
  before: Array<[MessageKey, Vars?]>;
  action: { label: MessageKey; url: string };
  /** Paragraphs after the action. */
  after: Array<[MessageKey, Vars?]>;
}

const PRODUCT = 'svc';

function oneLine(s: string): string {
  return s.replace(/[\r\n\u2028\u2029]+/g, ' ').trim();
}

function compose(a: MailAudience, c: Composition): MailMessage {
  const { t, brand } = a;
  const company = brand.name ?? PRODUCT;
  const name = a.name ? oneLine(a.name).slice(0, 200) : '';
  const greeting = name ? t('mail.greeting', { name }) : t('mail.greeting_anonymous');
  const subject = oneLine(`${t(c.subject)}${brand.name ? ` - ${brand.name}` : ''}`);
  const paragraphs = (list: Array<[MessageKey, Vars?]>) => list.map(([k, v]) => t(k, v));

  const text = [
    company,
    '',
    greeting,
    '',
    ...paragraphs(c.before).flatMap((p) => [p, '']),
    // The separator is the language's (French: a no-break space before the colon).
    t('mail.text_action', { action: t(c.action.label) }),
    c.action.url,
    '',
    ...paragraphs(c.after).flatMap((p) => [p, '']),
    '--',
    t('mail.footer', { company }),
  ].join('\n');

  const accent = brand.light.primary ?? '#2456d3';
  const logo: Html = brand.logoLight ? html`<img src="${brand.logoLight}" alt="${company}" height="40" style="height:40px;max-width:240px">` : html`<strong style="font-size:20px">${company}</strong>`;
  const p = (s: string) => html`<p style="margin:0 0 16px">${s}</p>`;
  const body = html`<!DOCTYPE html>
<html lang="${t.lang}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${subject}</title></head>
<body style="margin:0;padding:24px;background:#f4f6fa;color:#1d2433;font:16px/1.5 ${brand.font ?? 'system-ui'},-apple-system,'Segoe UI',Roboto,sans-serif">
<div style="max-width:560px;margin:0 auto;background:#ffffff;border:1px solid #d5dae3;border-radius:12px;padding:32px">
<div style="margin:0 0 24px">${logo}</div>
${p(greeting)}
${paragraphs(c.before).map(p)}
<p style="margin:24px 0"><a href="${c.action.url}" style="display:inline-block;padding:12px 20px;border-radius:8px;background:${accent};color:${readableOn(accent)};font-weight:600;text-decoration:none">${t(c.action.label)}</a></p>
<p style="margin:0 0 16px;font-size:13px;color:#5b6475">${t('mail.link_hint')}<br><span style="word-break:break-all">${c.action.url}</span></p>
${paragraphs(c.after).map(p)}
<p style="margin:24px 0 0;font-size:13px;color:#5b6475">${t('mail.footer', { company })}</p>
</div>
</body>
</html>`;
  return { to: a.to, subject, text, html: body.value };
}

export function passwordResetMail(a: MailAudience, url: string, ttlSeconds: number): MailMessage {
  return compose(a, {
    subject: 'mail.reset.subject',
    before: [['mail.reset.intro', { minutes: Math.round(ttlSeconds / 60) }]],
    action: { label: 'mail.reset.action', url },
    after: [['mail.reset.ignore']],
  });
}

export function verifyEmailMail(a: MailAudience, url: string, ttlSeconds: number): MailMessage {
  return compose(a, {
    subject: 'mail.verify.subject',
    before: [['mail.verify.intro', { email: a.to, hours: Math.round(ttlSeconds / 3600) }]],
    action: { label: 'mail.verify.action', url },
    after: [['mail.verify.ignore']],
  });
}

/** Sign-up with an address that already has an account: told to its owner, not to the visitor. */
export function existingAccountMail(a: MailAudience, resetUrl: string): MailMessage {
  return compose(a, {
    subject: 'mail.existing.subject',
    before: [['mail.existing.intro', { email: a.to }]],
    action: { label: 'mail.existing.action', url: resetUrl },
    after: [],
  });
}

export type SecurityAlert = 'password_changed' | 'mfa_changed' | 'account_locked' | 'new_device';

const ALERTS: Record<SecurityAlert, { subject: MessageKey; intro: MessageKey }> = {
  password_changed: { subject: 'mail.alert.password_changed.subject', intro: 'mail.alert.password_changed.intro' },
  mfa_changed: { subject: 'mail.alert.mfa_changed.subject', intro: 'mail.alert.mfa_changed.intro' },
  account_locked: { subject: 'mail.alert.account_locked.subject', intro: 'mail.alert.account_locked.intro' },
  new_device: { subject: 'mail.alert.new_device.subject', intro: 'mail.alert.new_device.intro' },
};

/**
 * `byAdmin`: an administrator made the change (Management API password set or MFA reset): the mail
 * says so, and tells the user to contact the administrator if unexpected instead of "if this was
 * not you" (it was not, by definition).
 */
export function securityAlertMail(a: MailAudience, alert: SecurityAlert, accountUrl: string, at: Date, opts: { device?: string; byAdmin?: boolean } = {}): MailMessage {
  const time = `${new Intl.DateTimeFormat(a.t.lang, { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' }).format(at)} UTC`;
  const intro: [MessageKey, Vars?] = [ALERTS[alert].intro, { time, device: opts.device ? oneLine(opts.device).slice(0, 120) : '?' }];
  return compose(a, {
    subject: ALERTS[alert].subject,
    before: opts.byAdmin ? [intro, ['mail.alert.by_admin']] : [intro],
    action: { label: 'mail.alert.action', url: accountUrl },
    after: [[opts.byAdmin ? 'mail.alert.by_admin.not_you' : 'mail.alert.not_you']],
  });
}

/**
 * To the address an account had before an e-mail change was confirmed: the only notice its owner
 * gets if someone else moved the account to an address of theirs. Names the new address, so the
 * owner knows where the account went.
 */
export function emailChangedMail(a: MailAudience, newEmail: string, accountUrl: string, at: Date): MailMessage {
  const time = `${new Intl.DateTimeFormat(a.t.lang, { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' }).format(at)} UTC`;
  return compose(a, {
    subject: 'mail.alert.email_changed.subject',
    before: [['mail.alert.email_changed.intro', { email: oneLine(newEmail), time }]],
    action: { label: 'mail.alert.action', url: accountUrl },
    after: [['mail.alert.email_changed.not_you']],
  });
}
