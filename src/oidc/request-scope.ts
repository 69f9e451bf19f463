/**
 * What oidc-provider's events learn about the request being answered, carried to the actor through
 * AsyncLocalStorage (the events fire inside the request's async context) — issue 12 item 9:
 * - a `server_error` caused by storage being down turns the 500 into 503 `temporarily_unavailable`
 *   (a refresh grant reads the account from PostgreSQL through findAccount, which no adapter guard
 *   covers);
 * - audit writes started by an event (RP-initiated logout) are awaited before the answer goes out,
 *   so an accepted action never leaves with its audit entry silently dropped.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { isUnavailable } from '../errors.js';
import type { HttpResponse } from '../http/types.js';

interface Scope {
  unavailable: boolean;
  audits: Array<Promise<unknown>>;
}

const scopes = new AsyncLocalStorage<Scope>();

/** Called from oidc-provider's server_error listener. */
export function noteServerError(err: unknown): void {
  const s = scopes.getStore();
  if (s && isUnavailable(err)) s.unavailable = true;
}

/** Called from event listeners that audit: the write resolves undefined when it failed (AuditLog). */
export function noteAudit(write: Promise<unknown>): void {
  scopes.getStore()?.audits.push(write);
}

const retryLater = (): HttpResponse => ({
  status: 503,
  headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'retry-after': '1' },
  body: JSON.stringify({ error: 'temporarily_unavailable', error_description: 'the service is temporarily unavailable; retry shortly' }),
});

/**
 * Runs one oidc-provider request. `onAuditFailed` decides the answer when an audit write of this
 * request failed (the action itself already happened).
 */
export async function inRequestScope(run: () => Promise<HttpResponse>, onAuditFailed: (res: HttpResponse) => HttpResponse): Promise<HttpResponse> {
  const scope: Scope = { unavailable: false, audits: [] };
  const res = await scopes.run(scope, run);
  if (scope.audits.length) {
    const written = await Promise.all(scope.audits);
    if (written.some((w) => w === undefined)) return onAuditFailed(res);
  }
  if (scope.unavailable && res.status === 500) {
    const type = String(res.headers?.['content-type'] ?? '');
    if (type.startsWith('application/json')) return retryLater();
    return { ...res, status: 503, headers: { ...res.headers, 'retry-after': '1' } };
  }
  return res;
}
