/**
 * Pages of the self-service account surface: forgotten password (request, new password), sign-up,
 * e-mail verification. Same conventions as ../pages.ts: plain forms, real labels, translated text,
 * one primary button each, a single new-password field (CONTRACT.md allows one or two; one keeps
 * label lookups unambiguous).
 */
import { errorBlock, type Base } from '../pages.js';
import { Html, html, layout } from '../html.js';
import { PROFILE_MAX } from '../../users/schema.js';

/** Hidden CSRF field of the self-service forms. */
const csrfField = (csrf: string) => html`<input type="hidden" name="csrf_token" value="${csrf}">`;

/** The password field's rule hint, tied to it by aria-describedby. */
function newPasswordField(o: Base & { id: string; label: string; minLength: number; error?: string }): Html {
  const { t } = o.ui;
  return html`<label for="${o.id}">${o.label}</label>
<input type="password" id="${o.id}" name="password" autocomplete="new-password" required minlength="${o.minLength}" maxlength="128" aria-describedby="${o.id}-hint${o.error ? ' form-error' : ''}">
<p class="hint" id="${o.id}-hint">${t('password.hint', { min: o.minLength })}</p>`;
}

export function forgotPage(o: Base & { action: string; csrf: string; email?: string; error?: string; back?: string }): string {
  const { t } = o.ui;
  return layout(
    { title: t('reset.request.title'), ui: o.ui },
    html`<h1>${t('reset.request.title')}</h1>
<p>${t('reset.request.intro')}</p>
${errorBlock(o.error)}
<form method="post" action="${o.action}" novalidate>
${csrfField(o.csrf)}
<label for="email">${t('signin.email')}</label>
<input type="email" id="email" name="email" autocomplete="username" required value="${o.email ?? ''}"${o.error ? html` aria-describedby="form-error"` : html``} autofocus>
<div class="actions"><button type="submit" class="primary">${t('reset.request.submit')}</button></div>
</form>
${o.back ? html`<p><a href="${o.back}">${t('reset.back')}</a></p>` : html``}`,
  );
}

export function resetPage(o: Base & { action: string; csrf: string; token: string; email: string; minLength: number; error?: string }): string {
  const { t } = o.ui;
  return layout(
    { title: t('reset.form.title'), ui: o.ui },
    html`<h1>${t('reset.form.title')}</h1>
<p>${t.html('reset.form.intro', { email: html`<strong>${o.email}</strong>` })}</p>
${errorBlock(o.error)}
<form method="post" action="${o.action}" novalidate>
${csrfField(o.csrf)}
<input type="hidden" name="token" value="${o.token}">
<input type="hidden" name="username" autocomplete="username" value="${o.email}">
${newPasswordField({ ui: o.ui, id: 'new-password', label: t('password.new'), minLength: o.minLength, error: o.error })}
<div class="actions"><button type="submit" class="primary">${t('reset.form.submit')}</button></div>
</form>`,
  );
}

export function signupPage(o: Base & { action: string; csrf: string; clientName: string; email?: string; name?: string; minLength: number; error?: string; signIn: string }): string {
  const { t } = o.ui;
  return layout(
    { title: t('signup.title'), ui: o.ui },
    html`<h1>${t('signup.title')}</h1>
<p>${t.html('signin.to_continue', { client: html`<strong>${o.clientName}</strong>` })}</p>
${errorBlock(o.error)}
<form method="post" action="${o.action}" novalidate>
${csrfField(o.csrf)}
<label for="name">${t('signup.name')}</label>
<input type="text" id="name" name="name" autocomplete="name" maxlength="${PROFILE_MAX.name}" value="${o.name ?? ''}">
<label for="email">${t('signin.email')}</label>
<input type="email" id="email" name="email" autocomplete="username" required maxlength="320" value="${o.email ?? ''}"${o.error ? html` aria-describedby="form-error"` : html``} autofocus>
${newPasswordField({ ui: o.ui, id: 'password', label: t('signin.password'), minLength: o.minLength, error: o.error })}
<div class="actions"><button type="submit" class="primary">${t('signup.submit')}</button></div>
</form>
<p><a href="${o.signIn}">${t('signup.have_account')}</a></p>`,
  );
}

/** After sign-up (or at sign-in with an unconfirmed address when the tenant requires it). */
export function checkEmailPage(o: Base & { email: string; resendAction: string; continueAction: string; csrf: string; notice?: string; error?: string }): string {
  const { t } = o.ui;
  return layout(
    { title: t('signup.check.title'), ui: o.ui },
    html`<h1>${t('signup.check.title')}</h1>
<p>${t.html('signup.check.message', { email: html`<strong>${o.email}</strong>` })}</p>
${errorBlock(o.error)}
${o.notice ? html`<p role="status">${o.notice}</p>` : html``}
<form method="post" action="${o.continueAction}">
${csrfField(o.csrf)}
<div class="actions">
<button type="submit" formaction="${o.resendAction}">${t('signup.resend')}</button>
<button type="submit" class="primary">${t('verify.continue')}</button>
</div>
</form>`,
  );
}
