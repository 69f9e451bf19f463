/**
 * One read transaction per turn of the event loop on the service's SQLite connection (issue 17).
 *
 * Why: outside a transaction every statement opens and closes one of its own, and in WAL mode
 * that takes and drops a read lock in the -shm file (two fcntl calls) and re-checks the WAL index:
 * ~2-3 µs a read on the bench VMs. A silent re-authentication makes five such reads, a refresh
 * two or three; perf put starting and ending them at ~5% of silent re-authentication's event loop.
 * Here the first read of a turn opens a read transaction (BEGIN, deferred) and every later read of
 * the turn, whichever request makes it, runs inside it; it is committed at the turn's check phase
 * (setImmediate) or before anything writes, whichever comes first.
 *
 * The invariant that keeps writes durable: nothing ever writes inside this transaction. Every way
 * to write on the connection (a statement that is not read-only, `transaction()`, `exec`, `pragma`,
 * `backup`, `close`) first commits the turn's read transaction, so a write runs in its own
 * transaction (or autocommit) exactly as before and is committed before its caller goes on, and no
 * read transaction is ever upgraded to a write one (so SQLITE_BUSY_SNAPSHOT cannot happen).
 * Statements prepared before `readInTurns` (migrations) are left as they are.
 *
 * The same wrappers pass what these entry points throw through `failed` (failures.ts makes a full
 * disk or an I/O error the neutral Unavailable): one wrapper per entry point serves both.
 *
 * What reads see: the database as of the turn's first read, plus this connection's own writes (a
 * write ends the transaction, and the next read opens a new one). Another connection's commit (the
 * CLI, a second process) becomes visible from the next turn instead of the next statement: the
 * same as if it had been committed a fraction of a millisecond later. Reads that must see an OIDC
 * write queued for the group commit wait for that commit as before (write-batch.ts), and the
 * commit ends the read transaction first.
 *
 * Locking the file exclusively (`locking_mode = EXCLUSIVE`) would save more, but the CLI and a
 * second process must be able to open the file while the service runs (docs/decisions.md).
 */
import type Database from 'better-sqlite3';
import type { Db } from './db.js';

type Method = (...args: unknown[]) => unknown;
type Methods = Record<'get' | 'all' | 'iterate' | 'run', Method>;

/**
 * Installs the turn's read transaction on `db`, and `failed` on what its entry points throw; call it
 * before anything prepares statements.
 */
export function readInTurns(db: Db, failed: (err: unknown) => unknown = (err) => err): void {
  const begin = db.prepare('BEGIN');
  const commit = db.prepare('COMMIT');
  /** True while the transaction open on the connection is the turn's read transaction. */
  let open = false;
  const end = (): void => {
    if (!open) return;
    open = false;
    if (db.inTransaction) commit.run();
  };
  const start = (): void => {
    // Inside another transaction (a write's, readTogether's, the key store's) a read is part of it.
    if (open || db.inTransaction) return;
    begin.run();
    open = true;
    setImmediate(end);
  };
  const before = (hook: () => void, fn: Method): Method =>
    function (this: unknown, ...args: unknown[]) {
      try {
        hook();
        return fn.apply(this, args);
      } catch (err) {
        throw failed(err);
      }
    };

  const prepare = db.prepare.bind(db) as (source: string) => Database.Statement;
  const prepared = (source: string): Database.Statement => {
    const statement = prepare(source);
    const methods = statement as unknown as Methods;
    // A read-only statement reads in the turn's transaction; any other (INSERT ... RETURNING
    // included, whatever method runs it) writes after it.
    const hook = statement.readonly ? start : end;
    for (const name of statement.readonly ? (['get', 'all', 'iterate'] as const) : (['get', 'all', 'iterate', 'run'] as const)) {
      methods[name] = before(hook, methods[name].bind(statement));
    }
    return statement;
  };
  const transaction = db.transaction.bind(db);
  const writer = db as unknown as Record<'prepare' | 'transaction' | 'exec' | 'pragma' | 'backup' | 'close', Method>;
  writer.prepare = prepared as Method;
  writer.transaction = ((fn: Method) => {
    const run = transaction(fn);
    // Its variants (deferred, immediate, exclusive) keep their own behaviour after the same step.
    return Object.assign(before(end, run), {
      deferred: before(end, run.deferred),
      immediate: before(end, run.immediate),
      exclusive: before(end, run.exclusive),
    });
  }) as Method;
  for (const name of ['exec', 'pragma', 'backup', 'close'] as const) writer[name] = before(end, writer[name].bind(db));
}
