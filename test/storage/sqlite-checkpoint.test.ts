/**
 * WAL checkpoints from a worker thread (src/storage/sqlite/checkpointer.ts): the event loop's
 * connection does none, the worker keeps the WAL from growing, and a killed process loses no
 * acknowledged write (the WAL is replayed on the next open).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { CHECKPOINT_WORKER_FILE } from '../../src/storage/sqlite/checkpointer.js';
import { SqliteStorage } from '../../src/storage/sqlite/index.js';
import { openTempStorage, type TempStorage } from '../helpers/storage.js';

const DIST_SQLITE = new URL('../../dist/src/storage/sqlite/index.js', import.meta.url).pathname;
const exp = () => Math.floor(Date.now() / 1000) + 3600;

describe('SQLite WAL checkpoints', () => {
  let t: TempStorage | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('is built (the worker runs compiled, like the Argon2 pool)', () => {
    expect(existsSync(CHECKPOINT_WORKER_FILE)).toBe(true);
  });

  it('leaves checkpoints to the worker: none on the event loop connection, the WAL is still emptied', async () => {
    t = openTempStorage();
    const db = t.storage.db;
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    for (let i = 0; i < 300; i++) await t.storage.oidc.upsert('t1', 'AccessToken', `at-${i}`, { jti: `at-${i}`, pad: 'x'.repeat(2000) }, exp());
    // Frames written so far end up in the main file without the event loop checkpointing.
    const mainBefore = statSync(t.path).size;
    await expect.poll(() => statSync(t!.path).size, { timeout: 5000, interval: 50 }).toBeGreaterThan(mainBefore);
    // Every frame checkpointed: a PASSIVE checkpoint from here has nothing left to copy.
    await expect
      .poll(() => {
        const [r] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number; checkpointed: number }>;
        return r!.log === r!.checkpointed;
      }, { timeout: 5000, interval: 50 })
      .toBe(true);
    expect((await t.storage.oidc.find('t1', 'AccessToken', 'at-299'))?.payload.jti).toBe('at-299');
  });

  it('an in-memory database keeps SQLite automatic checkpoints (no worker)', async () => {
    const mem = SqliteStorage.open(':memory:');
    try {
      expect(mem.db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    } finally {
      await mem.close();
    }
  });

  it('a process killed right after a write loses nothing: consumed stays consumed, the new token exists', async () => {
    t = openTempStorage();
    await t.storage.oidc.upsert('t1', 'RefreshToken', 'rt-old', { jti: 'rt-old', grantId: 'g1' }, exp());
    await t.storage.close();
    // A child process consumes the old token, writes its successor, then is killed (SIGKILL) at once:
    // no close, no checkpoint.
    const script = `
      import { SqliteStorage } from ${JSON.stringify(DIST_SQLITE)};
      const s = SqliteStorage.open(${JSON.stringify(t.path)});
      await s.oidc.consume('t1', 'RefreshToken', 'rt-old');
      await s.oidc.upsert('t1', 'RefreshToken', 'rt-new', { jti: 'rt-new', grantId: 'g1' }, ${exp()});
      process.kill(process.pid, 'SIGKILL');
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(child.signal).toBe('SIGKILL');
    const s = await t.reopen();
    expect((await s.oidc.find('t1', 'RefreshToken', 'rt-old'))?.consumed).toBe(true);
    expect((await s.oidc.find('t1', 'RefreshToken', 'rt-new'))?.payload.jti).toBe('rt-new');
  });
});
