/**
 * A signed-in user's passkeys, managed on the two-step verification page ({oidc}/account/mfa,
 * until the account page takes them over):
 *  - POST /account/passkeys/options  creation options (JSON); the challenge is bound to the
 *                                    oidc-provider session and the user;
 *  - POST /account/passkeys          the filled form: the passkey is checked and stored;
 *  - POST /account/passkeys/rename   and /remove: one of the user's own passkeys.
 * Every POST carries the session-bound CSRF token of the page. Adding and removing a passkey
 * changes how the account can be signed into, so both need a sign-in within RECENT_LOGIN_SECONDS
 * (a stolen but older session cannot plant a passkey of its own).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { withNodeObjects } from '../http/koa-bridge.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import type { UserRecord } from '../storage/types.js';
import { html, pageHeaders, type Html } from '../ui/html.js';
import type { MessageKey } from '../ui/i18n/index.js';
import { buildPageUi, withCookie, type PageUi } from '../ui/page-ui.js';
import { passkeySection } from '../ui/passkey-pages.js';
import { messagePage } from '../ui/pages.js';
import { cleanName, completeRegistration, registrationOptions, removePasskey } from '../users/passkeys.js';
import { canSignIn } from './accounts.js';
import { readForm, type SignInHost } from './interactions.js';

export type AccountPasskeyAction = 'options' | 'add' | 'rename' | 'remove';

const RECENT_LOGIN_SECONDS = 15 * 60;

const NOTICES: Record<string, MessageKey> = {
  added: 'passkey.notice.added',
  renamed: 'passkey.notice.renamed',
  removed: 'passkey.notice.removed',
};

/** The CSRF token of the account pages, bound to the oidc-provider session. */
export function accountCsrf(host: SignInHost, sessionUid: string): string {
  return createHmac('sha256', host.csrfKey).update(`account-mfa:${sessionUid}`).digest('base64url');
}

const bindingOf = (host: SignInHost, sessionUid: string, userId: string) => `register:${host.tenant}:${sessionUid}:${userId}`;

/** The passkey section of the account page and the script it needs, or undefined when passkeys are off. */
export async function passkeyExtra(host: SignInHost, ui: PageUi, user: UserRecord, csrf: string, query: string, error?: string): Promise<{ extra: Html; script: string } | undefined> {
  if (!host.mfa.webauthn_enabled) return undefined;
  const base = `${host.target.mountPath}/account/passkeys`;
  const done = new URLSearchParams(query).get('passkey') ?? '';
  const extra = passkeySection(ui, {
    passkeys: await host.ctx.storage.webauthn.listCredentials(host.tenant, user.id),
    add: { action: base, optionsUrl: `${base}/options`, csrf },
    renameAction: `${base}/rename`,
    removeAction: `${base}/remove`,
    notice: Object.hasOwn(NOTICES, done) ? ui.t(NOTICES[done]!) : undefined,
    error,
  });
  return { extra: html`<hr>${extra}`, script: host.script };
}

function page(status: number, body: string): HttpResponse {
  return { status, headers: pageHeaders(), body };
}

function json(status: number, body: unknown): HttpResponse {
  return { status, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' }, body: JSON.stringify(body) };
}

export async function handleAccountPasskeys(host: SignInHost, req: HttpRequest, action: AccountPasskeyAction): Promise<HttpResponse> {
  if (req.method !== 'POST') return { status: 405, headers: { allow: 'POST', ...pageHeaders() }, body: 'Method Not Allowed' };
  const { ui, setCookie } = buildPageUi(host.ui, { path: `${host.target.mountPath}/account/mfa`, headers: req.headers });
  const { t } = ui;
  const message = (status: number, title: MessageKey, text: MessageKey) => page(status, messagePage({ ui, title: t(title), message: t(text), error: true }));
  if (!host.mfa.webauthn_enabled) return action === 'options' ? json(404, { error: 'passkeys_disabled' }) : message(404, 'account.unavailable.title', 'passkey.unavailable');

  return withCookie(await withNodeObjects(req, host.target, async (nreq, nres) => {
    const session = await host.provider.Session.get(host.provider.createContext(nreq as IncomingMessage, nres as ServerResponse));
    if (!session.accountId) return action === 'options' ? json(401, { error: 'login_required' }) : message(401, 'account.sign_in_first.title', 'account.sign_in_first.message');
    const user = await host.ctx.storage.users.get(host.tenant, session.accountId);
    if (!user || !canSignIn(user)) return action === 'options' ? json(403, { error: 'not_available' }) : message(403, 'account.unavailable.title', 'account.unavailable.message');
    const csrf = accountCsrf(host, session.uid);
    const form = readForm(req);
    const given = Buffer.from(form?.get('csrf_token') ?? '');
    if (!form || given.length !== csrf.length || !timingSafeEqual(given, Buffer.from(csrf))) {
      return action === 'options' ? json(403, { error: 'invalid_csrf' }) : message(403, 'page.form_expired.title', 'page.form_expired.message');
    }
    if (!(await host.guard.allowIp(host.tenant, req.ip))) return action === 'options' ? json(429, { error: 'rate_limited' }) : message(429, 'page.too_many.title', 'page.too_many.message');
    const recent = typeof session.loginTs === 'number' && Date.now() / 1000 - session.loginTs <= RECENT_LOGIN_SECONDS;
    if (!recent && (action === 'options' || action === 'add' || action === 'remove')) {
      return action === 'options'
        ? json(403, { error: 'login_too_old' })
        : message(403, 'passkey.recent.title', 'passkey.recent.message');
    }
    const who = { username: user.email, user_id: user.id, ip_address: req.ip, user_agent: req.headers['user-agent'] ?? null };
    const back = (done: string): HttpResponse => ({ status: 303, headers: { location: `${host.target.mountPath}/account/mfa?passkey=${done}`, 'cache-control': 'no-store' } });
    const binding = bindingOf(host, session.uid, user.id);

    if (action === 'options') return json(200, await registrationOptions(host.ctx, host.tenant, host.relyingParty, user, binding));

    if (action === 'add') {
      const outcome = await completeRegistration(host.ctx, host.tenant, host.relyingParty, user, binding, form.get('credential') ?? '', form.get('name') ?? '');
      if (!outcome.ok) {
        await host.ctx.audit.record(host.tenant, { type: 'mfa_enrollment_failed', status: 'failed', ...who, details: { user_id: user.id, method: 'webauthn', reason: outcome.reason } });
        return message(400, 'passkey.not_added.title', outcome.reason === 'duplicate' ? 'passkey.duplicate' : outcome.reason === 'expired' ? 'passkey.expired' : 'passkey.invalid');
      }
      await host.ctx.audit.record(host.tenant, {
        type: 'mfa_enabled',
        status: 'success',
        ...who,
        details: { user_id: user.id, method: 'webauthn', credential_id: outcome.credential.id, name: outcome.credential.name },
      });
      return back('added');
    }

    const id = (form.get('id') ?? '').slice(0, 1024);
    if (action === 'rename') {
      const name = cleanName(form.get('name') ?? '');
      if (!name) return message(400, 'passkey.not_renamed.title', 'passkey.name_missing');
      if (!(await host.ctx.storage.webauthn.renameCredential(host.tenant, user.id, id, name))) return message(404, 'passkey.not_found.title', 'passkey.not_found.message');
      return back('renamed');
    }

    // remove
    if (!(await removePasskey(host.ctx, host.tenant, user.id, id))) return message(404, 'passkey.not_found.title', 'passkey.not_found.message');
    await host.ctx.audit.record(host.tenant, { type: 'mfa_disabled', status: 'success', ...who, details: { user_id: user.id, method: 'webauthn', credential_id: id, by: 'user' } });
    return back('removed');
  }), setCookie);
}
