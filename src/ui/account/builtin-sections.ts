/**
 * The built-in sections of the account page: profile, e-mail, password, two-step verification
 * (TOTP, moved here from {oidc}/account/mfa), sessions. Each password-confirmed action feeds the
 * brute-force guard like a sign-in does.
 *
 * Over 300 lines, on purpose: the six sections register together in their page order, each a
 * render and its actions; a file per section would split that order over six files.
 */
import { isSystemClientId } from '../../clients/system-clients.js';
import { disableTotp, enableTotp, checkTotp, regenerateRecoveryCodes } from '../../users/mfa.js';
import { usableMethods } from '../../users/passkeys.js';
import { generateTotpSecret, otpauthUri } from '../../users/totp.js';
import { findSessions, getSession, revokeAccount, revokeSession, sessionTtl } from '../../sessions/store.js';
import { updateUser } from '../../users/operations.js';
import { unmetPasswordRules } from '../../users/password-policy.js';
import { PROFILE_MAX, overProfileLimit, validEmail, type UserUpdateInput } from '../../users/schema.js';
import type { MessageKey } from '../i18n/index.js';
import { clientDisplayName } from '../client-name.js';
import { pageTime } from '../dates.js';
import { Html, html } from '../escape.js';
import { qrSvg } from '../qr.js';
import { verifyEmailMail } from '../mail-templates.js';
import { mfaEnrollPage, recoveryCodesPage } from '../pages.js';
import { ALERT_KINDS, alertChoices, securityAlert } from './alerts.js';
import { VERIFY_TTL_SECONDS, afterAnswer, issueToken, mailAvailable, refusedDomain, sendMail, signupSettings } from './host.js';
import { MAILS_PER_ADDRESS } from './password-reset.js';
import { passwordRulesMessage } from './password-messages.js';
import { PROFILE_LABELS, profileError, profileErrorField, type ProfileFormField } from './profile-messages.js';
import { fieldState, givenValue, givenValueAttr, sectionError } from './form-errors.js';
import { htmlPage } from './respond.js';
import { registerAccountSection, type AccountVisit, type ActionOutcome, type ActionRefusal } from './sections.js';
import { ACCOUNT_PATH, isThisSession, recentSignIn } from './session.js';

const ENROLLMENT_SECONDS = 600;

const form = (v: AccountVisit, action: string, body: Html, button: string, primary = true) =>
  html`<form method="post" action="${ACCOUNT_PATH}" novalidate>
<input type="hidden" name="csrf_token" value="${v.csrf}">
<input type="hidden" name="action" value="${action}">
${body}
<div class="actions"><button type="submit"${primary ? html` class="primary"` : html``}>${button}</button></div>
</form>`;

/** A section of the page, with the message of its action that failed, if one did (form-errors.ts). */
const section = (v: AccountVisit, id: string, heading: string, body: Html) => html`<section aria-labelledby="${id}-heading"><h2 id="${id}-heading">${heading}</h2>
${sectionError(v, id)}
${body}
</section>`;

const who = (v: AccountVisit) => ({ username: v.session.user.email, user_id: v.session.user.id, ip_address: v.req.ip, user_agent: v.req.headers['user-agent'] ?? null });

/**
 * The refusal of a form that asks for the current password (`field`: the input's id), undefined
 * when the password is right. It is checked on the worker pool, and a wrong one counts as a failed
 * sign-in; an empty field is no guess, so it is only asked for (400), neither audited nor counted.
 */
async function passwordRefusal(v: AccountVisit, given: string, step: string, field: string): Promise<ActionRefusal | undefined> {
  const { host, session } = v;
  const user = session.user;
  if (!given) return { error: v.ui.t('account.password.missing'), status: 400, fields: [field] };
  const ok = given.length <= 1024 && (await host.ctx.passwords.verify(user.password_hash ?? (await host.guard.dummyHash()), given));
  if (ok && user.password_hash) return undefined;
  await host.ctx.audit.record(host.tenant, { type: 'failed_login', status: 'failed', ...who(v), details: { reason: 'wrong_password', step } });
  await host.guard.recordFailure(host.tenant, user, v.req.ip, v.req.headers['user-agent'], v.ui.t.lang);
  return { error: v.ui.t('account.password.wrong'), status: 401, fields: [field] };
}

/**
 * The proof asked before the account's address changes (whoever holds the address can reset the
 * password): the current password, as for a password change or turning two-step verification off;
 * an account without a password (social or passkey sign-in only) needs a recent sign-in instead, as
 * passkeys do. A stolen session alone is not enough to take the account over.
 */
async function ownerProven(v: AccountVisit, f: URLSearchParams, step: string): Promise<ActionRefusal | undefined> {
  if (!v.session.user.password_hash) return recentSignIn(v.session) ? undefined : { error: v.ui.t('account.recent.message'), status: 403 };
  return passwordRefusal(v, f.get('current_password') ?? '', step, 'email-password');
}

function text(formData: URLSearchParams, name: string, max: number): string {
  return (formData.get(name) ?? '').trim().slice(0, max);
}

/** The profile form's fields in page order, with their labels (limits: the users domain's PROFILE_MAX). */
const PROFILE_FIELDS = [
  { name: 'given_name', label: PROFILE_LABELS.given_name, autocomplete: 'given-name' },
  { name: 'family_name', label: PROFILE_LABELS.family_name, autocomplete: 'family-name' },
  { name: 'name', label: PROFILE_LABELS.name, autocomplete: 'name' },
  { name: 'username', label: PROFILE_LABELS.username, autocomplete: 'nickname' },
] as const satisfies ReadonlyArray<{ name: ProfileFormField; label: MessageKey; autocomplete: string }>;

/** The profile form's values as given, by field id: a refused save puts every one back (nothing was saved). */
const profileGiven = (f: URLSearchParams) => Object.fromEntries(PROFILE_FIELDS.map(({ name }) => [`profile-${name}`, f.get(name) ?? '']));

registerAccountSection({
  id: 'profile',
  render(v) {
    const { t } = v.ui;
    const u = v.session.user;
    const fields = PROFILE_FIELDS.map(
      ({ name, label, autocomplete }) => html`<label for="profile-${name}">${t(label)}</label>
<input type="text" id="profile-${name}" name="${name}" autocomplete="${autocomplete}" maxlength="${PROFILE_MAX[name]}" value="${givenValue(v, 'profile', `profile-${name}`) ?? u[name] ?? ''}"${fieldState(v, 'profile', `profile-${name}`)}>`,
    );
    return section(v, 'profile', t('account.profile.heading'), form(v, 'profile.save', html`${fields}`, t('account.profile.save')));
  },
  actions: {
    async save(v, f) {
      const input: Record<string, string | null> = {};
      // Refused, not cut short: a value over the limit is the user's mistake to see (the API answers 422).
      for (const { name, label } of PROFILE_FIELDS) {
        const value = (f.get(name) ?? '').trim();
        if (overProfileLimit(name, value)) return { error: v.ui.t('account.profile.too_long', { field: v.ui.t(label), max: PROFILE_MAX[name] }), fields: [`profile-${name}`], values: profileGiven(f) };
        input[name] = value || null;
      }
      try {
        const updated = await updateUser({ ctx: v.host.ctx, tenant: v.host.tenant, config: v.host.config, by: who(v) }, v.session.user.id, input as UserUpdateInput, 'patch');
        v.session.user = updated;
        return { notice: v.ui.t('account.saved') };
      } catch (err) {
        // In the page's language: never the Management API's English words (profile-messages.ts).
        const error = profileError(v.ui.t, err, input);
        if (error === undefined) throw err;
        const field = profileErrorField(err);
        return { error, fields: field ? [`profile-${field}`] : [], values: profileGiven(f) };
      }
    },
  },
});

registerAccountSection({
  id: 'email',
  render(v) {
    const { t } = v.ui;
    const u = v.session.user;
    const status = u.email_verified ? t('account.email.verified') : t('account.email.unverified');
    const current = html`<p>${t.html('account.email.current', { email: html`<strong>${u.email ?? ''}</strong>`, status })}</p>`;
    if (!mailAvailable(v.host)) return section(v, 'email', t('account.email.heading'), current);
    return section(
      v,
      'email',
      t('account.email.heading'),
      html`${current}
${form(
  v,
  'email.change',
  html`<label for="new-email">${t('account.email.new')}</label>
<input type="email" id="new-email" name="email" autocomplete="email" maxlength="320" required${givenValueAttr(v, 'email', 'new-email')}${fieldState(v, 'email', 'new-email')}>
${u.password_hash ? html`<label for="email-password">${t('account.email.password')}</label>
<input type="password" id="email-password" name="current_password" autocomplete="current-password" required${fieldState(v, 'email', 'email-password')}>` : html``}`,
  t('account.email.submit'),
  false,
)}`,
    );
  },
  actions: {
    async change(v, f) {
      const { t } = v.ui;
      const { host } = v;
      const user = v.session.user;
      const email = text(f, 'email', 320);
      const onAddress = ['new-email'];
      // A refusal puts the address given back in its field; the password is never given back.
      const values = { 'new-email': f.get('email') ?? '' };
      if (!validEmail(email)) return { error: t('signup.invalid_email'), fields: onAddress, values };
      if (email.toLowerCase() === user.email?.toLowerCase()) return { error: t('account.email.same'), fields: onAddress, values };
      if (!mailAvailable(host)) return { error: t('page.not_found.message') };
      const refused = await ownerProven(v, f, 'email_change');
      if (refused) return { ...refused, values };
      // The tenant's list of address domains holds for a changed address as for a new account.
      const domain = refusedDomain(signupSettings(host), email);
      if (domain) return { error: t('signup.domain_not_allowed', { domain }), fields: onAddress, values };
      // Per target address, as the password reset's (storage compares addresses lower-cased). Over
      // the limit the answer is the same: a refusal would tell that someone else sent mail there.
      const allowed = await v.limiter.allow(`${host.tenant}:email-change-addr:${email.toLowerCase()}`, MAILS_PER_ADDRESS.limit, MAILS_PER_ADDRESS.windowSeconds);
      // Whose address it is, and the token and mail that follow, are looked at after the answer in
      // every case: the answer takes the same time and says the same whether the address is free or
      // someone else's.
      afterAnswer(host, 'email_change', () => requestEmailChange(v, email, allowed));
      return { notice: t('account.email.sent', { email }) };
    },
  },
});

/** The confirmation mail to a new address when it is free and within its limit; audited in every case. */
async function requestEmailChange(v: AccountVisit, email: string, allowed: boolean): Promise<void> {
  const { host } = v;
  const user = v.session.user;
  const taken = Boolean(await host.ctx.storage.users.findByEmail(host.tenant, email));
  const reason = taken ? 'email_taken' : allowed ? undefined : 'address_limit';
  if (!reason) {
    const raw = await issueToken(host, 'verify_email', user, email, VERIFY_TTL_SECONDS);
    const link = `${host.origin.origin}/account/verify?token=${raw}`;
    sendMail(host, 'verify_email', user, email, v.ui.t.lang, (a) => verifyEmailMail(a, link, VERIFY_TTL_SECONDS));
  }
  await host.ctx.audit.record(host.tenant, {
    type: 'email_change_requested',
    status: reason === 'address_limit' ? 'warning' : 'info',
    ...who(v),
    details: { user_id: user.id, mail_sent: !reason, ...(reason ? { reason } : {}) },
  });
}

registerAccountSection({
  id: 'password',
  render(v) {
    const { t } = v.ui;
    const min = v.host.config.security.password_policy.min_length;
    return section(
      v,
      'password',
      t('account.password.heading'),
      form(
        v,
        'password.change',
        html`<input type="hidden" name="username" autocomplete="username" value="${v.session.user.email ?? ''}">
<label for="current-password">${t('account.password.current')}</label>
<input type="password" id="current-password" name="current_password" autocomplete="current-password" required${fieldState(v, 'password', 'current-password')}>
<label for="new-password">${t('password.new')}</label>
<input type="password" id="new-password" name="new_password" autocomplete="new-password" required minlength="${min}" maxlength="128"${fieldState(v, 'password', 'new-password', 'new-password-hint')}>
<p class="hint" id="new-password-hint">${t('password.hint', { min })}</p>`,
        t('account.password.submit'),
      ),
    );
  },
  actions: {
    async change(v, f) {
      const { t } = v.ui;
      const { host } = v;
      const user = v.session.user;
      const next = f.get('new_password') ?? '';
      const refused = await passwordRefusal(v, f.get('current_password') ?? '', 'password_change', 'current-password');
      if (refused) return refused;
      const policy = host.config.security.password_policy;
      const unmet = unmetPasswordRules(next, policy, user.email);
      if (unmet.length) return { error: passwordRulesMessage(t, unmet, policy), fields: ['new-password'] };
      const hash = await host.ctx.passwords.hash(next);
      await host.ctx.storage.users.update(host.tenant, user.id, { password_hash: hash });
      // Links mailed before the change (a reset, a pending address change) no longer act for the account.
      const now = new Date().toISOString();
      await host.ctx.storage.accountTokens.expireForUser(host.tenant, 'password_reset', user.id, now);
      await host.ctx.storage.accountTokens.expireForUser(host.tenant, 'verify_email', user.id, now);
      // Everything the old password opened ends, as after a reset (other devices' sessions, and
      // grants that outlived their session: offline refresh tokens); this device stays signed in.
      await revokeAccount(host.ctx, host.tenant, user.id, sessionTtl(host.config), (s) => isThisSession(v.session, s.jti));
      await host.ctx.audit.record(host.tenant, { type: 'password_changed', status: 'success', ...who(v), details: { user_id: user.id } });
      securityAlert(host, user, 'password_changed', v.ui.t.lang);
      return { notice: t('account.password.changed') };
    },
  },
});

const enrollmentAad = (v: AccountVisit) => `account-mfa-enroll:${v.host.tenant}:${v.session.user.id}:${v.session.sessionUid}`;

async function enrollView(v: AccountVisit, secret: string, status: number, error?: string): Promise<ActionOutcome> {
  const enrollment = v.host.ctx.sealer.seal(JSON.stringify({ secret, exp: Date.now() + ENROLLMENT_SECONDS * 1000 }), enrollmentAad(v));
  const uri = otpauthUri(secret, v.host.origin.host, v.session.user.email ?? v.session.user.id);
  const hidden = html`<input type="hidden" name="action" value="mfa.confirm">`;
  return {
    page: htmlPage(status, mfaEnrollPage({ ui: v.ui, action: ACCOUNT_PATH, csrf: v.csrf, enrollment, secret, uri, qrSvg: await qrSvg(uri), error, hidden })),
  };
}

function pendingSecret(v: AccountVisit, sealed: string): string | undefined {
  try {
    const parsed = JSON.parse(v.host.ctx.sealer.unseal(sealed, enrollmentAad(v))) as { secret?: unknown; exp?: unknown };
    return typeof parsed.secret === 'string' && typeof parsed.exp === 'number' && parsed.exp > Date.now() ? parsed.secret : undefined;
  } catch {
    return undefined;
  }
}

function codesPage(v: AccountVisit, codes: string[]): ActionOutcome {
  return { page: htmlPage(200, recoveryCodesPage({ ui: v.ui, codes, links: [html`<p><a href="${ACCOUNT_PATH}">${v.ui.t('account.back')}</a></p>`] })) };
}

/** TOTP is one of the user's methods (passkeys, issue 14, are another and have their own section). */
const hasTotp = (u: { mfa_methods: string[] }) => u.mfa_methods.includes('totp');
/** Authenticator apps are offered for enrolment only while the tenant accepts them at sign-in. */
const totpOffered = (v: AccountVisit) => v.host.config.security.mfa.totp_enabled;
/**
 * Under required MFA, TOTP stays while it is the user's only usable second factor: turning it off
 * would not mean "password only" but forced enrolment at the next sign-in. With a usable passkey
 * besides, it may go. Regenerating recovery codes stays allowed either way.
 */
const mustKeepTotp = (v: AccountVisit) => {
  const { mfa } = v.host.config.security;
  return mfa.required && !usableMethods(v.session.user, mfa).some((m) => m !== 'totp');
};

registerAccountSection({
  id: 'mfa',
  render(v) {
    const { t } = v.ui;
    const u = v.session.user;
    if (!hasTotp(u)) {
      if (!totpOffered(v)) return undefined;
      return section(v, 'mfa', t('account.mfa.heading'), html`<p>${t('account.mfa.off')}</p>
${form(v, 'mfa.setup', html``, t('account.mfa.setup'), false)}`);
    }
    const keep = mustKeepTotp(v);
    // Enrolled before the tenant turned authenticator apps off: kept, but not asked at sign-in.
    return section(
      v,
      'mfa',
      t('account.mfa.heading'),
      html`<p>${t(totpOffered(v) ? 'account.mfa.on' : 'account.mfa.unused')}</p>
<form method="post" action="${ACCOUNT_PATH}" novalidate>
<input type="hidden" name="csrf_token" value="${v.csrf}">
<label for="mfa-password">${t('account.mfa.confirm_password')}</label>
<input type="password" id="mfa-password" name="password" autocomplete="current-password" required${fieldState(v, 'mfa', 'mfa-password')}>
<div class="actions">
<button type="submit" name="action" value="mfa.regenerate">${t('account.mfa.regenerate')}</button>
${keep ? html`` : html`<button type="submit" name="action" value="mfa.disable">${t('account.mfa.disable')}</button>`}
</div>
</form>
${keep ? html`<p>${t('account.mfa.required')}</p>` : html``}`,
    );
  },
  actions: {
    async setup(v) {
      if (!totpOffered(v)) return { error: v.ui.t('mfa.totp_unavailable'), status: 404 };
      if (hasTotp(v.session.user)) return { error: v.ui.t('mfa.enroll.already_on'), status: 409 };
      // As for a passkey: a stolen older session may not plant a second factor of its own.
      if (!recentSignIn(v.session)) return { error: v.ui.t('account.recent.message'), status: 403 };
      return enrollView(v, generateTotpSecret(), 200);
    },
    async confirm(v, f) {
      const { t } = v.ui;
      const { host } = v;
      const user = v.session.user;
      // Also a setup page opened before the tenant turned authenticator apps off.
      if (!totpOffered(v)) return { error: t('mfa.totp_unavailable'), status: 404 };
      if (hasTotp(user)) return { error: t('mfa.enroll.already_on'), status: 409 };
      // Checked again: a set-up page opened in time is not a licence for later.
      if (!recentSignIn(v.session)) return { error: t('account.recent.message'), status: 403 };
      const secret = pendingSecret(v, f.get('enrollment') ?? '');
      if (!secret) return enrollView(v, generateTotpSecret(), 400, t('mfa.enroll.expired'));
      const code = (f.get('code') ?? '').trim();
      if (!code) return enrollView(v, secret, 400, t('mfa.enter_code'));
      const check = await checkTotp(host.ctx, host.tenant, user.id, secret, code);
      if (check !== 'ok') return enrollView(v, secret, 400, t(check === 'replayed' ? 'mfa.enroll.code_used' : 'mfa.enroll.code_invalid'));
      const codes = await enableTotp(host.ctx, host.tenant, user.id, secret, { type: 'mfa_enabled', status: 'success', ...who(v), details: { user_id: user.id, method: 'totp', methods: ['totp'] } });
      securityAlert(host, user, 'mfa_changed', v.ui.t.lang);
      return codesPage(v, codes);
    },
    async regenerate(v, f) {
      const { host } = v;
      const user = v.session.user;
      if (!hasTotp(user)) return { error: v.ui.t('mfa.off.already') };
      // New codes replace the old ones: within a recent sign-in (as setting up the app) or with the
      // current password. A stolen older session can do neither.
      if (!recentSignIn(v.session)) {
        const refused = await passwordRefusal(v, f.get('password') ?? '', 'mfa_recovery_codes', 'mfa-password');
        if (refused) return refused;
      }
      const codes = await regenerateRecoveryCodes(host.ctx, host.tenant, user.id, { type: 'mfa_recovery_codes_regenerated', status: 'success', ...who(v), details: { user_id: user.id } });
      securityAlert(host, user, 'mfa_changed', v.ui.t.lang);
      return codesPage(v, codes);
    },
    async disable(v, f) {
      const { host } = v;
      const user = v.session.user;
      if (!hasTotp(user)) return { error: v.ui.t('mfa.off.already') };
      if (mustKeepTotp(v)) return { error: v.ui.t('account.mfa.required'), status: 403 };
      const refused = await passwordRefusal(v, f.get('password') ?? '', 'mfa_disable', 'mfa-password');
      if (refused) return refused;
      await disableTotp(host.ctx, host.tenant, user.id, { type: 'mfa_disabled', status: 'success', ...who(v), details: { user_id: user.id, method: 'totp', methods: user.mfa_methods, by: 'user' } });
      securityAlert(host, user, 'mfa_changed', v.ui.t.lang);
      v.session.user = (await host.ctx.storage.users.get(host.tenant, user.id)) ?? user;
      // "Only your password" would be false while a passkey still serves as the second step.
      const left = usableMethods(v.session.user, host.config.security.mfa);
      return { notice: v.ui.t(left.length ? 'account.mfa.disabled_other' : 'account.mfa.disabled') };
    },
  },
});

/**
 * What a user recognises in a session: the applications' names (the built-in clients' in the
 * page's language), not their client ids. A client deleted since falls back to its id.
 */
async function applicationNames(v: AccountVisit, ids: string[]): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  for (const id of new Set(ids)) {
    // The built-in clients are never stored: named from the catalogue without a read.
    const stored = isSystemClientId(id) ? undefined : await v.host.ctx.storage.clients.get(v.host.tenant, id);
    names.set(id, clientDisplayName(v.ui.t, id, stored?.metadata.client_name));
  }
  return names;
}

registerAccountSection({
  id: 'sessions',
  async render(v) {
    const { t } = v.ui;
    const { host } = v;
    const list = (await findSessions(host.ctx.storage.oidc, host.tenant, { username: v.session.user.id, active: true }, sessionTtl(host.config))).filter((s) => s.active);
    const names = await applicationNames(v, list.flatMap((s) => s.client_ids));
    const when = (iso: string | null) => (iso ? pageTime(t, iso) : '?');
    const items = list.map(
      (s) => html`<li>
<p>${isThisSession(v.session, s.jti) ? html`<strong>${t('account.sessions.this')}</strong> ` : html``}${t('account.sessions.started', { time: when(s.created_at), last: when(s.last_active_at) })}</p>
${s.client_ids.length ? html`<p>${t('account.sessions.apps', { apps: s.client_ids.map((id) => names.get(id) ?? id).join(', ') })}</p>` : html``}
<form method="post" action="${ACCOUNT_PATH}">
<input type="hidden" name="csrf_token" value="${v.csrf}">
<input type="hidden" name="action" value="sessions.end">
<input type="hidden" name="session" value="${s.jti}">
<div class="actions"><button type="submit">${t('account.sessions.end')}</button></div>
</form>
</li>`,
    );
    return section(v, 'sessions', t('account.sessions.heading'), html`<ul class="sessions">${items}</ul>`);
  },
  actions: {
    async end(v, f) {
      const { host } = v;
      const jti = (f.get('session') ?? '').slice(0, 128);
      const target = jti ? await getSession(host.ctx.storage.oidc, host.tenant, jti, sessionTtl(host.config)) : undefined;
      // Another user's session id is treated exactly like an unknown one.
      if (!target || target.account_id !== v.session.user.id) return { error: v.ui.t('page.not_found.message'), status: 404 };
      await revokeSession(host.ctx, host.tenant, target);
      await host.ctx.audit.record(host.tenant, { type: 'session.revoked', status: 'success', ...who(v), details: { user_id: v.session.user.id, session_id: target.jti, by: 'user' } });
      if (isThisSession(v.session, target.jti)) return { page: { status: 303, headers: { location: ACCOUNT_PATH, 'cache-control': 'no-store' } } };
      return { notice: v.ui.t('account.sessions.ended') };
    },
  },
});

registerAccountSection({
  id: 'alerts',
  async render(v) {
    const { t } = v.ui;
    if (!mailAvailable(v.host)) return undefined;
    const choices = await alertChoices(v.host, v.session.user.id);
    const boxes = ALERT_KINDS.map(
      (k) => html`<div class="check"><input type="checkbox" id="alert-${k}" name="${k}" value="on"${choices[k] ? html` checked` : html``}>
<label for="alert-${k}">${t(`account.alerts.${k}`)}</label></div>`,
    );
    return section(v, 'alerts', t('account.alerts.heading'), form(v, 'alerts.save', html`<fieldset><legend class="visually-hidden">${t('account.alerts.heading')}</legend>${boxes}</fieldset>`, t('account.alerts.save'), false));
  },
  actions: {
    async save(v, f) {
      const { host } = v;
      const alerts = Object.fromEntries(ALERT_KINDS.map((k) => [k, f.get(k) === 'on']));
      const current = (await host.ctx.storage.userPreferences.get(host.tenant, v.session.user.id)) ?? {};
      await host.ctx.storage.userPreferences.put(host.tenant, v.session.user.id, { ...current, alerts }, new Date().toISOString());
      await host.ctx.audit.record(host.tenant, { type: 'user.preferences_updated', status: 'success', ...who(v), details: { user_id: v.session.user.id, alerts } });
      return { notice: v.ui.t('account.saved') };
    },
  },
});
