/**
 * Worker thread that checkpoints the SQLite write-ahead log (see src/storage/sqlite/checkpointer.ts).
 * Its own connection to the same file: a PASSIVE checkpoint copies committed WAL frames into the
 * database file and fsyncs, concurrently with the event loop's reads and writes, never waiting for
 * them. Commits stay durable exactly as before: a commit is durable once it is in the WAL; the
 * checkpoint only moves it to the main file.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

export interface CheckpointWorkerData {
  path: string;
  /** Milliseconds between checkpoints. */
  intervalMs: number;
}

const { path, intervalMs } = workerData as CheckpointWorkerData;
const db = new Database(path, { fileMustExist: true });
db.pragma('busy_timeout = 0');

const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (err) {
    // SQLITE_BUSY (another checkpoint, e.g. a CLI process's, is running): the next tick retries.
    if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
  }
}, intervalMs);

parentPort?.on('message', (msg: unknown) => {
  if (msg !== 'close') return;
  clearInterval(timer);
  db.close();
  parentPort?.close();
});
