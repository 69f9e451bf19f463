/** What the mailer sends and through which server. */

export interface SmtpSettings {
  host: string;
  port: number;
  secure: boolean;
  username?: string;
  /** In clear here (unsealed by the caller); never logged. */
  password?: string;
  from: string;
}

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
}

/** Which message (for logs and audit; never the content). */
export type MailKind = 'password_reset' | 'verify_email' | 'signup_existing' | 'security_alert';

export interface MailJob {
  tenant: string;
  kind: MailKind;
  userId: string | null;
  /** Undefined: no SMTP server (development writes the message to the log). */
  smtp: SmtpSettings | undefined;
  message: MailMessage;
}
