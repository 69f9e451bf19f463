/**
 * Passkey parts of the end-user pages: the sign-in button, the second-step choice, the account
 * page's list (rename, remove, add) and the enrolment the MFA policy forces at sign-in. Each form
 * is a plain POST form that the passkey script (passkey-script.ts) fills and submits; pages that
 * include one are served with `script-src 'self'` (pageHeaders({ script: true })).
 */
import type { WebauthnCredentialRecord } from '../storage/types.js';
import { Html, html, layout } from './html.js';

interface Base {
  stylesheet: string;
  /** Path of the passkey script. */
  script: string;
}

interface Ceremony {
  /** Where the filled form is posted. */
  action: string;
  /** Where the script fetches the ceremony options. */
  optionsUrl: string;
  csrf: string;
}

const STATUS = html`<p class="passkey-status" data-passkey-status role="status" aria-live="polite"></p>`;

function errorBlock(error: string | undefined): Html {
  return error ? html`<p class="error" role="alert" id="form-error">${error}</p>` : html``;
}

function ceremonyForm(kind: 'create' | 'get', c: Ceremony, button: string, inner: Html = html``, conditionalField?: string): Html {
  return html`<form method="post" action="${c.action}" data-passkey="${kind}" data-options="${c.optionsUrl}"${conditionalField ? html` data-conditional="${conditionalField}"` : html``} data-unsupported="This browser does not support passkeys." data-failed="The passkey was not used. Try again, or use another way.">
<input type="hidden" name="csrf_token" value="${c.csrf}">
<input type="hidden" name="credential" value="">
${inner}
<div class="actions"><button type="button" data-passkey-start>${button}</button></div>
${STATUS}
</form>`;
}

/** Below the sign-in form: passwordless sign-in with a discoverable passkey (and autofill in the e-mail field). */
export function passkeySignIn(c: Ceremony): Html {
  return html`<div class="alternative"><p class="divider">or</p>
${ceremonyForm('get', c, 'Use a passkey', html``, 'email')}</div>`;
}

/** Second sign-in step offering the user's methods: a passkey, and the authenticator-app code if enrolled. */
export function secondStepPage(
  o: Base & { clientName: string; passkey: Ceremony; totp?: { action: string; csrf: string; recoveryHref: string }; error?: string },
): string {
  const totp = o.totp
    ? html`<p class="divider">or</p>
<form method="post" action="${o.totp.action}" novalidate>
<input type="hidden" name="csrf_token" value="${o.totp.csrf}">
<label for="code">Authentication code</label>
<input type="text" id="code" name="code" autocomplete="one-time-code" inputmode="numeric" pattern="[0-9 ]*" maxlength="7" spellcheck="false" required${o.error ? html` aria-describedby="form-error"` : html``}>
<div class="actions"><button type="submit" class="primary">Verify</button></div>
</form>
<p><a href="${o.totp.recoveryHref}">Use a recovery code instead</a></p>`
    : html``;
  return layout(
    { title: 'Two-step verification', stylesheet: o.stylesheet, script: o.script },
    html`<h1>Two-step verification</h1>
<p>Confirm it is you to continue to <strong>${o.clientName}</strong>.</p>
${errorBlock(o.error)}
${ceremonyForm('get', o.passkey, 'Use a passkey')}
${totp}`,
  );
}

const when = (iso: string | null) => (iso ? iso.slice(0, 16).replace('T', ' ') + ' UTC' : 'never');

/** The account page's passkey list with rename and remove, and the button that adds one. */
export function passkeySection(o: { passkeys: WebauthnCredentialRecord[]; add: Ceremony; renameAction: string; removeAction: string; notice?: string; error?: string }): Html {
  const items = o.passkeys.map(
    (p, i) => html`<li class="passkey">
<p><strong>${p.name}</strong><br>Added ${when(p.created_at)} · last used ${when(p.last_used_at)}</p>
<form method="post" action="${o.renameAction}">
<input type="hidden" name="csrf_token" value="${o.add.csrf}">
<input type="hidden" name="id" value="${p.id}">
<label for="rename-${i}">New name for ${p.name}</label>
<input type="text" id="rename-${i}" name="name" maxlength="64" required value="${p.name}">
<div class="actions"><button type="submit">Rename ${p.name}</button></div>
</form>
<form method="post" action="${o.removeAction}">
<input type="hidden" name="csrf_token" value="${o.add.csrf}">
<input type="hidden" name="id" value="${p.id}">
<div class="actions"><button type="submit">Remove ${p.name}</button></div>
</form>
</li>`,
  );
  return html`<section aria-labelledby="passkeys-heading">
<h2 id="passkeys-heading">Passkeys</h2>
<p>Sign in with your fingerprint, face or device PIN instead of a password. A passkey also counts as the second step of two-step verification.</p>
${o.notice ? html`<p role="status">${o.notice}</p>` : html``}
${errorBlock(o.error)}
${o.passkeys.length ? html`<ul class="passkeys">${items}</ul>` : html`<p>You have no passkeys yet.</p>`}
${ceremonyForm('create', o.add, 'Add a passkey', html`<label for="passkey-name">Name of the new passkey (optional)</label>
<input type="text" id="passkey-name" name="name" maxlength="64" autocomplete="off" placeholder="e.g. Work laptop">`)}
</section>`;
}

/**
 * Enrolment the MFA policy requires before this sign-in can finish: an authenticator app (the
 * sealed secret travels with the form) and/or a passkey, whichever the tenant enables.
 */
export function enrolmentPage(
  o: Base & {
    clientName: string;
    passkey?: Ceremony;
    totp?: { action: string; csrf: string; enrollment: string; secret: string; uri: string };
    error?: string;
  },
): string {
  const totp = o.totp
    ? html`<h2>Authenticator app</h2>
<p>Add an account to your authenticator app with this setup key (time-based):</p>
<code class="secret" id="totp-secret">${o.totp.secret.match(/.{1,4}/g)!.join(' ')}</code>
<p>Or open this <a href="${o.totp.uri}">otpauth link</a> on the device with the app.</p>
<form method="post" action="${o.totp.action}" novalidate>
<input type="hidden" name="csrf_token" value="${o.totp.csrf}">
<input type="hidden" name="enrollment" value="${o.totp.enrollment}">
<label for="code">Authentication code</label>
<input type="text" id="code" name="code" autocomplete="one-time-code" inputmode="numeric" pattern="[0-9 ]*" maxlength="7" spellcheck="false" required>
<div class="actions"><button type="submit" class="primary">Turn on</button></div>
</form>`
    : html``;
  const passkey = o.passkey ? html`<h2>Passkey</h2>
${ceremonyForm('create', o.passkey, 'Add a passkey')}` : html``;
  return layout(
    { title: 'Set up two-step verification', stylesheet: o.stylesheet, script: o.passkey ? o.script : undefined },
    html`<h1>Set up two-step verification</h1>
<p>Your organisation requires a second step at sign-in. Set one up to continue to <strong>${o.clientName}</strong>.</p>
${errorBlock(o.error)}
${passkey}
${totp}`,
  );
}

/** After enrolment at sign-in with an authenticator app: the recovery codes, then on to the application. */
export function enrolledPage(o: { stylesheet: string; codes: string[]; continueHref: string }): string {
  return layout(
    { title: 'Two-step verification is on', stylesheet: o.stylesheet },
    html`<h1>Two-step verification is on</h1>
<p>Save these recovery codes somewhere safe. Each works once, if you lose access to your authenticator app. They will not be shown again.</p>
<ul class="codes" id="recovery-codes">${o.codes.map((c) => html`<li><code>${c}</code></li>`)}</ul>
<p><a href="${o.continueHref}">Continue</a></p>`,
  );
}

/** The two-step page when the tenant offers passkeys only (no authenticator app). */
export function passkeysOnlyPage(o: Base & { section: Html }): string {
  return layout({ title: 'Two-step verification', stylesheet: o.stylesheet, script: o.script }, html`<h1>Two-step verification</h1>
${o.section}`);
}
