/**
 * Pages of the self-service account surface: forgotten password (request, new password), sign-up,
 * e-mail verification. Same conventions as ../pages.ts: plain forms, real labels, translated text,
 * one primary button each, a single new-password field (CONTRACT.md allows one or two; one keeps
 * label lookups unambiguous).
 */
import { errorBlock, type Base } from '../pages.js';
import type { PageUi } from '../page-ui.js';
import { Html, html, layout } from '../html.js';
import { PROFILE_MAX } from '../../users/schema.js';

/** Hidden CSRF field of the self-service forms. */
const csrfField = (csrf: string) => html`<input type="hidden" name="csrf_token" value="${csrf}">`;

/**
 * A field's state after a refused submit (WCAG 3.3.1): the field in error is described by the
 * message (errorBlock's form-error) besides its own hint, marked aria-invalid and focused.
 */
function fieldState(o: { inError: boolean; hint?: string; autofocus?: boolean }): Html {
  const described = [o.hint, o.inError ? 'form-error' : undefined].filter((id) => id !== undefined).join(' ');
  return html`${described ? html` aria-describedby="${described}"` : html``}${o.inError ? html` aria-invalid="true"` : html``}${o.inError || o.autofocus ? html` autofocus` : html``}`;
}

/** The password field's rule hint, tied to it by aria-describedby; `inError`: the message is about it. */
function newPasswordField(o: Base & { id: string; label: string; minLength: number; inError: boolean; autofocus?: boolean }): Html {
  const { t } = o.ui;
  return html`<label for="${o.id}">${o.label}</label>
<input type="password" id="${o.id}" name="password" autocomplete="new-password" required minlength="${o.minLength}" maxlength="128"${fieldState({ inError: o.inError, hint: `${o.id}-hint`, autofocus: o.autofocus })}>
<p class="hint" id="${o.id}-hint">${t('password.hint', { min: o.minLength })}</p>`;
}

/** "Back to sign in", to a return target the caller checked (password-reset.ts safeReturn). */
export function backLink(ui: PageUi, back: string | undefined): Html {
  return back ? html`<p><a href="${back}">${ui.t('reset.back')}</a></p>` : html``;
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
<input type="email" id="email" name="email" autocomplete="username" required value="${o.email ?? ''}"${fieldState({ inError: Boolean(o.error), autofocus: true })}>
${o.back ? html`<input type="hidden" name="return" value="${o.back}">` : html``}
<div class="actions"><button type="submit" class="primary">${t('reset.request.submit')}</button></div>
</form>
${backLink(o.ui, o.back)}`,
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
${newPasswordField({ ui: o.ui, id: 'new-password', label: t('password.new'), minLength: o.minLength, inError: Boolean(o.error), autofocus: true })}
<div class="actions"><button type="submit" class="primary">${t('reset.form.submit')}</button></div>
</form>`,
  );
}

/** The sign-up field an error is about (none: a limit, not the user's input). */
export type SignupField = 'name' | 'email' | 'password';

export function signupPage(
  o: Base & { action: string; csrf: string; clientName: string; email?: string; name?: string; minLength: number; error?: string; errorField?: SignupField; signIn: string },
): string {
  const { t } = o.ui;
  const inError = (field: SignupField) => Boolean(o.error) && o.errorField === field;
  // The focus: the field in error, else the address (the first field one must fill).
  return layout(
    { title: t('signup.title'), ui: o.ui },
    html`<h1>${t('signup.title')}</h1>
<p>${t.html('signin.to_continue', { client: html`<strong>${o.clientName}</strong>` })}</p>
${errorBlock(o.error)}
<form method="post" action="${o.action}" novalidate>
${csrfField(o.csrf)}
<label for="name">${t('signup.name')}</label>
<input type="text" id="name" name="name" autocomplete="name" maxlength="${PROFILE_MAX.name}" value="${o.name ?? ''}"${fieldState({ inError: inError('name') })}>
<label for="email">${t('signin.email')}</label>
<input type="email" id="email" name="email" autocomplete="username" required maxlength="320" value="${o.email ?? ''}"${fieldState({ inError: inError('email'), autofocus: !inError('name') && !inError('password') })}>
${newPasswordField({ ui: o.ui, id: 'password', label: t('signin.password'), minLength: o.minLength, inError: inError('password') })}
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
