import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UniqueViolation } from '../../src/storage/errors.js';
import { SqliteStorage } from '../../src/storage/sqlite/index.js';
import type { PageRequest, UserRecord } from '../../src/storage/types.js';

const T = 'default';
const OTHER = 'acme';
const page = (over: Partial<PageRequest> = {}): PageRequest => ({ limit: 100, include_count: false, ...over });

let seq = 0;
function user(over: Partial<UserRecord> = {}): UserRecord {
  seq++;
  // Distinct, increasing created_at so the paging order is known.
  const at = new Date(Date.UTC(2024, 0, 1, 0, 0, seq)).toISOString();
  return {
    id: `u-${String(seq).padStart(3, '0')}`,
    email: `user${seq}@example.com`,
    email_verified: false,
    username: null,
    given_name: null,
    family_name: null,
    name: null,
    nickname: null,
    role: 'user',
    account_enabled: true,
    locked: false,
    locked_until: null,
    auth_provider: 'local',
    password_hash: '$argon2id$fake',
    mfa_enabled: false,
    mfa_methods: [],
    mfa_secret_sealed: null,
    mfa_recovery_sealed: null,
    deleted_at: null,
    created_at: at,
    updated_at: at,
    last_login_at: null,
    ...over,
  };
}

describe('SqliteUsers (real SQLite file)', () => {
  let dir: string;
  let storage: SqliteStorage;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-users-'));
    storage = SqliteStorage.open(join(dir, 'svc.db'));
  });
  afterAll(async () => {
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('creates and reads back every field with its type', async () => {
    const u = user({ username: 'alice', name: 'Alice A', role: 'admin', mfa_enabled: true, mfa_methods: ['totp'], mfa_secret_sealed: 'sealed', email_verified: true });
    await storage.users.create(T, u);
    expect(await storage.users.get(T, u.id)).toEqual(u);
    expect(await storage.users.get(T, 'nope')).toBeUndefined();
  });

  it('finds by e-mail case-insensitively, never an anonymised user', async () => {
    const u = user({ email: 'Mixed.Case@Example.com' });
    await storage.users.create(T, u);
    expect((await storage.users.findByEmail(T, 'mixed.case@EXAMPLE.COM'))?.id).toBe(u.id);
    expect(await storage.users.findByEmail(OTHER, 'mixed.case@example.com')).toBeUndefined();

    const gone = user({ email: 'gone@example.com' });
    await storage.users.create(T, gone);
    // Anonymisation keeps the row but the lookup must not see it, even before the address is erased.
    await storage.users.update(T, gone.id, { deleted_at: new Date().toISOString() });
    expect(await storage.users.findByEmail(T, 'gone@example.com')).toBeUndefined();
  });

  it('refuses a second live user with the same e-mail (any case) or username, but not after anonymisation', async () => {
    await storage.users.create(T, user({ email: 'dup@example.com', username: 'dupname' }));
    await expect(storage.users.create(T, user({ email: 'DUP@example.com' }))).rejects.toEqual(new UniqueViolation('email'));
    await expect(storage.users.create(T, user({ username: 'DupName' }))).rejects.toEqual(new UniqueViolation('username'));
    // Another tenant may hold the same address.
    await expect(storage.users.create(OTHER, user({ email: 'dup@example.com', username: 'dupname' }))).resolves.toBeUndefined();

    const old = user({ email: 'reuse@example.com' });
    await storage.users.create(T, old);
    await storage.users.update(T, old.id, { deleted_at: new Date().toISOString() });
    await expect(storage.users.create(T, user({ email: 'reuse@example.com' }))).resolves.toBeUndefined();
  });

  it('updates only the given columns, stamps updated_at, and reports unknown ids', async () => {
    const u = user({ given_name: 'Keep', nickname: 'nick' });
    await storage.users.create(T, u);
    const updated = await storage.users.update(T, u.id, { nickname: null, locked: true, mfa_methods: ['totp', 'webauthn'] });
    expect(updated).toMatchObject({ given_name: 'Keep', nickname: null, locked: true, mfa_methods: ['totp', 'webauthn'], created_at: u.created_at });
    expect(updated!.updated_at > u.updated_at).toBe(true);
    expect(await storage.users.update(T, 'missing', { locked: true })).toBeUndefined();
    // Same id in another tenant is another record.
    expect(await storage.users.update(OTHER, u.id, { locked: true })).toBeUndefined();
    await expect(storage.users.update(T, u.id, { email: 'USER1@example.com' })).rejects.toBeInstanceOf(UniqueViolation);
  });

  describe('list', () => {
    const L = 'list-tenant';
    beforeAll(async () => {
      await storage.users.create(L, user({ id: 'l1', email: 'ann@example.com', username: 'ann', name: 'Ann 100% Real' }));
      await storage.users.create(L, user({ id: 'l2', email: 'bob_smith@example.com', username: 'bob', role: 'admin' }));
      await storage.users.create(L, user({ id: 'l3', email: 'bobXsmith@example.com', account_enabled: false }));
      await storage.users.create(L, user({ id: 'l4', email: 'carl@example.com', auth_provider: 'google', name: 'Carl' }));
      await storage.users.create(L, user({ id: 'l5', email: 'dora@example.com', username: 'd\\ora' }));
      await storage.users.create(OTHER, user({ id: 'x1', email: 'ann@other.example' }));
    });
    const ids = async (filter: Parameters<SqliteStorage['users']['list']>[1], p = page()) => (await storage.users.list(L, filter, p)).items.map((u) => u.id);

    it('is scoped to the tenant and ordered by creation', async () => {
      expect(await ids({})).toEqual(['l1', 'l2', 'l3', 'l4', 'l5']);
      expect(await storage.users.count(L)).toBe(5);
    });

    it('filters by account_enabled, role and auth_provider', async () => {
      expect(await ids({ account_enabled: false })).toEqual(['l3']);
      expect(await ids({ account_enabled: true })).toEqual(['l1', 'l2', 'l4', 'l5']);
      expect(await ids({ role: 'admin' })).toEqual(['l2']);
      expect(await ids({ auth_provider: 'google' })).toEqual(['l4']);
      expect(await ids({ role: 'admin', account_enabled: false })).toEqual([]);
    });

    it('searches e-mail, username and name, case-insensitively', async () => {
      expect(await ids({ q: 'ANN' })).toEqual(['l1']);
      expect(await ids({ q: 'carl' })).toEqual(['l4']);
      expect(await ids({ q: 'bob' })).toEqual(['l2', 'l3']);
    });

    it('takes LIKE wildcards in q literally', async () => {
      expect(await ids({ q: 'bob_' })).toEqual(['l2']); // `_` would also match bobX
      expect(await ids({ q: '100%' })).toEqual(['l1']);
      expect(await ids({ q: '%' })).toEqual(['l1']);
      expect(await ids({ q: '_' })).toEqual(['l2']);
      expect(await ids({ q: 'd\\o' })).toEqual(['l5']);
    });

    it('pages with an (created_at, id) cursor and counts the whole filter', async () => {
      const first = await storage.users.list(L, {}, page({ limit: 2, include_count: true }));
      expect(first.items.map((u) => u.id)).toEqual(['l1', 'l2']);
      expect(first).toMatchObject({ has_more: true, total_count: 5 });
      const last = first.items[1]!;
      const second = await storage.users.list(L, {}, page({ limit: 2, after: { created_at: last.created_at, id: last.id } }));
      expect(second.items.map((u) => u.id)).toEqual(['l3', 'l4']);
      expect(second.total_count).toBeUndefined();
      const end = await storage.users.list(L, {}, page({ limit: 2, after: { created_at: second.items[1]!.created_at, id: 'l4' } }));
      expect(end.items.map((u) => u.id)).toEqual(['l5']);
      expect(end.has_more).toBe(false);
      expect((await storage.users.list(L, { q: 'bob' }, page({ include_count: true, limit: 1 }))).total_count).toBe(2);
    });
  });
});
