/**
 * Self-service two-step verification at {oidc}/account/mfa for a signed-in user:
 *  - GET shows a fresh TOTP secret (text and otpauth:// link) with a code field, or, when it is on,
 *    the form to turn it off;
 *  - POST /account/mfa confirms enrolment with a current code and shows the recovery codes once;
 *  - POST /account/mfa/disable turns it off after the password is entered again.
 * "Signed in" is an oidc-provider session (its signed `_session` cookie, read with Session.get);
 * forms carry a CSRF token bound to that session.
 *
 * The secret waits between GET and POST in a sealed hidden field (AAD: tenant, user, session,
 * with an expiry) rather than in storage: nothing half-enrolled is ever written to the user.
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { withNodeObjects } from '../http/koa-bridge.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import type { UserRecord } from '../storage/types.js';
import { pageHeaders, type Html } from '../ui/html.js';
import { passkeysOnlyPage } from '../ui/passkey-pages.js';
import { buildPageUi, withCookie, type PageUi } from '../ui/page-ui.js';
import { qrSvg } from '../ui/qr.js';
import { messagePage, mfaEnrollPage, mfaManagePage, recoveryCodesPage } from '../ui/pages.js';
import { canSignIn } from './accounts.js';
import { readForm, type SignInHost } from './interactions.js';
import { accountCsrf, passkeyExtra } from './account-passkeys.js';
import { checkTotp, disableTotp, enableTotp } from './mfa.js';
import { generateTotpSecret, otpauthUri } from './totp.js';

export type AccountMfaAction = 'manage' | 'disable';

/** Time from showing the secret to confirming it. */
const ENROLLMENT_SECONDS = 600;

function page(status: number, body: string, script = false): HttpResponse {
  return { status, headers: pageHeaders([], { script }), body };
}

interface Visit {
  host: SignInHost;
  req: HttpRequest;
  user: UserRecord;
  sessionUid: string;
  csrf: string;
  ui: PageUi;
  /** The passkey section below the page's own form (account-passkeys.ts), when passkeys are on. */
  passkeys?: { extra: Html; script: string };
}

export async function handleAccountMfa(host: SignInHost, req: HttpRequest, action: AccountMfaAction): Promise<HttpResponse> {
  const allowed = action === 'manage' ? ['GET', 'POST'] : ['POST'];
  if (!allowed.includes(req.method)) return { status: 405, headers: { allow: allowed.join(', '), ...pageHeaders() }, body: 'Method Not Allowed' };
  const { ui, setCookie } = buildPageUi(host.ui, { path: `${host.target.mountPath}/account/mfa`, headers: req.headers });
  const { t } = ui;
  const message = (status: number, title: string, text: string, error = true) => page(status, messagePage({ ui, title, message: text, error }));

  return withCookie(await withNodeObjects(req, host.target, async (nreq, nres) => {
    const session = await host.provider.Session.get(host.provider.createContext(nreq as IncomingMessage, nres as ServerResponse));
    if (!session.accountId) return message(401, t('account.sign_in_first.title'), t('account.sign_in_first.message'));
    const user = await host.ctx.storage.users.get(host.tenant, session.accountId);
    if (!user || !canSignIn(user)) return message(403, t('account.unavailable.title'), t('account.unavailable.message'));
    const csrf = accountCsrf(host, session.uid);
    const visit: Visit = { host, req, user, sessionUid: session.uid, csrf, ui, passkeys: await passkeyExtra(host, ui, user, csrf, req.rawQuery) };

    if (req.method === 'GET') {
      // A tenant without authenticator apps: the passkeys alone (and turning TOTP off, if still on).
      if (!host.mfa.totp_enabled && !totpOn(user)) {
        if (!visit.passkeys) return message(404, t('account.unavailable.title'), t('mfa.unavailable'));
        return page(200, passkeysOnlyPage({ ui, script: host.script, section: visit.passkeys.extra }), true);
      }
      return totpOn(user) ? managePage(visit, 200) : enrollPage(visit, 200, generateTotpSecret());
    }

    const form = readForm(req);
    const given = Buffer.from(form?.get('csrf_token') ?? '');
    if (!form || given.length !== csrf.length || !timingSafeEqual(given, Buffer.from(csrf))) {
      return message(403, t('page.form_expired.title'), t('page.form_expired.message'));
    }
    if (!(await host.guard.allowIp(host.tenant, req.ip))) return message(429, t('page.too_many.title'), t('page.too_many.message'));
    return action === 'disable' ? disable(visit, form) : confirmEnrollment(visit, form);
  }), setCookie);
}

const enrollmentAad = (v: Visit) => `mfa-enroll:${v.host.tenant}:${v.user.id}:${v.sessionUid}`;
/** TOTP is on (passkeys, managed on their own, do not count here). */
const totpOn = (user: UserRecord) => user.mfa_secret_sealed !== null;
const who = (v: Visit) => ({ username: v.user.email, user_id: v.user.id, ip_address: v.req.ip, user_agent: v.req.headers['user-agent'] ?? null });

async function enrollPage(v: Visit, status: number, secret: string, error?: string): Promise<HttpResponse> {
  const enrollment = v.host.ctx.sealer.seal(JSON.stringify({ secret, exp: Date.now() + ENROLLMENT_SECONDS * 1000 }), enrollmentAad(v));
  const uri = otpauthUri(secret, v.host.target.origin.host, v.user.email ?? v.user.username ?? v.user.id);
  const extras = v.passkeys ? { script: v.passkeys.script, extras: [v.passkeys.extra] } : {};
  return page(status, mfaEnrollPage({ ui: v.ui, action: `${v.host.target.mountPath}/account/mfa`, csrf: v.csrf, enrollment, secret, uri, qrSvg: await qrSvg(uri), error, ...extras }), !!v.passkeys);
}

function managePage(v: Visit, status: number, error?: string): HttpResponse {
  const extras = v.passkeys ? { script: v.passkeys.script, extras: [v.passkeys.extra] } : {};
  return page(status, mfaManagePage({ ui: v.ui, action: `${v.host.target.mountPath}/account/mfa/disable`, csrf: v.csrf, email: v.user.email ?? '', error, ...extras }), !!v.passkeys);
}

/** The secret from the sealed field, if it is this user's and session's and not expired. */
function pendingSecret(v: Visit, sealed: string): string | undefined {
  try {
    const parsed = JSON.parse(v.host.ctx.sealer.unseal(sealed, enrollmentAad(v))) as { secret?: unknown; exp?: unknown };
    return typeof parsed.secret === 'string' && typeof parsed.exp === 'number' && parsed.exp > Date.now() ? parsed.secret : undefined;
  } catch {
    return undefined;
  }
}

async function confirmEnrollment(v: Visit, form: URLSearchParams): Promise<HttpResponse> {
  const { host, user } = v;
  if (!host.mfa.totp_enabled) return page(404, messagePage({ ui: v.ui, title: v.ui.t('account.unavailable.title'), message: v.ui.t('mfa.totp_unavailable'), error: true }));
  if (totpOn(user)) return managePage(v, 409, v.ui.t('mfa.enroll.already_on'));
  const secret = pendingSecret(v, form.get('enrollment') ?? '');
  if (!secret) return enrollPage(v, 400, generateTotpSecret(), v.ui.t('mfa.enroll.expired'));
  const code = (form.get('code') ?? '').trim();
  if (!code) return enrollPage(v, 400, secret, v.ui.t('mfa.enter_code'));
  const check = await checkTotp(host.ctx, host.tenant, user.id, secret, code);
  if (check !== 'ok') return enrollPage(v, 400, secret, v.ui.t(check === 'replayed' ? 'mfa.enroll.code_used' : 'mfa.enroll.code_invalid'));

  const codes = await enableTotp(host.ctx, host.tenant, user.id, secret);
  await host.ctx.audit.record(host.tenant, { type: 'mfa_enabled', status: 'success', ...who(v), details: { user_id: user.id, method: 'totp', methods: ['totp'] } });
  return page(200, recoveryCodesPage({ ui: v.ui, codes }));
}

async function disable(v: Visit, form: URLSearchParams): Promise<HttpResponse> {
  const { host, user } = v;
  if (!totpOn(user)) return page(200, messagePage({ ui: v.ui, title: v.ui.t('mfa.off.title'), message: v.ui.t('mfa.off.already') }));
  const password = form.get('password') ?? '';
  if (!password || password.length > 1024) return managePage(v, 400, v.ui.t('mfa.manage.enter_password'));
  // A password check is a password check: wrong ones feed the brute-force guard like at sign-in.
  const ok = await host.ctx.passwords.verify(user.password_hash ?? (await host.guard.dummyHash()), password);
  if (!ok || !user.password_hash) {
    await host.ctx.audit.record(host.tenant, { type: 'failed_login', status: 'failed', ...who(v), details: { reason: 'wrong_password', step: 'mfa_disable' } });
    if (await host.guard.recordFailure(host.tenant, user, v.req.ip, v.req.headers['user-agent'])) {
      return page(403, messagePage({ ui: v.ui, title: v.ui.t('account.unavailable.title'), message: v.ui.t('account.unavailable.message'), error: true }));
    }
    return managePage(v, 401, v.ui.t('mfa.manage.wrong_password'));
  }
  await disableTotp(host.ctx, host.tenant, user.id);
  await host.ctx.audit.record(host.tenant, { type: 'mfa_disabled', status: 'success', ...who(v), details: { user_id: user.id, method: 'totp', methods: ['totp'], by: 'user' } });
  return page(200, messagePage({ ui: v.ui, title: v.ui.t('mfa.off.title'), message: v.ui.t('mfa.off.done') }));
}
