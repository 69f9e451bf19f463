/**
 * sqlite/turn-reads.ts (issue 17): the service's connection reads a turn of the event loop in one
 * read transaction, and nothing ever writes inside it: every write path commits it first, so a write
 * is committed before its caller goes on (another connection sees it at once) and no read
 * transaction is upgraded to a write one.
 */
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openTempStorage, type TempStorage } from '../helpers/storage.js';

let t: TempStorage;
let other: Database.Database;
beforeEach(() => {
  t = openTempStorage();
  t.storage.db.exec('CREATE TABLE turn_probe (id INTEGER PRIMARY KEY, v TEXT)');
  other = new Database(t.path);
});
afterEach(async () => {
  other.close();
  await t.close();
});

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
const otherSees = (id: number) => other.prepare('SELECT v FROM turn_probe WHERE id = ?').pluck().get(id);

describe('one read transaction per turn (SQLite)', () => {
  it('opens at the first read of a turn and is committed at its check phase', async () => {
    const { db } = t.storage;
    expect(db.inTransaction).toBe(false);
    db.prepare('SELECT count(*) FROM turn_probe').get();
    expect(db.inTransaction).toBe(true);
    db.prepare('SELECT 1').all();
    expect(db.inTransaction).toBe(true);
    await nextTurn();
    expect(db.inTransaction).toBe(false);
  });

  it('reads one snapshot in a turn: another connection’s commit shows from the next turn', async () => {
    const read = t.storage.db.prepare('SELECT v FROM turn_probe WHERE id = 1').pluck();
    expect(read.get()).toBeUndefined();
    other.prepare("INSERT INTO turn_probe VALUES (1, 'theirs')").run();
    await Promise.resolve();
    expect(read.get()).toBeUndefined();
    await nextTurn();
    expect(read.get()).toBe('theirs');
  });

  it('commits it before a write statement runs, by any method, so the write is durable at once', () => {
    const { db } = t.storage;
    const read = db.prepare('SELECT count(*) FROM turn_probe').pluck();
    read.get();
    db.prepare("INSERT INTO turn_probe VALUES (1, 'run')").run();
    expect(db.inTransaction).toBe(false);
    expect(otherSees(1)).toBe('run');

    read.get();
    // A write that returns rows is still a write.
    expect(db.prepare("INSERT INTO turn_probe VALUES (2, 'returning') RETURNING id").pluck().get()).toBe(2);
    expect(db.inTransaction).toBe(false);
    expect(otherSees(2)).toBe('returning');

    read.get();
    expect(db.prepare("UPDATE turn_probe SET v = 'all' WHERE id = 1 RETURNING v").pluck().all()).toEqual(['all']);
    expect(otherSees(1)).toBe('all');

    read.get();
    expect([...db.prepare("DELETE FROM turn_probe WHERE id = 2 RETURNING id").pluck().iterate()]).toEqual([2]);
    expect(otherSees(2)).toBeUndefined();
  });

  it('commits it before transaction(), each of its variants, exec and pragma', () => {
    const { db } = t.storage;
    const read = db.prepare('SELECT count(*) FROM turn_probe').pluck();
    const insert = db.prepare('INSERT INTO turn_probe VALUES (?, ?)');
    const both = db.transaction((id: number) => {
      insert.run(id, 'tx');
      insert.run(id + 100, 'tx');
    });
    const variants: Array<[string, (id: number) => void]> = [
      ['default', both],
      ['deferred', both.deferred],
      ['immediate', both.immediate],
      ['exclusive', both.exclusive],
    ];
    let id = 10;
    for (const [, run] of variants) {
      read.get();
      run(++id);
      expect(db.inTransaction).toBe(false);
      expect(otherSees(id)).toBe('tx');
      expect(otherSees(id + 100)).toBe('tx');
    }

    read.get();
    db.exec("INSERT INTO turn_probe VALUES (50, 'exec')");
    expect(db.inTransaction).toBe(false);
    expect(otherSees(50)).toBe('exec');

    read.get();
    db.pragma('user_version = 7');
    expect(db.inTransaction).toBe(false);
    expect(other.pragma('user_version', { simple: true })).toBe(7);
  });

  it('a read inside another transaction is part of it and opens nothing', () => {
    const { db } = t.storage;
    const read = db.prepare('SELECT count(*) FROM turn_probe').pluck();
    const insert = db.prepare('INSERT INTO turn_probe VALUES (?, ?)');
    const counted = db.transaction(() => {
      insert.run(1, 'a');
      return read.get();
    });
    expect(counted()).toBe(1);
    expect(db.inTransaction).toBe(false);
    expect(otherSees(1)).toBe('a');
    expect(t.storage.readTogether(() => read.get())).toBe(1);
    expect(db.inTransaction).toBe(false);
  });

  it('keeps the group commit durable: a queued OIDC write is committed outside it, and a read after it sees it', async () => {
    const { storage } = t;
    expect(await storage.oidc.find('default', 'Grant', 'g1')).toBeUndefined();
    expect(storage.db.inTransaction).toBe(true);
    await storage.oidc.upsert('default', 'Grant', 'g1', { jti: 'g1', n: 1 }, null);
    expect(other.prepare("SELECT payload FROM oidc_payloads WHERE model = 'Grant' AND id = 'g1'").pluck().get()).toBe('{"jti":"g1","n":1}');
    expect((await storage.oidc.find('default', 'Grant', 'g1'))?.payload).toEqual({ jti: 'g1', n: 1 });
  });

  it('keeps the key store’s transaction (BEGIN IMMEDIATE through exec) whole, and commits it', async () => {
    const { storage } = t;
    const read = storage.db.prepare('SELECT count(*) FROM turn_probe').pluck();
    read.get();
    await storage.keys.transaction('default', async () => {
      storage.db.prepare("INSERT INTO turn_probe VALUES (1, 'keys')").run();
      await nextTurn();
      // Still the key store's transaction: a read here neither ends it nor opens another.
      expect(read.get()).toBe(1);
      expect(otherSees(1)).toBeUndefined();
    });
    expect(storage.db.inTransaction).toBe(false);
    expect(otherSees(1)).toBe('keys');
  });

  it('closes cleanly with the turn’s transaction open', async () => {
    t.storage.db.prepare('SELECT 1').get();
    await t.storage.close();
    t.storage = (await import('../../src/storage/sqlite/index.js')).SqliteStorage.open(t.path);
    expect(t.storage.db.prepare('SELECT count(*) FROM turn_probe').pluck().get()).toBe(0);
  });
});
