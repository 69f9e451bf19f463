/**
 * SQLite-only behaviour: migrations on a real file. Repository behaviour is the storage contract
 * (test/storage/contract.ts), run on SQLite and PostgreSQL.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR } from '../../src/paths.js';
import { migrate } from '../../src/storage/sqlite/db.js';
import type { SqliteStorage } from '../../src/storage/sqlite/index.js';
import { clientRecord, openTempStorage, type TempStorage } from '../helpers/storage.js';

const A = 'tenant-a';

let t: TempStorage;
let s: SqliteStorage;
beforeAll(() => {
  t = openTempStorage();
  s = t.storage;
});
afterAll(async () => t?.close());

describe('migrations', () => {
  const versions = readdirSync(join(MIGRATIONS_DIR, 'sqlite'))
    .filter((f) => f.endsWith('.sql'))
    .map((f) => f.replace(/\.sql$/, ''))
    .sort();

  it('applies every migration file once, recorded in schema_migrations', () => {
    const applied = s.db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all();
    expect(applied).toEqual(versions);
    expect(versions).toEqual(expect.arrayContaining(['001_init', '002_login_attempts']));
  });

  it('is idempotent: migrate again and reopening apply nothing and keep the data', async () => {
    expect(migrate(s.db)).toEqual([]);
    await s.clients.create(A, clientRecord('survives-reopen'));
    const appliedAt = s.db.prepare('SELECT version, applied_at FROM schema_migrations ORDER BY version').all();
    s = await t.reopen();
    expect(migrate(s.db)).toEqual([]);
    expect(s.db.prepare('SELECT version, applied_at FROM schema_migrations ORDER BY version').all()).toEqual(appliedAt);
    expect((await s.clients.get(A, 'survives-reopen'))?.client_id).toBe('survives-reopen');
    await s.clients.delete(A, 'survives-reopen');
  });

  it('answers ping while open', async () => {
    await expect(s.ping()).resolves.toBeUndefined();
    expect(s.kind).toBe('sqlite');
  });
});
