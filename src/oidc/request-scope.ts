/**
 * What oidc-provider's events learn about the request being answered, carried to the actor through
 * AsyncLocalStorage (the events fire inside the request's async context) — issue 12 item 9:
 * - a `server_error` caused by storage being down turns the 500 into 503 `temporarily_unavailable`
 *   (a refresh grant reads the account from PostgreSQL through findAccount, which no adapter guard
 *   covers);
 * - audit writes started by an event (RP-initiated logout) are awaited before the answer goes out,
 *   so an accepted action never leaves with its audit entry silently dropped;
 * - why a client authentication failed (the error_detail of its `invalid_client`), handed to the
 *   caller for the throttle's audit entry (client-auth-failures.ts).
 *
 * Between requests both contexts (ours and oidc-provider's own) are switched off (issue 17). While
 * any AsyncLocalStorage is enabled, Node runs promise hooks on every promise of the process: the
 * direct paths (tokens, userinfo, silent re-authentication), which never use either context, paid
 * ~14% of their allocations and up to a fifth of their event-loop time for it. The first
 * run() of the next bridged request switches them on again.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import providerContext from 'oidc-provider/lib/helpers/als.js';
import { isUnavailable } from '../errors.js';
import type { HttpResponse } from '../http/types.js';

interface Scope {
  unavailable: boolean;
  audits: Array<Promise<unknown>>;
  clientAuthError?: string;
}

const scopes = new AsyncLocalStorage<Scope>();
/** Requests inside oidc-provider right now. */
let bridged = 0;

/** Called from oidc-provider's server_error listener. */
export function noteServerError(err: unknown): void {
  const s = scopes.getStore();
  if (s && isUnavailable(err)) s.unavailable = true;
}

/** Called from event listeners that audit: the write resolves undefined when it failed (AuditLog). */
export function noteAudit(write: Promise<unknown>): void {
  scopes.getStore()?.audits.push(write);
}

/** Called from oidc-provider's error events with an `invalid_client` error's detail. */
export function noteClientAuthError(detail: string): void {
  const s = scopes.getStore();
  if (s) s.clientAuthError = detail;
}

const retryLater = (): HttpResponse => ({
  status: 503,
  headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'retry-after': '1' },
  body: JSON.stringify({ error: 'temporarily_unavailable', error_description: 'the service is temporarily unavailable; retry shortly' }),
});

/**
 * Runs one oidc-provider request. `onAuditFailed` decides the answer when an audit write of this
 * request failed (the action itself already happened); `onClientAuthError` hears why its client
 * authentication failed, when it did.
 */
export async function inRequestScope(
  run: () => Promise<HttpResponse>,
  onAuditFailed: (res: HttpResponse) => HttpResponse,
  onClientAuthError?: (detail: string) => void,
): Promise<HttpResponse> {
  const scope: Scope = { unavailable: false, audits: [] };
  const res = await insideProvider(async () => {
    const answer = await scopes.run(scope, run);
    if (scope.clientAuthError !== undefined) onClientAuthError?.(scope.clientAuthError);
    // Awaited inside: an audit write still runs in the request's context.
    if (scope.audits.length && (await Promise.all(scope.audits)).some((w) => w === undefined)) return onAuditFailed(answer);
    return answer;
  });
  if (scope.unavailable && res.status === 500) {
    const type = String(res.headers?.['content-type'] ?? '');
    if (type.startsWith('application/json')) return retryLater();
    return { ...res, status: 503, headers: { ...res.headers, 'retry-after': '1' } };
  }
  return res;
}

/**
 * Runs a call through oidc-provider's own middleware (a bridged request, the discovery document a
 * build renders) and, when no such call is left in flight, switches both contexts off.
 */
export async function insideProvider<T>(run: () => Promise<T>): Promise<T> {
  bridged++;
  try {
    return await run();
  } finally {
    if (--bridged === 0) {
      scopes.disable();
      providerContext.disable();
    }
  }
}
