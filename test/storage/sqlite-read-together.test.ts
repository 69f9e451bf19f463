/**
 * SqliteStorage.readTogether (issue 17): the reads a hot path starts at once (userinfo's session,
 * grant, client and user) run in one read transaction, so the WAL read lock is taken once. It
 * must never hold a write: with a write waiting for the group commit it opens nothing, and a
 * transaction already open is left as it is.
 */
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openTempStorage, type TempStorage } from '../helpers/storage.js';

let t: TempStorage;
beforeEach(() => {
  t = openTempStorage();
});
afterEach(async () => t.close());

const payloadOf = async (p: Promise<{ payload: Record<string, unknown> } | undefined>) => (await p)?.payload;

describe('SqliteStorage.readTogether', () => {
  it('runs the reads in one transaction, returns what they return, and ends it', async () => {
    const { storage } = t;
    await storage.oidc.upsert('default', 'Grant', 'g1', { jti: 'g1' }, null);
    await storage.oidc.upsert('default', 'AccessToken', 'at1', { jti: 'at1' }, null);
    let inside = false;
    const reads = storage.readTogether(() => {
      inside = storage.db.inTransaction;
      return Promise.all([payloadOf(storage.oidc.find('default', 'Grant', 'g1')), payloadOf(storage.oidc.find('default', 'AccessToken', 'at1'))]);
    });
    expect(inside).toBe(true);
    expect(storage.db.inTransaction).toBe(false);
    expect(await reads).toEqual([{ jti: 'g1' }, { jti: 'at1' }]);
  });

  it('answers from one snapshot: a write by another connection meanwhile is seen only after it', async () => {
    const { storage } = t;
    await storage.oidc.upsert('default', 'Grant', 'g1', { jti: 'g1', n: 1 }, null);
    const other = new Database(storage.db.name);
    try {
      const seen = storage.readTogether(() => {
        const first = storage.oidc.find('default', 'Grant', 'g1');
        other.prepare("UPDATE oidc_payloads SET payload = ? WHERE model = 'Grant' AND id = 'g1'").run(JSON.stringify({ jti: 'g1', n: 2 }));
        return Promise.all([payloadOf(first), payloadOf(storage.oidc.find('default', 'Grant', 'g1'))]);
      });
      expect(await seen).toEqual([{ jti: 'g1', n: 1 }, { jti: 'g1', n: 1 }]);
      expect(await payloadOf(storage.oidc.find('default', 'Grant', 'g1'))).toEqual({ jti: 'g1', n: 2 });
    } finally {
      other.close();
    }
  });

  it('opens nothing while a write waits for the group commit: the read commits it first, as always', async () => {
    const { storage } = t;
    const write = storage.oidc.upsert('default', 'Grant', 'g2', { jti: 'g2' }, null);
    let inside = true;
    const read = storage.readTogether(() => {
      inside = storage.db.inTransaction;
      return payloadOf(storage.oidc.find('default', 'Grant', 'g2'));
    });
    expect(inside).toBe(false);
    expect(await read).toEqual({ jti: 'g2' });
    await write;
    // Committed: another connection sees it.
    const other = new Database(storage.db.name, { readonly: true });
    try {
      expect(other.prepare("SELECT count(*) AS n FROM oidc_payloads WHERE id = 'g2'").get()).toEqual({ n: 1 });
    } finally {
      other.close();
    }
  });

  it('leaves a transaction already open as it is (nested), and ends its own when the reads throw', () => {
    const { storage } = t;
    const nested = storage.readTogether(() => storage.readTogether(() => storage.db.inTransaction));
    expect(nested).toBe(true);
    expect(storage.db.inTransaction).toBe(false);
    expect(() =>
      storage.readTogether(() => {
        throw new Error('a read failed');
      }),
    ).toThrow('a read failed');
    expect(storage.db.inTransaction).toBe(false);
  });
});
