/**
 * End-user pages (CONTRACT.md conventions): sign-in with e-mail + password, consent, device code
 * entry and confirmation, sign-out, two-step verification (sign-in step, enrolment, recovery codes,
 * turning it off). Plain forms that work without JavaScript, real labels,
 * one primary button each.
 */
import { Html, html, layout } from './html.js';
import { socialButtons, type SocialButton } from './social-pages.js';

interface Base {
  stylesheet: string;
}

const SCOPE_TEXT: Record<string, string> = {
  openid: 'Sign you in',
  profile: 'See your name and profile details',
  email: 'See your e-mail address',
  offline_access: 'Stay signed in on your behalf (refresh tokens)',
};

function errorBlock(error: string | undefined): Html {
  return error ? html`<p class="error" role="alert" id="form-error">${error}</p>` : html``;
}

export function loginPage(o: Base & { action: string; csrf: string; clientName: string; email?: string; error?: string; social?: readonly SocialButton[] }): string {
  return layout(
    { title: 'Sign in', stylesheet: o.stylesheet },
    html`<h1>Sign in</h1>
<p>to continue to <strong>${o.clientName}</strong></p>
${errorBlock(o.error)}
<form method="post" action="${o.action}" novalidate>
<input type="hidden" name="csrf_token" value="${o.csrf}">
<label for="email">E-mail</label>
<input type="email" id="email" name="email" autocomplete="username" required value="${o.email ?? ''}"${o.error ? html` aria-describedby="form-error"` : html``} autofocus>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<div class="actions"><button type="submit" class="primary">Sign in</button></div>
</form>
${socialButtons(o.social)}`,
  );
}

export function consentPage(o: Base & { action: string; abortAction: string; csrf: string; clientName: string; scopes: string[] }): string {
  const items = o.scopes.map((s) => html`<li>${SCOPE_TEXT[s] ?? s}</li>`);
  return layout(
    { title: 'Allow access', stylesheet: o.stylesheet },
    html`<h1>Allow access?</h1>
<p><strong>${o.clientName}</strong> asks to:</p>
<ul class="scopes">${items}</ul>
<form method="post" action="${o.action}">
<input type="hidden" name="csrf_token" value="${o.csrf}">
<div class="actions">
<button type="submit" formaction="${o.abortAction}" name="decision" value="deny">Deny</button>
<button type="submit" class="primary" name="decision" value="allow" autofocus>Allow</button>
</div>
</form>`,
  );
}

export function deviceInputPage(o: Base & { action: string; xsrf: string; userCode?: string; error?: string }): string {
  return layout(
    { title: 'Connect a device', stylesheet: o.stylesheet },
    html`<h1>Connect a device</h1>
<p>Enter the code shown on your device.</p>
${errorBlock(o.error)}
<form method="post" action="${o.action}" novalidate>
<input type="hidden" name="xsrf" value="${o.xsrf}">
<label for="user_code">Device code</label>
<input type="text" id="user_code" name="user_code" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false" required value="${o.userCode ?? ''}" autofocus>
<div class="actions"><button type="submit" class="primary">Continue</button></div>
</form>`,
  );
}

export function deviceConfirmPage(o: Base & { action: string; xsrf: string; userCode: string; clientName: string }): string {
  return layout(
    { title: 'Confirm device', stylesheet: o.stylesheet },
    html`<h1>Confirm device</h1>
<p><strong>${o.clientName}</strong> wants to sign in on a device showing this code:</p>
<code class="user-code">${o.userCode}</code>
<p>If you did not start this, or the code does not match, abort.</p>
<form method="post" action="${o.action}">
<input type="hidden" name="xsrf" value="${o.xsrf}">
<input type="hidden" name="user_code" value="${o.userCode}">
<div class="actions">
<button type="submit" name="abort" value="yes">Abort</button>
<button type="submit" class="primary" name="confirm" value="yes" autofocus>Continue</button>
</div>
</form>`,
  );
}

export function messagePage(o: Base & { title: string; message: string; error?: boolean }): string {
  return layout(
    { title: o.title, stylesheet: o.stylesheet },
    html`<h1>${o.title}</h1>
<p${o.error ? html` class="error" role="alert"` : html``}>${o.message}</p>`,
  );
}

export function logoutPage(o: Base & { form: string; host: string }): string {
  // `form` is oidc-provider's hidden form (id op.logoutForm with its xsrf field); the buttons submit it.
  return layout(
    { title: 'Sign out', stylesheet: o.stylesheet },
    html`<h1>Sign out?</h1>
<p>Do you want to sign out of ${o.host}?</p>
${new Html(o.form)}
<div class="actions">
<button type="submit" form="op.logoutForm">Stay signed in</button>
<button type="submit" class="primary" form="op.logoutForm" name="logout" value="yes" autofocus>Sign out</button>
</div>`,
  );
}

/** The one-time-code field shared by the sign-in step and enrolment (autofill and numeric keypad). */
function codeField(error: string | undefined): Html {
  return html`<label for="code">Authentication code</label>
<input type="text" id="code" name="code" autocomplete="one-time-code" inputmode="numeric" pattern="[0-9 ]*" maxlength="7" spellcheck="false" required${error ? html` aria-describedby="form-error"` : html``} autofocus>`;
}

/** Second sign-in step: a code from the authenticator app, or (`recovery`) one of the recovery codes. */
export function mfaChallengePage(o: Base & { action: string; csrf: string; clientName: string; recovery: boolean; switchHref: string; error?: string }): string {
  const field = o.recovery
    ? html`<label for="recovery_code">Recovery code</label>
<input type="text" id="recovery_code" name="recovery_code" autocomplete="off" autocapitalize="none" spellcheck="false" required${o.error ? html` aria-describedby="form-error"` : html``} autofocus>`
    : codeField(o.error);
  return layout(
    { title: 'Two-step verification', stylesheet: o.stylesheet },
    html`<h1>Two-step verification</h1>
<p>${o.recovery ? 'Enter one of the recovery codes you saved when you set up two-step verification.' : 'Enter the 6-digit code from your authenticator app'} to continue to <strong>${o.clientName}</strong>.</p>
${errorBlock(o.error)}
<form method="post" action="${o.action}" novalidate>
<input type="hidden" name="csrf_token" value="${o.csrf}">
${field}
<div class="actions"><button type="submit" class="primary">Verify</button></div>
</form>
<p><a href="${o.switchHref}">${o.recovery ? 'Use your authenticator app instead' : 'Use a recovery code instead'}</a></p>`,
  );
}

/** Enrolment: the secret as text and as an otpauth:// link (no QR code: no script, no dependency). */
export function mfaEnrollPage(o: Base & { action: string; csrf: string; enrollment: string; secret: string; uri: string; error?: string }): string {
  const grouped = o.secret.match(/.{1,4}/g)!.join(' ');
  return layout(
    { title: 'Set up two-step verification', stylesheet: o.stylesheet },
    html`<h1>Set up two-step verification</h1>
<p>Add an account to your authenticator app with this setup key (time-based):</p>
<code class="secret" id="totp-secret">${grouped}</code>
<p>Or, on the device with the app, open this <a href="${o.uri}">otpauth link</a>:</p>
<code class="uri" id="totp-uri">${o.uri}</code>
<p>Then enter the code the app shows to confirm.</p>
${errorBlock(o.error)}
<form method="post" action="${o.action}" novalidate>
<input type="hidden" name="csrf_token" value="${o.csrf}">
<input type="hidden" name="enrollment" value="${o.enrollment}">
${codeField(o.error)}
<div class="actions"><button type="submit" class="primary">Turn on</button></div>
</form>`,
  );
}

/** Shown once after enrolment: only hashes are kept. */
export function recoveryCodesPage(o: Base & { codes: string[] }): string {
  return layout(
    { title: 'Two-step verification is on', stylesheet: o.stylesheet },
    html`<h1>Two-step verification is on</h1>
<p>Save these recovery codes somewhere safe. Each works once, if you lose access to your authenticator app. They will not be shown again.</p>
<ul class="codes" id="recovery-codes">${o.codes.map((c) => html`<li><code>${c}</code></li>`)}</ul>
<p>You can close this page.</p>`,
  );
}

/** For an enrolled user: turning it off needs the password again. */
export function mfaManagePage(o: Base & { action: string; csrf: string; email: string; error?: string }): string {
  return layout(
    { title: 'Two-step verification', stylesheet: o.stylesheet },
    html`<h1>Two-step verification</h1>
<p>Two-step verification is on for <strong>${o.email}</strong>. To turn it off, enter your password.</p>
${errorBlock(o.error)}
<form method="post" action="${o.action}" novalidate>
<input type="hidden" name="csrf_token" value="${o.csrf}">
<input type="hidden" name="username" autocomplete="username" value="${o.email}">
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required${o.error ? html` aria-describedby="form-error"` : html``} autofocus>
<div class="actions"><button type="submit" class="primary">Turn off</button></div>
</form>`,
  );
}
