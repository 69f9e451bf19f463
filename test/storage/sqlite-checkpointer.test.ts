/**
 * WAL checkpoints on a worker thread (src/storage/sqlite/checkpointer.ts, workers/sqlite-checkpoint.ts):
 * the thread starts only once the WAL has grown, copies committed pages into the database file on
 * its own connection, leaves the service's own checkpoints able to start the WAL over (the WAL
 * stays bounded under sustained writes), stops before the service's connection closes, and without
 * its compiled file nothing starts and nothing else changes.
 */
import Database from 'better-sqlite3';
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BackgroundCheckpointer, CHECKPOINT_WORKER_FILE, SERVICE_CHECKPOINT_PAGES, SERVICE_CHECKPOINT_PAGES_WITH_THREAD } from '../../src/storage/sqlite/checkpointer.js';
import { openSqlite } from '../../src/storage/sqlite/db.js';
import { SqliteStorage } from '../../src/storage/sqlite/index.js';

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-ckpt-'));
  path = join(dir, 'svc.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const KB = 'x'.repeat(1000);
const sizeOf = (file: string) => statSync(file).size;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await sleep(10);
  }
}

/** The WAL header's checkpoint sequence (bytes 12-15, big-endian): SQLite bumps it each time the WAL starts over. */
function walCheckpointSequence(file: string): number {
  const fd = openSync(file, 'r');
  try {
    const header = Buffer.alloc(16);
    readSync(fd, header, 0, 16, 0);
    return header.readUInt32BE(12);
  } finally {
    closeSync(fd);
  }
}

/** `rows` rows of ~1 KB in transactions of 100, a turn of the event loop between them. */
async function write(db: Database.Database, rows: number, from = 0, afterBatch?: () => void): Promise<void> {
  const insert = db.prepare("INSERT INTO oidc_payloads (tenant_id, model, id, payload, expires_at) VALUES ('t', 'AccessToken', ?, ?, NULL)");
  const batch = db.transaction((start: number) => {
    for (let i = start; i < start + 100; i++) insert.run(`id-${i}`, KB);
  });
  for (let i = from; i < from + rows; i += 100) {
    batch(i);
    afterBatch?.();
    await new Promise((r) => setImmediate(r));
  }
}

describe('SQLite WAL checkpoints on a worker thread', () => {
  it('the compiled worker exists (npm test builds first)', () => {
    expect(sizeOf(CHECKPOINT_WORKER_FILE)).toBeGreaterThan(0);
  });

  it('starts once the WAL has grown, then copies committed pages into the database file', async () => {
    const db = openSqlite(path);
    // Only the thread checkpoints here: the file grows only if it does.
    db.pragma('wal_autocheckpoint = 0');
    const ckpt = new BackgroundCheckpointer(path, { startBytes: 1024 * 1024, watchMs: 10, intervalMs: 10 });
    try {
      await write(db, 100);
      await sleep(60);
      expect(ckpt.running, 'not started for a small WAL').toBe(false);
      const fileBefore = sizeOf(path);
      await write(db, 2000, 100);
      await until(() => ckpt.running);
      await until(() => sizeOf(path) > fileBefore + 1900 * 1000);
      expect(db.prepare('SELECT count(*) FROM oidc_payloads').pluck().get()).toBe(2100);
    } finally {
      await ckpt.close();
      db.close();
    }
    expect(ckpt.running).toBe(false);
    const reopened = new Database(path, { readonly: true });
    expect(reopened.prepare('SELECT count(*) FROM oidc_payloads').pluck().get()).toBe(2100);
    reopened.close();
  });

  it('under sustained writes the WAL stays bounded: the service checkpoint still starts it over', async () => {
    const db = openSqlite(path);
    const ckpt = new BackgroundCheckpointer(path, { startBytes: 256 * 1024, watchMs: 10 });
    try {
      // ~40 MB written as fast as SQLite takes it; without the WAL starting over it would hold every
      // frame (~70 MB). The thread's PASSIVE checkpoints never quite catch up with the last commit;
      // the service's own (SQLite's default, 1,000 pages here: no connection was handed over) does,
      // and the next write starts the WAL over; the thread gives way at that size. Each start-over
      // bumps the checkpoint sequence in the WAL's header, counted here between batches (17-18 here;
      // 1 with the service's checkpoint turned off, ~70 MB left). The file's size is its high-water
      // mark, which depends on how long one of the thread's fsyncs takes (4-6 MB on a quiet machine,
      // 40 MB once on a CI machine with both cores and the disk loaded), so it is held only to less
      // than never starting over would leave.
      const sequences = new Set<number>();
      await write(db, 40000, 0, () => sequences.add(walCheckpointSequence(`${path}-wal`)));
      expect(ckpt.running).toBe(true);
      expect(sequences.size, 'the WAL started over again and again').toBeGreaterThanOrEqual(3);
      expect(sizeOf(`${path}-wal`)).toBeLessThan(60 * 1024 * 1024);
      expect(db.prepare('SELECT count(*) FROM oidc_payloads').pluck().get()).toBe(40000);
    } finally {
      await ckpt.close();
      db.close();
    }
  });

  it('without the compiled worker file nothing starts, and writes go on as before', async () => {
    const db = openSqlite(path);
    const ckpt = new BackgroundCheckpointer(path, { workerFile: join(dir, 'missing.js'), startBytes: 1024, watchMs: 10 });
    try {
      await write(db, 1000);
      await sleep(50);
      expect(ckpt.running).toBe(false);
      ckpt.start();
      expect(ckpt.running).toBe(false);
    } finally {
      await ckpt.close();
      db.close();
    }
  });

  it('a worker that cannot open the file reports it, and is gone', async () => {
    const errors: string[] = [];
    const db = openSqlite(path);
    const ckpt = new BackgroundCheckpointer(join(dir, 'nowhere', 'svc.db'), { db, onError: (m) => errors.push(m) });
    ckpt.start();
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(SERVICE_CHECKPOINT_PAGES_WITH_THREAD);
    await until(() => !ckpt.running && errors.length > 0);
    // Gone: the service's connection checkpoints as SQLite does by default again.
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(SERVICE_CHECKPOINT_PAGES);
    db.close();
    expect(errors[0]).toMatch(/unable to open|no such|directory/i);
    await ckpt.close();
  });

  it('the storage stops its thread on close, before closing its own connection', async () => {
    const storage = SqliteStorage.open(path);
    const ckpt = (storage as unknown as { checkpointer: BackgroundCheckpointer }).checkpointer;
    expect(ckpt).toBeInstanceOf(BackgroundCheckpointer);
    const autocheckpoint = () => storage.db.pragma('wal_autocheckpoint', { simple: true });
    expect(autocheckpoint()).toBe(SERVICE_CHECKPOINT_PAGES);
    ckpt.start();
    expect(ckpt.running).toBe(true);
    // The service's own checkpoint, still the bound of the WAL, comes rarer while the thread runs.
    expect(autocheckpoint()).toBe(SERVICE_CHECKPOINT_PAGES_WITH_THREAD);
    await storage.close();
    expect(ckpt.running).toBe(false);
    expect(storage.db.open).toBe(false);
    // Closed for good: a later look at a large WAL starts nothing.
    ckpt.start();
    expect(ckpt.running).toBe(false);
  });

  it('an in-memory database gets no thread', async () => {
    const storage = SqliteStorage.open(':memory:');
    expect((storage as unknown as { checkpointer?: unknown }).checkpointer).toBeUndefined();
    await storage.close();
  });
});
