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
 * Installed on the connection the way turn-reads.ts is (every statement's methods, transactions,
 * exec and pragma), before any repository prepares a statement. A constraint or a bug is not
 * "right now": those errors pass as they are.
 */
import type Database from 'better-sqlite3';
import { Unavailable } from '../../errors.js';
import { oncePerMinute } from '../failure-report.js';
import type { Db } from './db.js';

/** Primary result codes (extended codes begin with them: SQLITE_IOERR_WRITE, SQLITE_BUSY_SNAPSHOT). */
const NOT_NOW = /^SQLITE_(FULL|IOERR|BUSY|LOCKED|READONLY|CANTOPEN|NOMEM|PROTOCOL)(_|$)/;

export type SqliteFailure = Error & { code: string };

/** True for a SQLite error that means "not now" rather than "not this". */
export function isNotNow(err: unknown): err is SqliteFailure {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'string' && NOT_NOW.test((err as SqliteFailure).code);
}

type Method = (...args: unknown[]) => unknown;

/** Makes `db`'s "not now" failures Unavailable (see the header); `report` hears of each. */
export function answerFailures(db: Db, report: (err: SqliteFailure) => void): void {
  const answered = (fn: Method): Method =>
    function (this: unknown, ...args: unknown[]) {
      try {
        return fn.apply(this, args);
      } catch (err) {
        if (!isNotNow(err)) throw err;
        report(err);
        throw new Unavailable('storage is unavailable; retry shortly', 1, { cause: err });
      }
    };

  const prepare = db.prepare.bind(db) as (source: string) => Database.Statement;
  const methods = ['get', 'all', 'iterate', 'run'] as const;
  const writer = db as unknown as Record<'prepare' | 'transaction' | 'exec' | 'pragma', Method>;
  writer.prepare = ((source: string) => {
    const statement = prepare(source);
    const own = statement as unknown as Record<(typeof methods)[number], Method>;
    for (const name of methods) own[name] = answered(own[name].bind(statement));
    return statement;
  }) as Method;
  const transaction = db.transaction.bind(db) as (fn: Method) => Method & Record<'deferred' | 'immediate' | 'exclusive', Method>;
  writer.transaction = ((fn: Method) => {
    const run = transaction(fn);
    return Object.assign(answered(run), {
      deferred: answered(run.deferred),
      immediate: answered(run.immediate),
      exclusive: answered(run.exclusive),
    });
  }) as Method;
  for (const name of ['exec', 'pragma'] as const) writer[name] = answered(writer[name].bind(db));
}

/** The service's reporter: the first failure of each code in a minute, at error level (failure-report.ts). */
export function reportOncePerMinute(log: { error(obj: Record<string, unknown>, msg: string): void } | undefined): (err: SqliteFailure) => void {
  const report = oncePerMinute((code, err) =>
    log?.error({ code, reason: err.message }, 'SQLite cannot serve a statement now: requests that need it answer 503 until it can (reported once a minute while it lasts)'),
  );
  return (err) => report(err.code, err);
}
