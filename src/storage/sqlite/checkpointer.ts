/**
 * WAL checkpoints off the event loop (issue 17). SQLite's automatic checkpoint runs inside the
 * commit that crosses 1,000 WAL pages, on the connection that committed: with every request's
 * writes on the event loop, one request in a few dozen paid for copying the pages into the
 * database file and two fsyncs, stalling every other request meanwhile. Here the main connection
 * does no automatic checkpoint; a worker thread (workers/sqlite-checkpoint.ts) runs a PASSIVE
 * checkpoint on its own connection a few times a second.
 *
 * Durability is unchanged: a transaction is durable once its frames are in the WAL (journal_mode
 * WAL, synchronous NORMAL), whoever checkpoints later; a killed process loses nothing, the next
 * open replays the WAL. Should the worker be missing (sources run without a build) or die, the
 * main connection goes back to automatic checkpoints so the WAL never grows without bound.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { PROJECT_ROOT } from '../../paths.js';
import type { CheckpointWorkerData } from '../../../workers/sqlite-checkpoint.js';
import type { Db } from './db.js';

export const CHECKPOINT_WORKER_FILE = join(PROJECT_ROOT, 'dist', 'workers', 'sqlite-checkpoint.js');
/** SQLite's default wal_autocheckpoint, restored when the worker is not there. */
const AUTO_CHECKPOINT_PAGES = 1000;
const INTERVAL_MS = 250;

export class WalCheckpointer {
  private stopping = false;

  private constructor(
    private readonly db: Db,
    private readonly worker: Worker,
  ) {
    worker.unref();
    worker.on('error', () => this.fallBack());
    worker.on('exit', () => this.fallBack());
  }

  /** Starts checkpointing `db` (a file, in WAL mode) from a worker; undefined when it cannot. */
  static start(db: Db, path: string): WalCheckpointer | undefined {
    if (path === ':memory:' || !existsSync(CHECKPOINT_WORKER_FILE)) return undefined;
    const data: CheckpointWorkerData = { path, intervalMs: INTERVAL_MS };
    const worker = new Worker(CHECKPOINT_WORKER_FILE, { workerData: data });
    db.pragma('wal_autocheckpoint = 0');
    return new WalCheckpointer(db, worker);
  }

  /** Stops the worker (it closes its connection); the main connection's close then checkpoints. */
  async close(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.postMessage('close');
    const timer = setTimeout(() => void this.worker.terminate(), 5000);
    await exited;
    clearTimeout(timer);
  }

  private fallBack(): void {
    if (this.stopping || !this.db.open) return;
    this.stopping = true;
    this.db.pragma(`wal_autocheckpoint = ${AUTO_CHECKPOINT_PAGES}`);
  }
}
