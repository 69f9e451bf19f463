/**
 * Passkey parts of the end-user pages: the sign-in button, the second-step choice, the account
 * page's list (rename, remove, add) and the enrolment the MFA policy forces at sign-in. Each form
 * is a plain POST form that the passkey script (passkey-script.ts) fills and submits; pages that
 * include one are served with `script-src 'self'` (pageHeaders(..., { script: true })).
 * Every text comes from the language catalogues (keys `passkey.*`, `mfa.required.*`).
 */
import type { WebauthnCredentialRecord } from '../storage/types.js';
import { pageTime } from './dates.js';
import { Html, html, layout } from './html.js';
import type { PageUi } from './page-ui.js';
import { codeField, errorBlock } from './pages.js';

interface Base {
  ui: PageUi;
  /** Path of the passkey script. */
  script: string;
}

export interface Ceremony {
  /** Where the filled form is posted. */
  action: string;
  /** Where the script fetches the ceremony options. */
  optionsUrl: string;
  csrf: string;
}

function ceremonyForm(ui: PageUi, kind: 'create' | 'get', c: Ceremony, button: string, inner: Html = html``, conditionalField?: string): Html {
  const { t } = ui;
  return html`<form method="post" action="${c.action}" data-passkey="${kind}" data-options="${c.optionsUrl}"${conditionalField ? html` data-conditional="${conditionalField}"` : html``} data-unsupported="${t('passkey.unsupported')}" data-failed="${t('passkey.failed')}">
<input type="hidden" name="csrf_token" value="${c.csrf}">
<input type="hidden" name="credential" value="">
${inner}
<div class="actions"><button type="button" data-passkey-start>${button}</button></div>
<p class="passkey-status" data-passkey-status role="status" aria-live="polite"></p>
</form>`;
}

/**
 * Inside the sign-in form (the page keeps one form, as password managers expect): passwordless
 * sign-in with a discoverable passkey, posted to its own action, and autofill in the e-mail field.
 * The CSRF token is the form's own.
 */
export function passkeySignIn(ui: PageUi, c: Ceremony): Html {
  const { t } = ui;
  return html`<div class="passkey-signin" data-passkey="get" data-options="${c.optionsUrl}" data-action="${c.action}" data-conditional="email" data-unsupported="${t('passkey.unsupported')}" data-failed="${t('passkey.failed')}">
<input type="hidden" name="credential" value="">
<div class="actions"><button type="button" data-passkey-start>${t('passkey.use')}</button></div>
<p class="passkey-status" data-passkey-status role="status" aria-live="polite"></p>
</div>`;
}

/** Second sign-in step of a user with a passkey: the passkey, and the app code if enrolled too. */
export function secondStepPage(o: Base & { clientName: string; passkey: Ceremony; totp?: { action: string; csrf: string; recoveryHref: string }; error?: string }): string {
  const { ui } = o;
  const { t } = ui;
  const totp = o.totp
    ? html`<p class="divider">${t('passkey.or')}</p>
<form method="post" action="${o.totp.action}" novalidate>
<input type="hidden" name="csrf_token" value="${o.totp.csrf}">
${codeField(ui, o.error)}
<div class="actions"><button type="submit" class="primary">${t('mfa.verify')}</button></div>
</form>
<p class="aside"><a href="${o.totp.recoveryHref}">${t('mfa.use_recovery')}</a></p>`
    : html``;
  return layout(
    { title: t('mfa.title'), ui, script: o.script },
    html`<h1>${t('mfa.title')}</h1>
<p>${t.html('passkey.second_step.intro', { client: html`<strong>${o.clientName}</strong>` })}</p>
${errorBlock(o.error)}
${ceremonyForm(ui, 'get', o.passkey, t('passkey.use'))}
${totp}`,
  );
}

/** Id of the rename field of the `index`th passkey of the list (in the order listCredentials gives). */
export const renameFieldId = (index: number) => `rename-${index}`;
/** Id of the name field of the passkey being added. */
export const ADD_NAME_FIELD = 'passkey-name';

/** A text field as drawn after a refused form: its value (the one given, or `current`) and its state attributes. */
export type FieldView = (id: string, current: string) => { value: string; state: Html };
const plainField: FieldView = (_id, current) => ({ value: current, state: html`` });

/** The account page's passkey list with rename and remove, and the button that adds one. */
export function passkeySection(
  ui: PageUi,
  o: {
    passkeys: WebauthnCredentialRecord[];
    add: Ceremony;
    renameAction: string;
    removeAction: string;
    notice?: string;
    /** The message of the section's refused action, as the page draws it (role=alert, its own id). */
    error?: Html;
    /** The name fields after a refused rename or add (the account page: the name given, aria-invalid, aria-describedby, focus). */
    field?: FieldView;
    /** Extra hidden fields of each form (the account page names its actions in a field). */
    hidden?: { add?: Html; rename?: Html; remove?: Html };
  },
): Html {
  const { t } = ui;
  const field = o.field ?? plainField;
  const added = field(ADD_NAME_FIELD, '');
  const items = o.passkeys.map((p, i) => {
    const id = renameFieldId(i);
    const rename = field(id, p.name);
    return html`<li class="passkey">
<p><strong>${p.name}</strong><br>${t('passkey.added_on', { created: pageTime(t, p.created_at), used: p.last_used_at ? pageTime(t, p.last_used_at) : t('passkey.never') })}</p>
<form method="post" action="${o.renameAction}">
<input type="hidden" name="csrf_token" value="${o.add.csrf}">${o.hidden?.rename ?? html``}
<input type="hidden" name="id" value="${p.id}">
<label for="${id}">${t('passkey.rename.label', { name: p.name })}</label>
<input type="text" id="${id}" name="name" maxlength="64" required value="${rename.value}"${rename.state}>
<div class="actions"><button type="submit">${t('passkey.rename.submit', { name: p.name })}</button></div>
</form>
<form method="post" action="${o.removeAction}">
<input type="hidden" name="csrf_token" value="${o.add.csrf}">${o.hidden?.remove ?? html``}
<input type="hidden" name="id" value="${p.id}">
<div class="actions"><button type="submit">${t('passkey.remove.submit', { name: p.name })}</button></div>
</form>
</li>`;
  });
  return html`<section aria-labelledby="passkeys-heading">
<h2 id="passkeys-heading">${t('passkey.section.title')}</h2>
<p>${t('passkey.section.intro')}</p>
${o.notice ? html`<p role="status">${o.notice}</p>` : html``}
${o.error ?? html``}
${o.passkeys.length ? html`<ul class="passkeys">${items}</ul>` : html`<p>${t('passkey.none')}</p>`}
${ceremonyForm(
  ui,
  'create',
  o.add,
  t('passkey.add'),
  html`${o.hidden?.add ?? html``}<label for="${ADD_NAME_FIELD}">${t('passkey.add.name')}</label>
<input type="text" id="${ADD_NAME_FIELD}" name="name" maxlength="64" autocomplete="off" placeholder="${t('passkey.add.placeholder')}"${added.value ? html` value="${added.value}"` : html``}${added.state}>`,
)}
</section>`;
}

/** The two-step page when the tenant offers passkeys only (no authenticator app). */
export function passkeysOnlyPage(o: Base & { section: Html }): string {
  return layout({ title: o.ui.t('mfa.title'), ui: o.ui, script: o.script }, html`<h1>${o.ui.t('mfa.title')}</h1>
${o.section}`);
}

/**
 * Enrolment the MFA policy requires before this sign-in can finish: an authenticator app (the
 * sealed secret travels with the form) and/or a passkey, whichever the tenant enables.
 */
export function enrolmentPage(
  o: Base & {
    clientName: string;
    passkey?: Ceremony;
    totp?: { action: string; csrf: string; enrollment: string; secret: string; uri: string; qrSvg?: Html };
    error?: string;
  },
): string {
  const { ui } = o;
  const { t } = ui;
  const totp = o.totp
    ? html`<h2>${t('mfa.required.app')}</h2>
${o.totp.qrSvg ? html`<div class="qr" role="img" aria-label="${t('account.mfa.qr')}">${o.totp.qrSvg}</div>` : html``}
<p>${t('mfa.enroll.key_intro')}</p>
<code class="secret" id="totp-secret">${o.totp.secret.match(/.{1,4}/g)!.join(' ')}</code>
<p>${t.html('mfa.enroll.link_intro', { link: html`<a href="${o.totp.uri}">${t('mfa.enroll.link')}</a>` })}</p>
<code class="uri" id="totp-uri">${o.totp.uri}</code>
<form method="post" action="${o.totp.action}" novalidate>
<input type="hidden" name="csrf_token" value="${o.totp.csrf}">
<input type="hidden" name="enrollment" value="${o.totp.enrollment}">
${codeField(ui, o.error)}
<div class="actions"><button type="submit" class="primary">${t('mfa.enroll.submit')}</button></div>
</form>`
    : html``;
  const passkey = o.passkey
    ? html`<h2>${t('mfa.required.passkey')}</h2>
${ceremonyForm(ui, 'create', o.passkey, t('passkey.add'))}`
    : html``;
  return layout(
    { title: t('mfa.enroll.title'), ui, script: o.passkey ? o.script : undefined },
    html`<h1>${t('mfa.enroll.title')}</h1>
<p>${t.html('mfa.required.intro', { client: html`<strong>${o.clientName}</strong>` })}</p>
${errorBlock(o.error)}
${passkey}
${totp}`,
  );
}

/** After enrolment at sign-in with an authenticator app: the recovery codes, then on to the application. */
export function enrolledPage(o: { ui: PageUi; codes: string[]; continueHref: string }): string {
  const { t } = o.ui;
  return layout(
    { title: t('mfa.codes.title'), ui: o.ui },
    html`<h1>${t('mfa.codes.title')}</h1>
<p>${t('mfa.codes.intro')}</p>
<ul class="codes" id="recovery-codes">${o.codes.map((c) => html`<li><code>${c}</code></li>`)}</ul>
<p><a href="${o.continueHref}">${t('mfa.required.continue')}</a></p>`,
  );
}
