/**
 * Social login on the end-user pages: the "Continue with <name>" links of the sign-in page (with
 * the provider's mark for the presets, src/ui/social-marks.ts), the
 * page that asks an existing user's password before an upstream account is linked, and the page
 * that ends a failed upstream sign-in (with a way back to the sign-in page when it is still open).
 * Provider names come from configuration and are escaped like any text.
 */
import { html, layout, type Html } from './html.js';
import type { PageUi } from './page-ui.js';
import { errorBlock } from './pages.js';
import { socialMark } from './social-marks.js';

export interface SocialButton {
  /** The provider's display name. */
  name: string;
  href: string;
  /** The preset it is built on (its mark, src/ui/social-marks.ts); none for generic providers. */
  preset?: string;
}

/** The block under the password form; empty without enabled providers. */
export function socialButtons(buttons: readonly SocialButton[], ui: PageUi): Html {
  if (!buttons.length) return html``;
  const { t } = ui;
  return html`<div class="social" role="group" aria-label="${t('social.group')}">
<p class="divider">${t('social.or')}</p>
<ul class="social-list">${buttons.map((b) => html`<li><a class="button social-button" href="${b.href}">${socialMark(b.preset)}<span>${t('social.continue_with', { provider: b.name })}</span></a></li>`)}</ul>
</div>`;
}

export function socialLinkPage(o: { ui: PageUi; action: string; cancelAction: string; csrf: string; provider: string; email: string; error?: string }): string {
  const { t } = o.ui;
  // Link is the form's first submit button: Enter in the password field presses the first one
  // (HTML implicit submission), which must not be Cancel.
  return layout(
    { title: t('social.link.title', { provider: o.provider }), ui: o.ui },
    html`<h1>${t('social.link.title', { provider: o.provider })}</h1>
<p>${t.html('social.link.intro', { email: html`<strong>${o.email}</strong>`, provider: o.provider })}</p>
${errorBlock(o.error)}
<form method="post" action="${o.action}" novalidate>
<input type="hidden" name="csrf_token" value="${o.csrf}">
<input type="hidden" name="username" autocomplete="username" value="${o.email}">
<label for="password">${t('signin.password')}</label>
<input type="password" id="password" name="password" autocomplete="current-password" required${o.error ? html` aria-describedby="form-error"` : html``} autofocus>
<div class="actions">
<button type="submit" class="primary">${t('social.link.submit')}</button>
<button type="submit" formaction="${o.cancelAction}" name="decision" value="cancel">${t('social.link.cancel')}</button>
</div>
</form>`,
  );
}

export function socialErrorPage(o: { ui: PageUi; title: string; message: string; back?: string }): string {
  return layout(
    { title: o.title, ui: o.ui },
    html`<h1>${o.title}</h1>
<p class="error" role="alert">${o.message}</p>
${o.back ? html`<p><a href="${o.back}">${o.ui.t('social.back')}</a></p>` : html``}`,
  );
}

/** Stylesheet rules for the links above (appended to the one stylesheet). */
export const SOCIAL_STYLES = `
.social .divider{text-align:center;margin:20px 0 12px}
.social-list{list-style:none;padding:0;margin:0;display:flex;flex-direction:column;gap:8px}
a.button{display:block;text-align:center;padding:10px 16px;font-weight:600;border-radius:8px;border:1px solid var(--field-border);color:inherit;text-decoration:none}
a.button:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
a.social-button{display:flex;align-items:center;justify-content:center;gap:10px}
.social-mark{width:20px;height:20px;flex:none}
`;

export interface LinkedAccountRow {
  provider: string;
  /** Display name of the provider (or its configured name when no longer enabled). */
  name: string;
  subject: string;
  email: string | null;
}

/** The signed-in user's linked accounts, each with its Unlink button (a form with the CSRF token). */
export function linkedAccountsPage(o: { ui: PageUi; action: string; csrf: string; rows: LinkedAccountRow[]; notice?: string; error?: string }): string {
  const { t } = o.ui;
  const rows = o.rows.map(
    (r) => html`<li><strong>${r.name}</strong>${r.email ? html` (${r.email})` : html``}
<form method="post" action="${o.action}">
<input type="hidden" name="csrf_token" value="${o.csrf}">
<input type="hidden" name="provider" value="${r.provider}">
<input type="hidden" name="subject" value="${r.subject}">
<button type="submit">${t('social.account.unlink', { provider: r.name })}</button>
</form></li>`,
  );
  return layout(
    { title: t('social.account.title'), ui: o.ui },
    html`<h1>${t('social.account.title')}</h1>
<p>${t('social.account.intro')}</p>
${o.notice ? html`<p role="status">${o.notice}</p>` : html``}
${errorBlock(o.error)}
${o.rows.length ? html`<ul class="linked-accounts">${rows}</ul>` : html`<p>${t('social.account.none')}</p>`}`,
  );
}
