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
import { html, type Html } from '../ui/html.js';
import { pageHeaders } from '../ui/html.js';
import { passkeySection } from '../ui/passkey-pages.js';
import { messagePage } from '../ui/pages.js';
import { cleanName, completeRegistration, registrationOptions, removePasskey } from '../users/passkeys.js';
import { canSignIn } from './accounts.js';
import { readForm, type SignInHost } from './interactions.js';

export type AccountPasskeyAction = 'options' | 'add' | 'rename' | 'remove';

const RECENT_LOGIN_SECONDS = 15 * 60;

const NOTICES: Record<string, string> = {
  added: 'Your passkey was added.',
  renamed: 'Your passkey was renamed.',
  removed: 'Your passkey was removed.',
};

/** The CSRF token of the account pages, bound to the oidc-provider session. */
export function accountCsrf(host: SignInHost, sessionUid: string): string {
  return createHmac('sha256', host.csrfKey).update(`account-mfa:${sessionUid}`).digest('base64url');
}

const bindingOf = (host: SignInHost, sessionUid: string, userId: string) => `register:${host.tenant}:${sessionUid}:${userId}`;

/** The passkey section of the account page and the script it needs, or undefined when passkeys are off. */
export async function passkeyExtra(host: SignInHost, user: UserRecord, csrf: string, query: string, error?: string): Promise<{ extra: Html; script: string } | undefined> {
  if (!host.mfa.webauthn_enabled) return undefined;
  const base = `${host.target.mountPath}/account/passkeys`;
  const done = new URLSearchParams(query).get('passkey') ?? '';
  const extra = passkeySection({
    passkeys: await host.ctx.storage.webauthn.listCredentials(host.tenant, user.id),
    add: { action: base, optionsUrl: `${base}/options`, csrf },
    renameAction: `${base}/rename`,
    removeAction: `${base}/remove`,
    notice: Object.hasOwn(NOTICES, done) ? NOTICES[done] : undefined,
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
  const message = (status: number, title: string, text: string) => page(status, messagePage({ stylesheet: host.stylesheet, title, message: text, error: true }));
  if (!host.mfa.webauthn_enabled) return action === 'options' ? json(404, { error: 'passkeys_disabled' }) : message(404, 'Not available', 'Passkeys are not available here.');

  return withNodeObjects(req, host.target, async (nreq, nres) => {
    const session = await host.provider.Session.get(host.provider.createContext(nreq as IncomingMessage, nres as ServerResponse));
    if (!session.accountId) return action === 'options' ? json(401, { error: 'login_required' }) : message(401, 'Sign in first', 'Sign in to an application that uses this account, then open this page again.');
    const user = await host.ctx.storage.users.get(host.tenant, session.accountId);
    if (!user || !canSignIn(user)) return action === 'options' ? json(403, { error: 'not_available' }) : message(403, 'Not available', 'This account cannot be changed right now. Contact your administrator.');
    const csrf = accountCsrf(host, session.uid);
    const form = readForm(req);
    const given = Buffer.from(form?.get('csrf_token') ?? '');
    if (!form || given.length !== csrf.length || !timingSafeEqual(given, Buffer.from(csrf))) {
      return action === 'options' ? json(403, { error: 'invalid_csrf' }) : message(403, 'Form expired', 'This form could not be verified. Go back, reload the page and try again.');
    }
    if (!host.guard.allowIp(host.tenant, req.ip)) return action === 'options' ? json(429, { error: 'rate_limited' }) : message(429, 'Too many attempts', 'Too many attempts from your network. Wait a minute and try again.');
    const recent = typeof session.loginTs === 'number' && Date.now() / 1000 - session.loginTs <= RECENT_LOGIN_SECONDS;
    if (!recent && (action === 'options' || action === 'add' || action === 'remove')) {
      return action === 'options'
        ? json(403, { error: 'login_too_old' })
        : message(403, 'Sign in again', 'For your security, adding or removing a passkey needs a recent sign-in. Sign out, sign in again and retry.');
    }
    const who = { username: user.email, user_id: user.id, ip_address: req.ip, user_agent: req.headers['user-agent'] ?? null };
    const back = (done: string): HttpResponse => ({ status: 303, headers: { location: `${host.target.mountPath}/account/mfa?passkey=${done}`, 'cache-control': 'no-store' } });
    const binding = bindingOf(host, session.uid, user.id);

    if (action === 'options') return json(200, await registrationOptions(host.ctx, host.tenant, host.relyingParty, user, binding));

    if (action === 'add') {
      const outcome = await completeRegistration(host.ctx, host.tenant, host.relyingParty, user, binding, form.get('credential') ?? '', form.get('name') ?? '');
      if (!outcome.ok) {
        await host.ctx.audit.record(host.tenant, { type: 'mfa_enrollment_failed', status: 'failed', ...who, details: { user_id: user.id, method: 'webauthn', reason: outcome.reason } });
        const text =
          outcome.reason === 'duplicate'
            ? 'This passkey is already registered.'
            : outcome.reason === 'expired'
              ? 'This request expired. Reload the page and try again.'
              : 'The passkey could not be verified. Try again.';
        return message(400, 'Passkey not added', text);
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
      if (!name) return message(400, 'Passkey not renamed', 'Enter a name for the passkey.');
      if (!(await host.ctx.storage.webauthn.renameCredential(host.tenant, user.id, id, name))) return message(404, 'Passkey not found', 'That passkey does not exist on your account.');
      return back('renamed');
    }

    // remove
    if (!(await removePasskey(host.ctx, host.tenant, user.id, id))) return message(404, 'Passkey not found', 'That passkey does not exist on your account.');
    await host.ctx.audit.record(host.tenant, { type: 'mfa_disabled', status: 'success', ...who, details: { user_id: user.id, method: 'webauthn', credential_id: id, by: 'user' } });
    return back('removed');
  });
}
