/**
 * Group commit of the OIDC artefacts on SQLite (src/storage/sqlite/write-batch.ts): the writes of
 * one event-loop turn commit together, a caller's promise settles only after its commit, every read
 * sees the writes queued before it, one failing write rejects only its own caller, and close()
 * commits what is queued.
 */
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WriteBatch } from '../../src/storage/sqlite/write-batch.js';
import { openTempStorage, type TempStorage } from '../helpers/storage.js';

let t: TempStorage;
beforeEach(() => {
  t = openTempStorage();
});
afterEach(async () => t.close());

/** Rows as another connection sees them: only what is committed. */
function committed(model: string): number {
  const other = new Database(t.storage.db.name, { readonly: true });
  try {
    return (other.prepare('SELECT count(*) AS n FROM oidc_payloads WHERE model = ?').get(model) as { n: number }).n;
  } finally {
    other.close();
  }
}

describe('the OIDC artefacts on SQLite, group-committed', () => {
  it('commit the writes of one turn together, and settle each caller only once committed', async () => {
    const oidc = t.storage.oidc;
    let settled = 0;
    const writes = Array.from({ length: 20 }, (_, i) => oidc.upsert('default', 'AccessToken', `at-${i}`, { jti: `at-${i}` }, null).then(() => settled++));
    expect(committed('AccessToken')).toBe(0);
    expect(settled).toBe(0);
    await Promise.all(writes);
    expect(settled).toBe(20);
    expect(committed('AccessToken')).toBe(20);
  });

  it('let every read see the writes queued before it (find, consume, destroy, revoke, lists)', async () => {
    const oidc = t.storage.oidc;
    void oidc.upsert('default', 'Grant', 'g1', { jti: 'g1', accountId: 'u1', clientId: 'c1' }, null);
    void oidc.upsert('default', 'RefreshToken', 'rt1', { jti: 'rt1', grantId: 'g1' }, null);
    expect((await oidc.find('default', 'RefreshToken', 'rt1'))?.consumed).toBe(false);
    void oidc.consume('default', 'RefreshToken', 'rt1');
    expect((await oidc.find('default', 'RefreshToken', 'rt1'))?.consumed).toBe(true);
    expect(await oidc.listGrantIds('default', { accountId: 'u1' })).toEqual(['g1']);
    void oidc.revokeByGrantId('default', 'g1');
    expect(await oidc.find('default', 'RefreshToken', 'rt1')).toBeUndefined();
    void oidc.upsert('default', 'Session', 's1', { jti: 's1', uid: 'uid-1', accountId: 'u1' }, null);
    expect((await oidc.findByUid('default', 'Session', 'uid-1'))?.payload.jti).toBe('s1');
    void oidc.destroy('default', 'Session', 's1');
    expect(await oidc.countLive('default', 'Session')).toBe(0);
  });

  it('leave the queue alone on a point read of another row, and answer a read of a queued row after its group commit', async () => {
    const oidc = t.storage.oidc;
    const write = oidc.upsert('default', 'AccessToken', 'a1', { jti: 'a1' }, null);
    expect(await oidc.find('default', 'AccessToken', 'other')).toBeUndefined();
    expect(committed('AccessToken')).toBe(0);
    const read = oidc.find('default', 'AccessToken', 'a1');
    // The read waits for the turn's commit instead of forcing one: a write queued after it in the
    // same turn is committed with the first (one commit, not one per read).
    const later = oidc.upsert('default', 'AccessToken', 'a2', { jti: 'a2' }, null);
    expect(committed('AccessToken')).toBe(0);
    expect((await read)?.payload).toEqual({ jti: 'a1' });
    expect(committed('AccessToken')).toBe(2);
    await Promise.all([write, later]);
  });

  it('answer every read of a hot row with a committed state (fifty renewals of one session in one turn)', async () => {
    const oidc = t.storage.oidc;
    await oidc.upsert('default', 'Session', 'hot', { jti: 'hot', uid: 'uid-hot', n: 0 }, null);
    // Fifty requests of one session in one turn, each reading it and writing it again (a renewal).
    const requests = Array.from({ length: 50 }, async (_, i) => {
      const seen = await oidc.find('default', 'Session', 'hot');
      await oidc.upsert('default', 'Session', 'hot', { jti: 'hot', uid: 'uid-hot', n: i + 1 }, null);
      return seen?.payload.n;
    });
    const seen = await Promise.all(requests);
    // The first read found nothing queued; each later read waited for the commit before it, so
    // every answer is a committed state, and the last write wins.
    expect(seen.every((n) => typeof n === 'number')).toBe(true);
    expect((await oidc.find('default', 'Session', 'hot'))?.payload.n).toBeGreaterThan(0);
  });

  it('wait for the commit before a lookup by uid only when a queued write concerns that uid or removes a row of that model', async () => {
    const oidc = t.storage.oidc;
    const first = oidc.upsert('default', 'Session', 's1', { jti: 's1', uid: 'uid-1', accountId: 'u1' }, null);
    // Another session's uid: the queue stays, the committed state answers.
    expect(await oidc.findByUid('default', 'Session', 'uid-2')).toBeUndefined();
    expect(committed('Session')).toBe(0);
    // The queued session's own uid: committed first, then found.
    expect((await oidc.findByUid('default', 'Session', 'uid-1'))?.payload.jti).toBe('s1');
    expect(committed('Session')).toBe(1);
    await first;
    // A queued destroy of a Session: a lookup by any uid of that model commits it first.
    void oidc.destroy('default', 'Session', 's1');
    expect(await oidc.findByUid('default', 'Session', 'uid-1')).toBeUndefined();
    expect(committed('Session')).toBe(0);
    // A queued write of another model leaves a Session lookup alone.
    const other = oidc.upsert('default', 'Interaction', 'i1', { jti: 'i1', uid: 'uid-1' }, null);
    expect(await oidc.findByUid('default', 'Session', 'uid-1')).toBeUndefined();
    expect(committed('Interaction')).toBe(0);
    await other;
  });

  it('close() commits what is still queued', async () => {
    const write = t.storage.oidc.upsert('default', 'AuthorizationCode', 'c1', { jti: 'c1' }, null);
    await t.storage.close();
    await write;
    const again = await t.reopen();
    expect((await again.oidc.find('default', 'AuthorizationCode', 'c1'))?.payload).toEqual({ jti: 'c1' });
  });
});

describe('WriteBatch', () => {
  it('rejects only the failing write; the others of its commit are written', async () => {
    const db = t.storage.db;
    db.exec('CREATE TABLE wb (k TEXT PRIMARY KEY)');
    const batch = new WriteBatch(db);
    const insert = db.prepare('INSERT INTO wb (k) VALUES (?)');
    const results = await Promise.allSettled([batch.write(undefined, () => insert.run('a')), batch.write(undefined, () => insert.run('a')), batch.write(undefined, () => insert.run('b'))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
    expect(db.prepare('SELECT k FROM wb ORDER BY k').pluck().all()).toEqual(['a', 'b']);
  });

  it('commits the others of a turn whose failing write is in the middle, each with its caller settled once', async () => {
    const db = t.storage.db;
    db.exec('CREATE TABLE wb (k TEXT PRIMARY KEY)');
    db.prepare("INSERT INTO wb (k) VALUES ('taken')").run();
    const batch = new WriteBatch(db);
    const insert = db.prepare('INSERT INTO wb (k) VALUES (?)');
    const keys = ['x1', 'x2', 'taken', 'x3', 'x4'];
    const results = await Promise.allSettled(keys.map((k) => batch.write([k], () => insert.run(k))));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(db.prepare('SELECT k FROM wb ORDER BY k').pluck().all()).toEqual(['taken', 'x1', 'x2', 'x3', 'x4']);
  });

  it('wakes a read waiting for a commit that failed, after the failing write was rejected', async () => {
    const db = t.storage.db;
    db.exec('CREATE TABLE wb (k TEXT PRIMARY KEY)');
    db.prepare("INSERT INTO wb (k) VALUES ('taken')").run();
    const batch = new WriteBatch(db);
    const insert = db.prepare('INSERT INTO wb (k) VALUES (?)');
    const order: string[] = [];
    const write = batch.write(['taken'], () => insert.run('taken')).catch(() => order.push('write rejected'));
    expect(batch.committedFor('other')).toBeUndefined();
    const waiting = batch.committedFor('taken')!.then(() => order.push('read woken'));
    await Promise.all([write, waiting]);
    expect(order).toEqual(['write rejected', 'read woken']);
    expect(batch.pending).toBe(false);
  });

  it('rejects every write of a commit that cannot happen (database closed)', async () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE wb (k TEXT)');
    const batch = new WriteBatch(db);
    const insert = db.prepare('INSERT INTO wb (k) VALUES (?)');
    const writes = [batch.write(undefined, () => insert.run('a')), batch.write(undefined, () => insert.run('b'))];
    db.close();
    const results = await Promise.allSettled(writes);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });
});
