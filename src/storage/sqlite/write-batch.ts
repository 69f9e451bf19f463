/**
 * Group commit for the OIDC artefacts on SQLite (issue 17). A write is queued and the caller's
 * promise settles once the transaction holding it has committed: every write queued during one
 * turn of the event loop is committed together at the next check phase (setImmediate). Nothing is
 * acknowledged before it is committed, so a killed process loses no write a caller was told of.
 *
 * Why: in WAL mode each commit appends every page it changed to the WAL. Concurrent requests'
 * rows land on the same table and index pages, so fifty requests' writes in one commit write
 * those pages once instead of fifty times (a refresh's three writes: ~210-270 µs of CPU one commit
 * each, ~130-145 µs in commits of 50, measured on this machine with the product's schema).
 *
 * The writes of a turn run in one transaction with no savepoints (a SAVEPOINT and RELEASE per
 * write cost more than the write). If one of them throws (a constraint, a bad value), that
 * transaction is rolled back and each write is run again in a transaction of its own, so the
 * failing one rejects only its caller and the others commit.
 *
 * Reads must see every write queued before them. Each write names the keys it concerns (its row,
 * and whatever else a read may look it up by); a point read names the keys it looks at and, when a
 * queued write shares one, waits for that group commit before reading (committedFor); a read that
 * cannot name its keys commits the queue first (flush). A write that names no keys may touch any
 * row (a revocation by grant).
 *
 * Why a point read waits rather than commits at once: a row many requests touch (one session
 * renewed from several tabs or connections) would otherwise force a commit of whatever is queued on
 * nearly every request, and the writes of a turn would stop being committed together.
 */
import type { Db } from './db.js';

interface Op {
  run: () => void;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class WriteBatch {
  private queue: Op[] = [];
  private scheduled = false;
  /** Keys of the queued writes, and whether a queued write may touch any row. */
  private readonly keys = new Set<string>();
  private anyRow = false;
  /** Reads waiting for the queued writes' commit (committedFor). */
  private waiters: Array<() => void> = [];
  private readonly commitAll: (ops: Op[]) => void;
  private readonly commitOne: (op: Op) => void;

  constructor(db: Db) {
    this.commitAll = db.transaction((ops: Op[]) => {
      for (const op of ops) op.run();
    });
    this.commitOne = db.transaction((op: Op) => op.run());
  }

  /**
   * Queues a write concerning `keys` (undefined: possibly any row); resolves once it is committed,
   * rejects with its own error.
   */
  write(keys: readonly string[] | undefined, run: () => void): Promise<void> {
    if (keys === undefined) this.anyRow = true;
    else for (const key of keys) this.keys.add(key);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ run, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.flush();
        });
      }
    });
  }

  /**
   * Before a point read that looks at `keys`: when a queued write concerns one of them, a promise
   * that settles once the queue has been committed (whether or not every write succeeded: the read
   * then sees what was committed); otherwise undefined, and the committed state is the current one.
   * A read of other rows leaves the queue to grow (reads interleave with every request's writes).
   */
  committedFor(...keys: string[]): Promise<void> | undefined {
    if (!this.queue.length) return undefined;
    if (!this.anyRow && !keys.some((key) => this.keys.has(key))) return undefined;
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** True while a write waits for its commit. */
  get pending(): boolean {
    return this.queue.length > 0;
  }

  /** Commits what is queued now (before a read that cannot name its keys, at close). */
  flush(): void {
    if (!this.queue.length) return;
    const ops = this.queue;
    const waiters = this.waiters;
    this.queue = [];
    this.waiters = [];
    this.keys.clear();
    this.anyRow = false;
    try {
      this.commitAll(ops);
    } catch {
      // Rolled back. Once more one by one: a bad write fails alone, and a commit that cannot
      // happen at all (disk full, database closed) fails every one with its own error.
      for (const op of ops) {
        try {
          this.commitOne(op);
        } catch (err) {
          op.reject(err);
          continue;
        }
        op.resolve();
      }
      for (const wake of waiters) wake();
      return;
    }
    for (const op of ops) op.resolve();
    for (const wake of waiters) wake();
  }
}
