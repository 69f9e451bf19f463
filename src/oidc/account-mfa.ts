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
import { accountCsrf, passkeyExtra } from './account-passkeys.js';
import { messagePage, mfaEnrollPage, mfaManagePage, recoveryCodesPage } from '../ui/pages.js';
import { canSignIn } from './accounts.js';
import { readForm, type SignInHost } from './interactions.js';
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
  /** The passkey section below the page's own form (account-passkeys.ts), when passkeys are on. */
  passkeys?: { extra: Html; script: string };
}

export async function handleAccountMfa(host: SignInHost, req: HttpRequest, action: AccountMfaAction): Promise<HttpResponse> {
  const allowed = action === 'manage' ? ['GET', 'POST'] : ['POST'];
  if (!allowed.includes(req.method)) return { status: 405, headers: { allow: allowed.join(', '), ...pageHeaders() }, body: 'Method Not Allowed' };
  const message = (status: number, title: string, text: string, error = true) => page(status, messagePage({ stylesheet: host.stylesheet, title, message: text, error }));

  return withNodeObjects(req, host.target, async (nreq, nres) => {
    const session = await host.provider.Session.get(host.provider.createContext(nreq as IncomingMessage, nres as ServerResponse));
    if (!session.accountId) return message(401, 'Sign in first', 'Sign in to an application that uses this account, then open this page again.');
    const user = await host.ctx.storage.users.get(host.tenant, session.accountId);
    if (!user || !canSignIn(user)) return message(403, 'Not available', 'This account cannot be changed right now. Contact your administrator.');
    const csrf = accountCsrf(host, session.uid);
    const visit: Visit = { host, req, user, sessionUid: session.uid, csrf, passkeys: await passkeyExtra(host, user, csrf, req.rawQuery) };

    if (req.method === 'GET') {
      // A tenant without authenticator apps: the passkeys alone (and turning TOTP off, if still on).
      if (!host.mfa.totp_enabled && !totpOn(user)) {
        if (!visit.passkeys) return message(404, 'Not available', 'Two-step verification is not available here.');
        return { status: 200, headers: pageHeaders([], { script: true }), body: passkeysOnlyPage({ stylesheet: host.stylesheet, script: host.script, section: visit.passkeys.extra }) };
      }
      return totpOn(user) ? managePage(visit, 200) : enrollPage(visit, 200, generateTotpSecret());
    }

    const form = readForm(req);
    const given = Buffer.from(form?.get('csrf_token') ?? '');
    if (!form || given.length !== csrf.length || !timingSafeEqual(given, Buffer.from(csrf))) {
      return message(403, 'Form expired', 'This form could not be verified. Go back, reload the page and try again.');
    }
    if (!host.guard.allowIp(host.tenant, req.ip)) return message(429, 'Too many attempts', 'Too many attempts from your network. Wait a minute and try again.');
    return action === 'disable' ? disable(visit, form) : confirmEnrollment(visit, form);
  });
}

const enrollmentAad = (v: Visit) => `mfa-enroll:${v.host.tenant}:${v.user.id}:${v.sessionUid}`;
/** TOTP is on (passkeys, managed on their own, do not count here). */
const totpOn = (user: UserRecord) => user.mfa_secret_sealed !== null;
const who = (v: Visit) => ({ username: v.user.email, user_id: v.user.id, ip_address: v.req.ip, user_agent: v.req.headers['user-agent'] ?? null });

function enrollPage(v: Visit, status: number, secret: string, error?: string): HttpResponse {
  const enrollment = v.host.ctx.sealer.seal(JSON.stringify({ secret, exp: Date.now() + ENROLLMENT_SECONDS * 1000 }), enrollmentAad(v));
  const uri = otpauthUri(secret, v.host.target.origin.host, v.user.email ?? v.user.username ?? v.user.id);
  return page(status, mfaEnrollPage({ stylesheet: v.host.stylesheet, action: `${v.host.target.mountPath}/account/mfa`, csrf: v.csrf, enrollment, secret, uri, error, ...v.passkeys }), !!v.passkeys);
}

function managePage(v: Visit, status: number, error?: string): HttpResponse {
  return page(status, mfaManagePage({ stylesheet: v.host.stylesheet, action: `${v.host.target.mountPath}/account/mfa/disable`, csrf: v.csrf, email: v.user.email ?? '', error, ...v.passkeys }), !!v.passkeys);
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
  if (!host.mfa.totp_enabled) return page(404, messagePage({ stylesheet: host.stylesheet, title: 'Not available', message: 'Authenticator apps are not available here.', error: true }));
  if (totpOn(user)) return managePage(v, 409, 'Two-step verification is already on.');
  const secret = pendingSecret(v, form.get('enrollment') ?? '');
  if (!secret) return enrollPage(v, 400, generateTotpSecret(), 'This setup expired. Add the new key below to your app and try again.');
  const code = (form.get('code') ?? '').trim();
  if (!code) return enrollPage(v, 400, secret, 'Enter the code from your authenticator app.');
  const check = await checkTotp(host.ctx, host.tenant, user.id, secret, code);
  if (check !== 'ok') return enrollPage(v, 400, secret, check === 'replayed' ? 'That code was already used. Wait for the next code.' : 'That code is not valid. Check the key in your app and try again.');

  const codes = await enableTotp(host.ctx, host.tenant, user.id, secret);
  await host.ctx.audit.record(host.tenant, { type: 'mfa_enabled', status: 'success', ...who(v), details: { user_id: user.id, method: 'totp', methods: ['totp'] } });
  return page(200, recoveryCodesPage({ stylesheet: host.stylesheet, codes }));
}

async function disable(v: Visit, form: URLSearchParams): Promise<HttpResponse> {
  const { host, user } = v;
  if (!totpOn(user)) return page(200, messagePage({ stylesheet: host.stylesheet, title: 'Two-step verification is off', message: 'Two-step verification is already off for this account.' }));
  const password = form.get('password') ?? '';
  if (!password || password.length > 1024) return managePage(v, 400, 'Enter your password.');
  // A password check is a password check: wrong ones feed the brute-force guard like at sign-in.
  const ok = await host.ctx.passwords.verify(user.password_hash ?? (await host.guard.dummyHash()), password);
  if (!ok || !user.password_hash) {
    await host.ctx.audit.record(host.tenant, { type: 'failed_login', status: 'failed', ...who(v), details: { reason: 'wrong_password', step: 'mfa_disable' } });
    if (await host.guard.recordFailure(host.tenant, user, v.req.ip, v.req.headers['user-agent'])) {
      return page(403, messagePage({ stylesheet: host.stylesheet, title: 'Not available', message: 'This account cannot be changed right now. Contact your administrator.', error: true }));
    }
    return managePage(v, 401, 'Wrong password.');
  }
  await disableTotp(host.ctx, host.tenant, user.id);
  await host.ctx.audit.record(host.tenant, { type: 'mfa_disabled', status: 'success', ...who(v), details: { user_id: user.id, method: 'totp', methods: ['totp'], by: 'user' } });
  return page(200, messagePage({ stylesheet: host.stylesheet, title: 'Two-step verification is off', message: 'Signing in now needs only your password. To turn it on again, open this page again.' }));
}
