/**
 * Who is signed in on the account page. The account page is the tenant's first-party client
 * `svc-account` (src/clients/system-clients.ts): without a sign-in session it sends the browser
 * through the tenant's own authorization endpoint (code + PKCE, state and nonce in a sealed,
 * short-lived cookie), and /account/callback completes the code exchange in process. The page then
 * acts for the account of the tenant's sign-in session (oidc-provider's session cookie): ending
 * that session (sign-out, a password reset, "end session" here) ends access to the page too.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ACCOUNT_CLIENT_ID } from '../../clients/system-clients.js';
import { withNodeObjects } from '../../http/koa-bridge.js';
import type { HttpRequest, HttpResponse } from '../../http/types.js';
import type { UserRecord } from '../../storage/types.js';
import { canSignIn } from '../../oidc/accounts.js';
import { bearerProtector } from '../../oidc/bearer-at-rest.js';
import { cookieValue } from '../page-ui.js';
import type { AccountHost } from './host.js';
import { seeOther } from './respond.js';

export const ACCOUNT_PATH = '/account';
export const CALLBACK_PATH = '/account/callback';
const AUTH_COOKIE = 'svc_account_auth';
const AUTH_SECONDS = 600;

export interface AccountSession {
  user: UserRecord;
  /** oidc-provider's session (its uid binds the CSRF token, its jti marks "this device"). */
  sessionUid: string;
  sessionJti: string;
  /** The id the session is stored and listed under. */
  storedJti: string;
  /** When the user last signed in (seconds): adding or removing a second factor needs a recent one. */
  loginTs?: number;
}

/** How recent a sign-in the account page asks for before a second factor is added or removed. */
export const RECENT_LOGIN_SECONDS = 15 * 60;

/**
 * Whether the user signed in within RECENT_LOGIN_SECONDS: a session stolen earlier (a cookie from a
 * shared computer, a leaked backup) may not plant a second factor of its own or strip the owner's.
 */
export const recentSignIn = (s: AccountSession) => typeof s.loginTs === 'number' && Date.now() / 1000 - s.loginTs <= RECENT_LOGIN_SECONDS;

const aad = (host: AccountHost) => `account-auth:${host.tenant}`;

/** The signed-in user of the tenant's sign-in session, if any (and still allowed to sign in). */
export async function currentSession(host: AccountHost, req: HttpRequest): Promise<AccountSession | undefined> {
  const provider = await host.provider();
  let found: AccountSession | undefined;
  await withNodeObjects(req, { mountPath: host.mountPath, origin: host.origin }, async (nreq, nres) => {
    const session = await provider.Session.get(provider.createContext(nreq as IncomingMessage, nres as ServerResponse));
    if (!session.accountId) return { status: 204 };
    const user = await host.ctx.storage.users.get(host.tenant, session.accountId);
    // Sessions are stored under a keyed hash of their id (oidc/bearer-at-rest.ts): the listing shows that one.
    if (user && !user.deleted_at && canSignIn(user)) found = { user, sessionUid: session.uid, sessionJti: session.jti, storedJti: bearerProtector(host.ctx.sealer).storedId(host.tenant, 'Session', session.jti), loginTs: typeof session.loginTs === 'number' ? session.loginTs : undefined };
    return { status: 204 };
  });
  return found;
}

/** Sends the browser to the tenant's authorization endpoint as svc-account. */
export function startSignIn(host: AccountHost, lang?: string): HttpResponse {
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(16).toString('base64url');
  const nonce = randomBytes(16).toString('base64url');
  const sealed = host.ctx.sealer.seal(JSON.stringify({ verifier, state, nonce, exp: Date.now() + AUTH_SECONDS * 1000 }), aad(host));
  const params = new URLSearchParams({
    client_id: ACCOUNT_CLIENT_ID,
    response_type: 'code',
    redirect_uri: `${host.origin.origin}${CALLBACK_PATH}`,
    scope: 'openid profile email',
    state,
    nonce,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  if (lang) params.set('ui_locales', lang);
  const secure = host.origin.protocol === 'https:' ? '; Secure' : '';
  return seeOther(`${host.origin.origin}${host.mountPath}/auth?${params.toString()}`, [
    `${AUTH_COOKIE}=${sealed}; Path=${CALLBACK_PATH}; Max-Age=${AUTH_SECONDS}; HttpOnly; SameSite=Lax${secure}`,
  ]);
}

/**
 * The authorization response: state checked against the sealed cookie, the code exchanged (PKCE)
 * at the token endpoint in process, the ID token's nonce checked; then on to the account page.
 */
export async function finishSignIn(host: AccountHost, req: HttpRequest, exchange: (body: URLSearchParams) => Promise<HttpResponse>): Promise<HttpResponse | 'failed'> {
  const clear = `${AUTH_COOKIE}=; Path=${CALLBACK_PATH}; Max-Age=0; HttpOnly; SameSite=Lax`;
  const query = new URLSearchParams(req.rawQuery);
  let pending: { verifier: string; state: string; nonce: string; exp: number };
  try {
    pending = JSON.parse(host.ctx.sealer.unseal(cookieValue(req.headers.cookie, AUTH_COOKIE) ?? '', aad(host))) as typeof pending;
  } catch {
    return 'failed';
  }
  const code = query.get('code');
  if (!code || query.get('state') !== pending.state || pending.exp < Date.now()) return 'failed';
  const res = await exchange(
    new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: `${host.origin.origin}${CALLBACK_PATH}`, client_id: ACCOUNT_CLIENT_ID, code_verifier: pending.verifier }),
  );
  if (res.status !== 200) {
    host.ctx.log.warn({ tenant: host.tenant, status: res.status, body: String(res.body ?? '').slice(0, 300) }, 'account sign-in: code exchange refused');
    return 'failed';
  }
  const body = JSON.parse(String(res.body ?? '{}')) as { id_token?: string };
  const payload = body.id_token?.split('.')[1];
  // The token came straight from this tenant's own token endpoint, in process: only the nonce is left to check.
  const claims = payload ? (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { nonce?: string }) : {};
  if (claims.nonce !== pending.nonce) return 'failed';
  return seeOther(ACCOUNT_PATH, [clear]);
}

/** True for the listed session id of this very sign-in (stored hashed, or in clear on older stores). */
export function isThisSession(session: AccountSession, listedJti: string): boolean {
  return listedJti === session.storedJti || listedJti === session.sessionJti;
}
