/**
 * Passkeys on the account page (issue 14 moved here from {oidc}/account/mfa): the list with rename
 * and remove, and the button that registers one. The ceremony script (passkey-script.ts) fetches
 * creation options from POST /account/passkeys/options with the page's CSRF token, then posts the
 * credential back to /account as the action `passkeys.add`.
 * Same rules as before: the challenge is bound to this sign-in session and the user; adding and
 * removing need a recent sign-in (recentSignIn, session.ts) (a stolen older session cannot plant a
 * passkey of its own, nor strip the owner's); every write carries the session-bound CSRF token.
 */
import { timingSafeEqual } from 'node:crypto';
import type { HttpRequest, HttpResponse } from '../../http/types.js';
import { cleanName, completeRegistration, registrationOptions, removePasskey, usableMethods } from '../../users/passkeys.js';
import { html } from '../escape.js';
import type { MessageKey } from '../i18n/index.js';
import { ADD_NAME_FIELD, passkeySection, renameFieldId } from '../passkey-pages.js';
import { csrfOf } from './session-csrf.js';
import { securityAlert } from './alerts.js';
import type { AccountHost } from './host.js';
import { readForm } from './password-reset.js';
import { fieldState, givenValue, sectionError } from './form-errors.js';
import { seeOther } from './respond.js';
import { registerAccountSection, type AccountVisit, type ActionOutcome, type ActionRefusal } from './sections.js';
import { ACCOUNT_PATH, currentSession, recentSignIn, type AccountSession } from './session.js';

export const PASSKEY_OPTIONS_PATH = '/account/passkeys/options';

const NOTICES: Record<string, MessageKey> = {
  added: 'passkey.notice.added',
  renamed: 'passkey.notice.renamed',
  removed: 'passkey.notice.removed',
};

const enabled = (host: AccountHost) => host.config.security.mfa.webauthn_enabled;
const bindingOf = (host: AccountHost, s: AccountSession) => `account-register:${host.tenant}:${s.sessionUid}:${s.user.id}`;
const who = (v: AccountVisit) => ({ username: v.session.user.email, user_id: v.session.user.id, ip_address: v.req.ip, user_agent: v.req.headers['user-agent'] ?? null });
/** After a change: back to the page by GET (a reload does not repeat the action), with its notice. */
const done = (what: keyof typeof NOTICES): ActionOutcome => ({ page: seeOther(`${ACCOUNT_PATH}?passkey=${what}`) });
const field = (action: string) => html`<input type="hidden" name="action" value="${action}">`;
/** A refused add: the name typed for the new passkey goes back in its field (the refusal is not about it). */
const addRefused = (f: URLSearchParams, error: string, status?: number): ActionRefusal => ({ error, ...(status ? { status } : {}), values: { [ADD_NAME_FIELD]: f.get('name') ?? '' } });

registerAccountSection(
  {
    id: 'passkeys',
    async render(v) {
      const { host, ui } = v;
      if (!enabled(host)) return undefined;
      const shown = v.req.method === 'GET' ? new URLSearchParams(v.req.rawQuery).get('passkey') ?? '' : '';
      return passkeySection(ui, {
        passkeys: await host.ctx.storage.webauthn.listCredentials(host.tenant, v.session.user.id),
        add: { action: ACCOUNT_PATH, optionsUrl: PASSKEY_OPTIONS_PATH, csrf: v.csrf },
        renameAction: ACCOUNT_PATH,
        removeAction: ACCOUNT_PATH,
        notice: Object.hasOwn(NOTICES, shown) ? ui.t(NOTICES[shown]!) : undefined,
        error: sectionError(v, 'passkeys'),
        field: (id, current) => ({ value: givenValue(v, 'passkeys', id) ?? current, state: fieldState(v, 'passkeys', id) }),
        hidden: { add: field('passkeys.add'), rename: field('passkeys.rename'), remove: field('passkeys.remove') },
      });
    },
    script: (v) => (enabled(v.host) ? v.host.passkeyScript : undefined),
    actions: {
      async add(v, f) {
        const { host, session } = v;
        if (!enabled(host)) return { error: v.ui.t('passkey.unavailable'), status: 404 };
        if (!recentSignIn(session)) return addRefused(f, v.ui.t('passkey.recent.message'), 403);
        // The passkey and its mfa_enabled entry are one transaction.
        const outcome = await completeRegistration(host.ctx, host.tenant, host.relyingParty, session.user, bindingOf(host, session), f.get('credential') ?? '', f.get('name') ?? '', (c) => ({
          type: 'mfa_enabled',
          status: 'success',
          ...who(v),
          details: { user_id: session.user.id, method: 'webauthn', credential_id: c.id, name: c.name },
        }));
        if (!outcome.ok) {
          await host.ctx.audit.record(host.tenant, { type: 'mfa_enrollment_failed', status: 'failed', ...who(v), details: { user_id: session.user.id, method: 'webauthn', reason: outcome.reason } });
          const key: MessageKey = outcome.reason === 'duplicate' ? 'passkey.duplicate' : outcome.reason === 'expired' ? 'passkey.expired' : 'passkey.invalid';
          return addRefused(f, v.ui.t(key));
        }
        // A second step added or removed is told to the owner, like the authenticator app's set-up.
        securityAlert(host, session.user, 'mfa_changed', v.ui.t.lang);
        return done('added');
      },
      async rename(v, f) {
        const { host } = v;
        if (!enabled(host)) return { error: v.ui.t('passkey.unavailable'), status: 404 };
        const id = (f.get('id') ?? '').slice(0, 1024);
        const given = f.get('name') ?? '';
        const name = cleanName(given);
        // Scoped to the signed-in user: another user's passkey id is "not found", like an unknown
        // one, whatever the name; it names no field (the page lists only this user's passkeys).
        const notFound: ActionRefusal = { error: v.ui.t('passkey.not_found.message'), status: 404 };
        if (!name) {
          // The message goes on the renamed passkey's own field, holding what was typed; the
          // page draws the list in the same order (listCredentials: by creation, then id).
          const at = (await host.ctx.storage.webauthn.listCredentials(host.tenant, v.session.user.id)).findIndex((p) => p.id === id);
          if (at < 0) return notFound;
          const renamed = renameFieldId(at);
          return { error: v.ui.t('passkey.name_missing'), fields: [renamed], values: { [renamed]: given } };
        }
        if (!(await host.ctx.storage.webauthn.renameCredential(host.tenant, v.session.user.id, id, name))) return notFound;
        return done('renamed');
      },
      async remove(v, f) {
        const { host, session } = v;
        if (!enabled(host)) return { error: v.ui.t('passkey.unavailable'), status: 404 };
        if (!recentSignIn(session)) return { error: v.ui.t('passkey.recent.message'), status: 403 };
        const id = (f.get('id') ?? '').slice(0, 1024);
        if (await lastRequiredFactor(v, id)) return { error: v.ui.t('account.mfa.required'), status: 403 };
        if (!(await removePasskey(host.ctx, host.tenant, session.user.id, id))) return { error: v.ui.t('passkey.not_found.message'), status: 404 };
        await host.ctx.audit.record(host.tenant, { type: 'mfa_disabled', status: 'success', ...who(v), details: { user_id: session.user.id, method: 'webauthn', credential_id: id, by: 'user' } });
        securityAlert(host, session.user, 'mfa_changed', v.ui.t.lang);
        return done('removed');
      },
    },
  },
  'sessions',
);

/**
 * While the MFA policy requires a second factor, the user's last usable one stays, as the
 * authenticator app does (builtin-sections.ts mustKeepTotp): the last passkey of a user without a
 * usable authenticator app cannot be removed (nor, by turning the app off first, the pair).
 */
async function lastRequiredFactor(v: AccountVisit, id: string): Promise<boolean> {
  const { host, session } = v;
  const { mfa } = host.config.security;
  if (!mfa.required || usableMethods(session.user, mfa).includes('totp')) return false;
  const passkeys = await host.ctx.storage.webauthn.listCredentials(host.tenant, session.user.id);
  return passkeys.length === 1 && passkeys[0]!.id === id;
}

function json(status: number, body: unknown): HttpResponse {
  return { status, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' }, body: JSON.stringify(body) };
}

/** POST /account/passkeys/options: creation options (JSON) for the signed-in user, challenge bound to the session. */
export async function handlePasskeyOptions(host: AccountHost, req: HttpRequest): Promise<HttpResponse> {
  if (req.method !== 'POST') return { status: 405, headers: { allow: 'POST', 'cache-control': 'no-store' } };
  if (!enabled(host)) return json(404, { error: 'passkeys_disabled' });
  const session = await currentSession(host, req);
  if (!session) return json(401, { error: 'login_required' });
  const form = readForm(req);
  const given = Buffer.from(form?.get('csrf_token') ?? '');
  const expected = Buffer.from(csrfOf(host, session.sessionUid));
  if (!form || given.length !== expected.length || !timingSafeEqual(given, expected)) return json(403, { error: 'invalid_csrf' });
  if (!(await host.guard.allowIp(host.tenant, req.ip))) return json(429, { error: 'rate_limited' });
  if (!recentSignIn(session)) return json(403, { error: 'login_too_old' });
  return json(200, await registrationOptions(host.ctx, host.tenant, host.relyingParty, session.user, bindingOf(host, session)));
}
