/**
 * Worker thread of src/storage/sqlite/checkpointer.ts: copies the WAL's committed pages into the
 * database file on a connection of its own, so the fsyncs of a checkpoint wait here and not on the
 * event loop. PASSIVE: it never waits for the service's reads or writes, and copies what it can.
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
}

const { path, intervalMs } = workerData as CheckpointWorkerData;
const db = new Database(path, { fileMustExist: true });
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
let lastError = '';

const timer = setInterval(() => {
  try {
    checkpoint.run();
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
