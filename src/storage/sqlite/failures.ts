/**
 * SQLite failures in the service's terms, as postgresql/errors.ts does for PostgreSQL: a database
 * that cannot take a statement right now (a full disk, an I/O error, a lock held past busy_timeout,
 * a file made read-only or moved away) raises the neutral Unavailable, so every surface answers
 * 503 with Retry-After (OAuth `temporarily_unavailable`, problem+json, the "try again" page)
 * instead of a 500 "an unexpected error occurred". SQLite rolls back the statement or transaction
 * that failed, so nothing is half-written, and the same statements work again once the cause is
 * gone (space freed), without a restart. The operator hears of it: the first failure of each kind
 * in a minute is reported with its code (`report`).
 *
 * Applied by turn-reads.ts's wrappers of the connection's entry points (every statement's methods,
 * transactions, exec, pragma), installed before any repository prepares a statement. A constraint
 * or a bug is not "right now": those errors pass as they are.
 */
import { Unavailable } from '../../errors.js';
import { oncePerMinute } from '../failure-report.js';

/** Primary result codes (extended codes begin with them: SQLITE_IOERR_WRITE, SQLITE_BUSY_SNAPSHOT). */
const NOT_NOW = /^SQLITE_(FULL|IOERR|BUSY|LOCKED|READONLY|CANTOPEN|NOMEM|PROTOCOL)(_|$)/;

export type SqliteFailure = Error & { code: string };

/** True for a SQLite error that means "not now" rather than "not this". */
export function isNotNow(err: unknown): err is SqliteFailure {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string' && NOT_NOW.test((err as SqliteFailure).code);
}

/** What readInTurns passes a thrown error through (turn-reads.ts): "not now" becomes Unavailable, reported. */
export function notNowUnavailable(report: (err: SqliteFailure) => void): (err: unknown) => unknown {
  return (err) => {
    if (!isNotNow(err)) return err;
    report(err);
    return new Unavailable('storage is unavailable; retry shortly', 1, { cause: err });
  };
}

/** The service's reporter: the first failure of each code in a minute, at error level (failure-report.ts). */
export function reportOncePerMinute(log: { error(obj: Record<string, unknown>, msg: string): void } | undefined): (err: SqliteFailure) => void {
  const report = oncePerMinute((code, err) =>
    log?.error({ code, reason: err.message }, 'SQLite cannot serve a statement now: requests that need it answer 503 until it can (reported once a minute while it lasts)'),
  );
  return (err) => report(err.code, err);
}
