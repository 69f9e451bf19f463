/**
 * Worker thread of src/storage/sqlite/checkpointer.ts: copies the WAL's committed pages into the
 * database file on a connection of its own, so the fsyncs of a checkpoint wait here and not on the
 * event loop. PASSIVE: it never waits for the service's reads or writes, and copies what it can.
 *
 * Once the WAL holds as many pages as the service's own automatic checkpoint waits for, this thread
 * leaves the checkpoint lock alone for a while: only one checkpoint runs at a time, and under
 * sustained writes a thread that took the lock every turn could keep the service's checkpoint (the
 * one that lets the WAL start over, see checkpointer.ts) from ever running, and the WAL would grow
 * without bound (seen on a loaded CI machine: 14 MB where 4 MB was the service's limit).
 *
 * Messages in: 'close' (stop, close the connection, end the thread). Out: { error } at most once
 * per distinct message (the service logs it; its own checkpoints carry on without this thread).
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';

export interface CheckpointWorkerData {
  /** The database file (its -wal and -shm files sit next to it). */
  path: string;
  /** Milliseconds between checkpoints. */
  intervalMs: number;
  /** The service's automatic checkpoint, in WAL pages (its wal_autocheckpoint). */
  servicePages: number;
}

/** The member of `PRAGMA wal_checkpoint`'s result row read here: pages in the WAL. */
interface CheckpointResult {
  log: number;
}

/** How long the thread stays away from a WAL that the service's own checkpoint is due to take. */
const GIVE_WAY_MS = 50;

const { path, intervalMs, servicePages } = workerData as CheckpointWorkerData;
const db = new Database(path, { fileMustExist: true });
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
let lastError = '';
let resumeAt = 0;

const timer = setInterval(() => {
  if (Date.now() < resumeAt) return;
  try {
    const { log } = checkpoint.get() as CheckpointResult;
    // The service's next commit checkpoints (and its next write then starts the WAL over): let it.
    if (log >= servicePages) resumeAt = Date.now() + Math.max(GIVE_WAY_MS, intervalMs);
  } catch (err) {
    // SQLITE_BUSY (the service's own checkpoint holds the lock) is the normal case of a skipped turn.
    const message = err instanceof Error ? err.message : String(err);
    if (/busy|locked/i.test(message) || message === lastError) return;
    lastError = message;
    parentPort?.postMessage({ error: message });
  }
}, intervalMs);

parentPort?.on('message', (msg: unknown) => {
  if (msg !== 'close') return;
  clearInterval(timer);
  db.close();
  parentPort?.close();
});
