/**
 * The e-mails' text part: the line that introduces the action's address is punctuated as each
 * language writes it (French: a no-break space before the colon), from the catalogue, not a colon
 * the template adds.
 */
import { describe, expect, it } from 'vitest';
import type { Brand } from '../../src/ui/branding.js';
import { LOCALES, translator } from '../../src/ui/i18n/index.js';
import { passwordResetMail, securityAlertMail, verifyEmailMail } from '../../src/ui/mail-templates.js';

const brand: Brand = { links: {}, light: {}, dark: {} } as unknown as Brand;
const audience = (lang: (typeof LOCALES)[number]) => ({ t: translator(lang), brand, to: 'ada@example.com', name: 'Ada' });
const URL_ = 'https://id.example.com/account/verify?token=x';

describe('mail text part', () => {
  it('French: the action label is followed by a no-break space and a colon', () => {
    const mail = verifyEmailMail(audience('fr'), URL_, 86400);
    const lines = mail.text.split('\n');
    expect(lines[lines.indexOf(URL_) - 1]).toBe('Confirmer mon adresse e-mail\u00a0:');
    expect(mail.text).not.toMatch(/[^\u00a0]:\n/);
  });

  it('English, German, Spanish: the colon right after the label', () => {
    for (const lang of ['en', 'de', 'es'] as const) {
      const t = translator(lang);
      const mail = passwordResetMail(audience(lang), URL_, 3600);
      const lines = mail.text.split('\n');
      expect(lines[lines.indexOf(URL_) - 1], lang).toBe(`${t('mail.reset.action')}:`);
    }
  });

  it('every language and every mail puts the separator of its own catalogue', () => {
    for (const lang of LOCALES) {
      const t = translator(lang);
      const mail = securityAlertMail(audience(lang), 'mfa_changed', URL_, new Date(0));
      expect(mail.text, lang).toContain(`${t('mail.text_action', { action: t('mail.alert.action') })}\n${URL_}`);
    }
  });
});

describe('security alert by an administrator', () => {
  it('every language says an administrator made the change, and asks to contact them instead of "if this was not you"', () => {
    for (const lang of LOCALES) {
      const t = translator(lang);
      const own = securityAlertMail(audience(lang), 'password_changed', URL_, new Date(0));
      const admin = securityAlertMail(audience(lang), 'password_changed', URL_, new Date(0), { byAdmin: true });
      expect(admin.subject, lang).toBe(own.subject);
      for (const key of ['mail.alert.by_admin', 'mail.alert.by_admin.not_you'] as const) {
        expect(t(key), lang).not.toBe(key);
        expect(admin.text, lang).toContain(t(key));
        expect(own.text, lang).not.toContain(t(key));
      }
      expect(admin.text, lang).not.toContain(t('mail.alert.not_you'));
      expect(own.text, lang).toContain(t('mail.alert.not_you'));
    }
  });
});
