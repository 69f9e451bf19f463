/** What the sign-in page links to: password reset (when mail can be sent) and sign-up (when on). */
import { html } from '../escape.js';
import type { LoginExtras } from '../pages.js';
import type { PageUi } from '../page-ui.js';
import { mailAvailable, signupSettings, type AccountHost } from './host.js';
import { FORGOT_PATH } from './password-reset.js';

export function loginExtras(host: AccountHost, uid: string, ui: PageUi): LoginExtras {
  const { t } = ui;
  const back = `${host.mountPath}/interaction/${uid}`;
  const extras: LoginExtras = { afterPassword: [], afterForm: [] };
  // `ui_locales`: the reset form (and so its mail) stays in the sign-in page's language, which may
  // have come from the relying party's ui_locales rather than from anything the browser sends. Not
  // `lang`: that is the switcher's parameter, a choice the user made, remembered for a year.
  if (mailAvailable(host)) extras.afterPassword!.push(html`<p class="aside"><a href="${FORGOT_PATH}?return=${encodeURIComponent(back)}&ui_locales=${t.lang}">${t('signin.forgot')}</a></p>`);
  if (signupSettings(host).enabled) extras.afterForm!.push(html`<p><a href="${back}/signup">${t('signin.signup')}</a></p>`);
  return extras;
}
