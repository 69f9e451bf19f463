/**
 * WAL checkpoints off the event loop (issue 17). SQLite's automatic checkpoint runs inside the
 * commit that takes the WAL past 1,000 pages: it copies those pages into the database file and
 * fsyncs the WAL and the file, on the thread that committed. Under sustained writes that is the
 * event loop, and an fsync waits for the disk: traced here (sched_switch, state D) at 2-3% of the
 * event loop's time under the refresh and silent re-authentication load, and once 1.7 s in one
 * piece, during which every tenant's requests waited.
 *
 * Once the WAL has grown past START_BYTES (a service under write load, not a CLI command or an idle
 * test), a worker thread (workers/sqlite-checkpoint.ts) runs a PASSIVE checkpoint on a connection
 * of its own every INTERVAL_MS. The service's automatic checkpoint stays on: under sustained writes
 * the worker never quite catches up with the last commit, and only a checkpoint that finds every
 * page copied lets the next write start the WAL over from its beginning. While the thread runs the
 * service's checkpoint comes every 4,000 pages instead of 1,000, and finds all but the last pages
 * copied and synced: it copies a few pages and its fsyncs are short (measured with strace under a
 * write loop: the event loop's fsync time fell from 41-55 ms to 19 ms per 3 s). Only one checkpoint
 * runs at a time, so once the WAL reaches that size the thread stays away for a moment and the
 * service's checkpoint is sure to get its turn (otherwise a busy thread could starve it and the WAL
 * would grow without bound).
 *
 * Nothing changes for durability: a commit is acknowledged as before (synchronous = NORMAL, WAL),
 * and a checkpoint, on whichever connection, only moves committed pages. Without the compiled
 * worker file (a checkout that has not been built), or if the thread fails, the service's own
 * checkpoints do all the work, as before.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { WORKERS_DIR } from '../../paths.js';
import type { CheckpointWorkerData } from '../../../workers/sqlite-checkpoint.js';

export const CHECKPOINT_WORKER_FILE = join(WORKERS_DIR, 'sqlite-checkpoint.js');
/** The WAL size from which the worker starts (256 pages of 4 KiB). */
export const START_BYTES = 1 << 20;
/** How often the WAL size is looked at until the worker runs. */
const WATCH_MS = 1000;
/** Between the worker's checkpoints: at most ~a tenth of a second of commits for the service's own. */
const INTERVAL_MS = 100;

/** SQLite's default automatic checkpoint, in WAL pages: the service's own while no thread runs. */
export const SERVICE_CHECKPOINT_PAGES = 1000;
/**
 * The service's own automatic checkpoint while the thread runs: four times rarer, and each finds all
 * but the last ~0.1 s of commits copied (the WAL file then peaks at ~16 MB instead of ~4 MB, plus
 * what is written during one of the thread's checkpoints).
 */
export const SERVICE_CHECKPOINT_PAGES_WITH_THREAD = 4000;

export interface CheckpointerOptions {
  /** The service's connection, whose automatic checkpoint is spaced out while the thread runs. */
  db?: { pragma(source: string): unknown };
  workerFile?: string;
  startBytes?: number;
  intervalMs?: number;
  watchMs?: number;
  /** A failure of the worker (its message); the service's own checkpoints continue. */
  onError?: (message: string) => void;
}

export class BackgroundCheckpointer {
  private worker: Worker | undefined;
  private watch: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly workerFile: string;
  /** Whether the compiled worker file exists (looked up once). */
  private readonly available: boolean;
  private readonly startBytes: number;
  private readonly intervalMs: number;

  constructor(
    /** The database file. */
    private readonly path: string,
    private readonly opts: CheckpointerOptions = {},
  ) {
    this.workerFile = opts.workerFile ?? CHECKPOINT_WORKER_FILE;
    this.startBytes = opts.startBytes ?? START_BYTES;
    this.intervalMs = opts.intervalMs ?? INTERVAL_MS;
    this.available = existsSync(this.workerFile);
    if (!this.available) return;
    this.watch = setInterval(() => this.look(), opts.watchMs ?? WATCH_MS);
    this.watch.unref();
  }

  /** True once the worker thread runs. */
  get running(): boolean {
    return this.worker !== undefined;
  }

  private look(): void {
    let size = 0;
    try {
      size = statSync(`${this.path}-wal`).size;
    } catch {
      return; // no WAL file yet
    }
    if (size >= this.startBytes) this.start();
  }

  /** Starts the worker now (also what look() does once the WAL is large enough). */
  start(): void {
    if (this.worker || this.closed || !this.available) return;
    clearInterval(this.watch);
    // The service's checkpoint while the thread runs; without its connection at hand it stays at
    // SQLite's default. The thread gives way at exactly this size.
    const servicePages = this.opts.db ? SERVICE_CHECKPOINT_PAGES_WITH_THREAD : SERVICE_CHECKPOINT_PAGES;
    const data: CheckpointWorkerData = { path: this.path, intervalMs: this.intervalMs, servicePages };
    const worker = new Worker(this.workerFile, { workerData: data });
    // It must not keep a process alive that is otherwise done (a CLI command, a test).
    worker.unref();
    worker.on('message', (msg: { error?: string }) => {
      if (typeof msg?.error === 'string') this.opts.onError?.(msg.error);
    });
    worker.on('error', (err) => {
      this.opts.onError?.(err.message);
      if (this.worker === worker) this.stopped();
    });
    worker.on('exit', () => {
      if (this.worker === worker) this.stopped();
    });
    this.worker = worker;
    this.opts.db?.pragma(`wal_autocheckpoint = ${servicePages}`);
  }

  /** The thread is gone: the service's own checkpoints do all the work again. */
  private stopped(): void {
    this.worker = undefined;
    try {
      this.opts.db?.pragma(`wal_autocheckpoint = ${SERVICE_CHECKPOINT_PAGES}`);
    } catch {
      // The connection is already closed.
    }
  }

  /** Stops the worker and waits until its connection is closed (before the service closes its own). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.watch);
    const worker = this.worker;
    if (!worker) return;
    this.stopped();
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage('close');
    const timer = setTimeout(() => void worker.terminate(), 2000);
    await exited;
    clearTimeout(timer);
  }
}
