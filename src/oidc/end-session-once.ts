/**
 * One sign-out per end-session confirmation. oidc-provider's confirm reads the session, checks the
 * form secret (`xsrf`) and only several awaits later destroys the session: copies of one
 * confirmation POST sent at the same moment all pass the check, and each one sends every client a
 * back-channel logout token and is audited as a logout.
 *
 * So before oidc-provider sees the request, the confirmation is claimed once in the replay store
 * (replay-store.ts: an in-process memo, and with Redis one `SET NX` shared by every instance). The
 * claim names the session (its verified cookie), the form secret and the answer (`logout`), hashed:
 * the session id is a bearer secret, never stored as it is. A copy that loses the claim goes on
 * without its session cookie, so oidc-provider answers it exactly as it answers a confirmation
 * replayed after the sign-out: 400 "could not find logout details" (docs/decisions.md).
 */
import { createHash } from 'node:crypto';
import type { HttpRequest } from '../http/types.js';
import type { ReplayStore } from './replay-store.js';
import { SESSION_COOKIE, signedSessionCookie } from './session-cookie.js';

/** The claims' namespace in the replay store. */
const CLAIM_ISSUER = 'end-session';
/**
 * How long a claim is kept. Copies race within a request's time; once the winner has signed out,
 * the session is gone and oidc-provider refuses any later copy itself.
 */
export const CLAIM_SECONDS = 600;

/**
 * The request to hand to oidc-provider: `req` itself when this copy of the confirmation claimed it
 * (or names no signed session and one form secret, which oidc-provider refuses on its own), else
 * `req` without the session cookie.
 */
export async function claimEndSessionConfirm(replay: ReplayStore, req: HttpRequest, cookieKeys: readonly string[]): Promise<HttpRequest> {
  const session = signedSessionCookie(req.headers.cookie, cookieKeys);
  const form = new URLSearchParams(req.body.toString());
  const secrets = form.getAll('xsrf');
  if (!session || secrets.length !== 1 || !secrets[0]) return req;
  const claim = createHash('sha256').update(`${session.id}\n${secrets[0]}\n${form.getAll('logout').join('\n')}`).digest('base64url');
  if (await replay.unique(CLAIM_ISSUER, claim, Math.floor(Date.now() / 1000) + CLAIM_SECONDS)) return req;
  return { ...req, headers: { ...req.headers, cookie: withoutSessionCookie(req.headers.cookie ?? '') } };
}

/** The Cookie header without the session cookie and its signature. */
function withoutSessionCookie(header: string): string {
  return header
    .split(';')
    .filter((pair) => {
      const name = pair.split('=', 1)[0]!.trim();
      return name !== SESSION_COOKIE && name !== `${SESSION_COOKIE}.sig`;
    })
    .join(';');
}
