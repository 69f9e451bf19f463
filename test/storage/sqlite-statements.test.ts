/**
 * The SQLite statement cache (db.ts prepared): statements built per call (list filters, partial
 * updates) are prepared once per connection and SQL text, whatever the page size, and give the
 * same pages as before. Also the hot point reads' statements (issue 17): lookups by uid and user
 * code name their model in the SQL, and a user read in raw mode gives the same record.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { STATEMENT_CACHE_SIZE, keysetPage, prepared } from '../../src/storage/sqlite/db.js';
import type { UserRecord } from '../../src/storage/types.js';
import { clientRecord, openTempStorage, type TempStorage } from '../helpers/storage.js';

let t: TempStorage;
beforeEach(() => {
  t = openTempStorage();
});
afterEach(async () => t.close());

describe('prepared', () => {
  it('returns the same statement for the same SQL on one connection, another on another connection', async () => {
    const db = t.storage.db;
    const a = prepared(db, 'SELECT count(*) FROM clients WHERE tenant_id = ?');
    expect(prepared(db, 'SELECT count(*) FROM clients WHERE tenant_id = ?')).toBe(a);
    expect(prepared(db, 'SELECT count(*) FROM users WHERE tenant_id = ?')).not.toBe(a);
    const other = t.storage;
    const again = await t.reopen();
    expect(again).not.toBe(other);
    expect(prepared(again.db, 'SELECT count(*) FROM clients WHERE tenant_id = ?')).not.toBe(a);
  });

  it('hands a reader back with pluck off, whatever the previous caller set', () => {
    const db = t.storage.db;
    expect(prepared(db, 'SELECT 7 AS n').pluck().get()).toBe(7);
    expect(prepared(db, 'SELECT 7 AS n').get()).toEqual({ n: 7 });
  });

  it('keeps at most STATEMENT_CACHE_SIZE texts, dropping the least recently used', () => {
    const db = t.storage.db;
    const first = prepared(db, 'SELECT 0');
    for (let i = 1; i < STATEMENT_CACHE_SIZE; i++) prepared(db, `SELECT ${i}`);
    expect(prepared(db, 'SELECT 0')).toBe(first); // used again: now the most recent
    prepared(db, 'SELECT -1'); // evicts 'SELECT 1', the least recently used
    expect(prepared(db, 'SELECT 0')).toBe(first);
    const spy = vi.spyOn(db, 'prepare');
    prepared(db, 'SELECT 2');
    expect(spy).not.toHaveBeenCalled();
    prepared(db, 'SELECT 1');
    expect(spy).toHaveBeenCalledTimes(1);
    spy.mockRestore();
  });
});

describe('keysetPage with cached statements', () => {
  it('prepares a list query once for every page size and cursor position, with the same pages', async () => {
    for (let i = 0; i < 7; i++) {
      await t.storage.clients.create('default', clientRecord(`c${i}`, { created_at: `2026-01-01T00:00:0${i}.000Z`, updated_at: `2026-01-01T00:00:0${i}.000Z` }));
    }
    const db = t.storage.db;
    const q = { table: 'clients', columns: 'client_id, created_at', where: 'tenant_id = @tenant', params: { tenant: 'default' }, sortKey: ['created_at', 'client_id'] as [string, string] };
    const spy = vi.spyOn(db, 'prepare');
    const walk = (limit: number) => {
      const ids: string[] = [];
      let after: { created_at: string; id: string } | undefined;
      for (;;) {
        const page = keysetPage<{ client_id: string; created_at: string }>(db, q, { limit, after, include_count: true });
        expect(page.total_count).toBe(7);
        ids.push(...page.items.map((r) => r.client_id));
        if (!page.has_more) return ids;
        const last = page.items.at(-1)!;
        after = { created_at: last.created_at, id: last.client_id };
      }
    };
    const all = ['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6'];
    expect(walk(3)).toEqual(all);
    expect(walk(2)).toEqual(all);
    expect(walk(25)).toEqual(all);
    // First page, later pages (cursor condition), count: three texts, each prepared once.
    expect(spy).toHaveBeenCalledTimes(3);
    expect(keysetPage(db, { ...q, descending: true }, { limit: 2, include_count: false }).items).toEqual([
      { client_id: 'c6', created_at: '2026-01-01T00:00:06.000Z' },
      { client_id: 'c5', created_at: '2026-01-01T00:00:05.000Z' },
    ]);
    spy.mockRestore();
  });
});

describe('lookups by uid and user code (issue 17)', () => {
  // With the model bound as a parameter, SQLite re-plans the statement on every call (the partial
  // indexes `WHERE model = '...'` of migration 070 depend on it): three times the cost of a session read.
  it('prepare one statement per model with the model written into the SQL, once, and find only that model', async () => {
    const s = t.storage;
    await s.oidc.upsert('default', 'Session', 's1', { uid: 'u1', accountId: 'a' }, null);
    await s.oidc.upsert('default', 'DeviceCode', 'd1', { userCode: 'ABCD-EFGH' }, null);
    const spy = vi.spyOn(s.db, 'prepare');
    for (let i = 0; i < 3; i++) {
      expect((await s.oidc.findByUid('default', 'Session', 'u1'))?.payload).toEqual({ uid: 'u1', accountId: 'a' });
      expect((await s.oidc.findByUserCode('default', 'DeviceCode', 'ABCD-EFGH'))?.payload).toEqual({ userCode: 'ABCD-EFGH' });
    }
    expect(spy.mock.calls.map(([sql]) => sql)).toEqual([
      "SELECT payload, expires_at, consumed_at FROM oidc_payloads WHERE tenant_id = ? AND model = 'Session' AND uid = ?",
      "SELECT payload, expires_at, consumed_at FROM oidc_payloads WHERE tenant_id = ? AND model = 'DeviceCode' AND user_code = ?",
    ]);
    expect(await s.oidc.findByUid('default', 'Interaction', 'u1')).toBeUndefined();
    expect(await s.oidc.findByUid('other', 'Session', 'u1')).toBeUndefined();
    expect(await s.oidc.findByUserCode('default', 'Session', 'ABCD-EFGH')).toBeUndefined();
    spy.mockRestore();
  });

  it('use the bound statement for a model name that is not letters only (never written into SQL)', async () => {
    const s = t.storage;
    await s.oidc.upsert('default', "Ses'sion", 's1', { uid: 'u1' }, null);
    const spy = vi.spyOn(s.db, 'prepare');
    expect((await s.oidc.findByUid('default', "Ses'sion", 'u1'))?.payload).toEqual({ uid: 'u1' });
    expect(await s.oidc.findByUid('default', "Session' OR '1'='1", 'u1')).toBeUndefined();
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore();
  });
});

describe('users.get in raw mode (issue 17)', () => {
  it('gives the record the list gives, with the same keys in the same order and every type', async () => {
    const u: UserRecord = {
      id: 'u-raw', email: 'raw@example.com', email_verified: true, username: 'raw', given_name: 'Ra', family_name: 'W', name: 'Ra W',
      nickname: 'r', role: 'admin', account_enabled: false, locked: true, locked_until: '2026-01-01T00:00:09.000Z', auth_provider: 'local',
      password_hash: '$argon2id$fake', mfa_enabled: true, mfa_methods: ['totp', 'webauthn'], mfa_secret_sealed: 'sealed-s',
      mfa_recovery_sealed: 'sealed-r', deleted_at: null, created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:01.000Z',
      last_login_at: '2026-01-01T00:00:02.000Z',
    };
    await t.storage.users.create('default', u);
    const got = await t.storage.users.get('default', u.id);
    const listed = (await t.storage.users.list('default', {}, { limit: 10 })).items.find((r) => r.id === u.id);
    expect(got).toEqual(u);
    expect(JSON.stringify(got)).toBe(JSON.stringify(listed));
    expect(Object.keys(got!)).toEqual(Object.keys(u));
  });
});
