/**
 * End-user pages (CONTRACT.md conventions): sign-in with e-mail + password, consent, device code
 * entry and confirmation, sign-out, two-step verification (sign-in step, enrolment, recovery codes,
 * turning it off). Plain forms that work without JavaScript, real labels, one primary button each.
 * Every text comes from the language catalogues (ui.t; src/ui/i18n/messages/en.ts lists the keys).
 */
import { Html, html, layout } from './html.js';
import type { MessageKey } from './i18n/index.js';
import type { PageUi } from './page-ui.js';
import { clientLogo } from './client-logo.js';

export interface Base {
  ui: PageUi;
  /** Path of the passkey script, on pages that run a passkey ceremony (their headers must allow it). */
  script?: string;
}

const SCOPE_KEYS: Record<string, MessageKey> = {
  openid: 'scope.openid',
  profile: 'scope.profile',
  email: 'scope.email',
  offline_access: 'scope.offline_access',
};

export function errorBlock(error: string | undefined): Html {
  return error ? html`<p class="error" role="alert" id="form-error">${error}</p>` : html``;
}

/**
 * Extension point of the sign-in page: links and buttons below the form (password reset, sign-up,
 * passkey, social providers). Each entry is trusted markup built with `html`.
 */
export interface LoginExtras {
  /** Below the password field (e.g. the forgotten-password link). */
  afterPassword?: Html[];
  /** Below the form (e.g. sign-up link, other ways to sign in). */
  afterForm?: Html[];
}

export function loginPage(o: Base & { action: string; csrf: string; clientName: string; logoUri?: string; email?: string; error?: string; extras?: LoginExtras }): string {
  const { t } = o.ui;
  // After a refused password the e-mail is kept: the focus goes to the password, the field to retype.
  const retype = !!(o.error && o.email);
  return layout(
    { title: t('signin.title'), ui: o.ui, script: o.script },
    html`${clientLogo(o.ui, o.logoUri, o.clientName)}<h1>${t('signin.title')}</h1>
<p>${t.html('signin.to_continue', { client: html`<strong>${o.clientName}</strong>` })}</p>
${errorBlock(o.error)}
<form method="post" action="${o.action}" novalidate>
<input type="hidden" name="csrf_token" value="${o.csrf}">
<label for="email">${t('signin.email')}</label>
<input type="email" id="email" name="email" autocomplete="username" required value="${o.email ?? ''}"${o.error && !retype ? html` aria-describedby="form-error"` : html``}${retype ? html`` : html` autofocus`}>
<label for="password">${t('signin.password')}</label>
<input type="password" id="password" name="password" autocomplete="current-password" required${retype ? html` aria-describedby="form-error" autofocus` : html``}>
${o.extras?.afterPassword ?? []}
<div class="actions"><button type="submit" class="primary">${t('signin.submit')}</button></div>
</form>
${o.extras?.afterForm ?? []}`,
  );
}

/** A scope on the consent page: a standard one in the page's language, an API's with its own description. */
export interface ConsentScope {
  name: string;
  description?: string;
}

export function consentPage(
  o: Base & { action: string; abortAction: string; csrf: string; clientName: string; logoUri?: string; policyUri?: string; tosUri?: string; signedInAs?: string; scopes: ConsentScope[] },
): string {
  const { t } = o.ui;
  const items = o.scopes.map((s) => html`<li>${SCOPE_KEYS[s.name] ? t(SCOPE_KEYS[s.name]!) : s.description ?? s.name}</li>`);
  // The client's own policy and terms (OIDC Dynamic Client Registration 2: the OP SHOULD display them).
  const links = [
    o.policyUri ? html`<a href="${o.policyUri}" rel="noopener noreferrer">${t('consent.client_policy', { client: o.clientName })}</a>` : undefined,
    o.tosUri ? html`<a href="${o.tosUri}" rel="noopener noreferrer">${t('consent.client_terms', { client: o.clientName })}</a>` : undefined,
  ].filter((l) => l !== undefined);
  return layout(
    { title: t('consent.title'), ui: o.ui },
    html`${clientLogo(o.ui, o.logoUri, o.clientName)}<h1>${t('consent.heading')}</h1>
${o.signedInAs ? html`<p class="signed-in-as">${t.html('consent.signed_in_as', { user: html`<strong>${o.signedInAs}</strong>` })}</p>` : html``}
<p>${t.html('consent.asks', { client: html`<strong>${o.clientName}</strong>` })}</p>
<ul class="scopes">${items}</ul>
${links.length ? html`<ul class="client-links">${links.map((l) => html`<li>${l}</li>`)}</ul>` : html``}
<form method="post" action="${o.action}">
<input type="hidden" name="csrf_token" value="${o.csrf}">
<div class="actions">
<button type="submit" formaction="${o.abortAction}" name="decision" value="deny">${t('consent.deny')}</button>
<button type="submit" class="primary" name="decision" value="allow" autofocus>${t('consent.allow')}</button>
</div>
</form>`,
  );
}

export function deviceInputPage(o: Base & { action: string; xsrf: string; userCode?: string; error?: string }): string {
  const { t } = o.ui;
  return layout(
    { title: t('device.title'), ui: o.ui },
    html`<h1>${t('device.title')}</h1>
<p>${t('device.intro')}</p>
${errorBlock(o.error)}
<form method="post" action="${o.action}" novalidate>
<input type="hidden" name="xsrf" value="${o.xsrf}">
<label for="user_code">${t('device.code')}</label>
<input type="text" id="user_code" name="user_code" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" required value="${o.userCode ?? ''}" aria-describedby="user_code-hint${o.error ? ' form-error' : ''}" autofocus>
<p class="hint" id="user_code-hint">${t('device.code_hint')}</p>
<div class="actions"><button type="submit" class="primary">${t('device.continue')}</button></div>
</form>`,
  );
}

export function deviceConfirmPage(o: Base & { action: string; xsrf: string; userCode: string; clientName: string }): string {
  const { t } = o.ui;
  return layout(
    { title: t('device.confirm.title'), ui: o.ui },
    html`<h1>${t('device.confirm.title')}</h1>
<p>${t.html('device.confirm.intro', { client: html`<strong>${o.clientName}</strong>` })}</p>
<code class="user-code">${o.userCode}</code>
<p>${t('device.confirm.warning')}</p>
<form method="post" action="${o.action}">
<input type="hidden" name="xsrf" value="${o.xsrf}">
<input type="hidden" name="user_code" value="${o.userCode}">
<div class="actions">
<button type="submit" name="abort" value="yes">${t('device.abort')}</button>
<button type="submit" class="primary" name="confirm" value="yes" autofocus>${t('device.continue')}</button>
</div>
</form>`,
  );
}

export function messagePage(o: Base & { title: string; message: string; error?: boolean; links?: Html[] }): string {
  return layout(
    { title: o.title, ui: o.ui },
    html`<h1>${o.title}</h1>
<p${o.error ? html` class="error" role="alert"` : html``}>${o.message}</p>
${o.links ?? []}`,
  );
}

/** `clientName`: the application the sign-out request came from (client_id or id_token_hint), when known. */
export function logoutPage(o: Base & { form: string; clientName?: string }): string {
  const { t } = o.ui;
  // `form` is oidc-provider's hidden form (id op.logoutForm with its xsrf field); the buttons submit it.
  return layout(
    { title: t('logout.title'), ui: o.ui },
    html`<h1>${t('logout.heading')}</h1>
<p>${o.clientName ? t.html('logout.question', { client: html`<strong>${o.clientName}</strong>` }) : t('logout.question_any')}</p>
${new Html(o.form)}
<div class="actions">
<button type="submit" form="op.logoutForm">${t('logout.stay')}</button>
<button type="submit" class="primary" form="op.logoutForm" name="logout" value="yes" autofocus>${t('logout.submit')}</button>
</div>`,
  );
}

/** The one-time-code field shared by the sign-in step and enrolment (autofill and numeric keypad). */
export function codeField(ui: PageUi, error: string | undefined): Html {
  return html`<label for="code">${ui.t('mfa.code')}</label>
<input type="text" id="code" name="code" autocomplete="one-time-code" inputmode="numeric" pattern="[0-9 ]*" maxlength="7" spellcheck="false" required${error ? html` aria-describedby="form-error"` : html``} autofocus>`;
}

/** Second sign-in step: a code from the authenticator app, or (`recovery`) one of the recovery codes. */
export function mfaChallengePage(o: Base & { action: string; csrf: string; clientName: string; recovery: boolean; switchHref: string; error?: string; extras?: Html[] }): string {
  const { t } = o.ui;
  const field = o.recovery
    ? html`<label for="recovery_code">${t('mfa.recovery_code')}</label>
<input type="text" id="recovery_code" name="recovery_code" autocomplete="off" autocapitalize="none" spellcheck="false" required${o.error ? html` aria-describedby="form-error"` : html``} autofocus>`
    : codeField(o.ui, o.error);
  const client = html`<strong>${o.clientName}</strong>`;
  return layout(
    { title: t('mfa.title'), ui: o.ui, script: o.script },
    html`<h1>${t('mfa.title')}</h1>
<p>${o.recovery ? t.html('mfa.intro.recovery', { client }) : t.html('mfa.intro.totp', { client })}</p>
${errorBlock(o.error)}
<form method="post" action="${o.action}" novalidate>
<input type="hidden" name="csrf_token" value="${o.csrf}">
${field}
<div class="actions"><button type="submit" class="primary">${t('mfa.verify')}</button></div>
</form>
<p class="aside"><a href="${o.switchHref}">${o.recovery ? t('mfa.use_app') : t('mfa.use_recovery')}</a></p>
${o.extras ?? []}`,
  );
}

/** Enrolment: the secret as text and as an otpauth:// link, and (when given) its QR code as inline SVG. */
export function mfaEnrollPage(o: Base & { action: string; csrf: string; enrollment: string; secret: string; uri: string; qrSvg?: Html; error?: string; extras?: Html[]; hidden?: Html }): string {
  const { t } = o.ui;
  const grouped = o.secret.match(/.{1,4}/g)!.join(' ');
  return layout(
    { title: t('mfa.enroll.title'), ui: o.ui, script: o.script },
    html`<h1>${t('mfa.enroll.title')}</h1>
${o.qrSvg ? html`<div class="qr" role="img" aria-label="${o.ui.t('account.mfa.qr')}">${o.qrSvg}</div>` : html``}
<p>${t('mfa.enroll.key_intro')}</p>
<code class="secret" id="totp-secret">${grouped}</code>
<p>${t.html('mfa.enroll.link_intro', { link: html`<a href="${o.uri}">${t('mfa.enroll.link')}</a>` })}</p>
<code class="uri" id="totp-uri">${o.uri}</code>
<p>${t('mfa.enroll.then')}</p>
${errorBlock(o.error)}
<form method="post" action="${o.action}" novalidate>
<input type="hidden" name="csrf_token" value="${o.csrf}">
<input type="hidden" name="enrollment" value="${o.enrollment}">
${o.hidden ?? html``}
${codeField(o.ui, o.error)}
<div class="actions"><button type="submit" class="primary">${t('mfa.enroll.submit')}</button></div>
</form>
${o.extras ?? []}`,
  );
}

/** Shown once after enrolment: only hashes are kept. */
export function recoveryCodesPage(o: Base & { codes: string[]; links?: Html[] }): string {
  const { t } = o.ui;
  return layout(
    { title: t('mfa.codes.title'), ui: o.ui },
    html`<h1>${t('mfa.codes.title')}</h1>
<p>${t('mfa.codes.intro')}</p>
<ul class="codes" id="recovery-codes">${o.codes.map((c) => html`<li><code>${c}</code></li>`)}</ul>
${o.links?.length ? o.links : html`<p>${t('mfa.codes.close')}</p>`}`,
  );
}

/** For an enrolled user: turning it off needs the password again. */
export function mfaManagePage(o: Base & { action: string; csrf: string; email: string; error?: string; extras?: Html[] }): string {
  const { t } = o.ui;
  return layout(
    { title: t('mfa.title'), ui: o.ui, script: o.script },
    html`<h1>${t('mfa.title')}</h1>
<p>${t.html('mfa.manage.intro', { email: html`<strong>${o.email}</strong>` })}</p>
${errorBlock(o.error)}
<form method="post" action="${o.action}" novalidate>
<input type="hidden" name="csrf_token" value="${o.csrf}">
<input type="hidden" name="username" autocomplete="username" value="${o.email}">
<label for="password">${t('signin.password')}</label>
<input type="password" id="password" name="password" autocomplete="current-password" required${o.error ? html` aria-describedby="form-error"` : html``} autofocus>
<div class="actions"><button type="submit" class="primary">${t('mfa.manage.submit')}</button></div>
</form>
${o.extras ?? []}`,
  );
}
