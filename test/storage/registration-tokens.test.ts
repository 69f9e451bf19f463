/** SqliteRegistrationTokens against a real SQLite file (migrations applied as in production). */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStorage } from '../../src/storage/sqlite/index.js';
import { CONSUME_SQL } from '../../src/storage/sqlite/registration-tokens.js';
import type { RegistrationTokenRecord } from '../../src/storage/types.js';

const T = 'default';
const HOUR = 3600_000;
const iso = (offsetMs = 0) => new Date(Date.now() + offsetMs).toISOString();

function token(over: Partial<RegistrationTokenRecord> = {}): RegistrationTokenRecord {
  const jti = over.jti ?? `jti-${Math.random().toString(36).slice(2)}`;
  return {
    jti,
    token_hash: `hash-${jti}`,
    expires_at: iso(HOUR),
    max_usage_count: 2,
    current_usage_count: 0,
    policies: ['general-policy'],
    note: null,
    created_at: iso(),
    revoked_at: null,
    creator_scopes: null,
    ...over,
  };
}

describe('SqliteRegistrationTokens', () => {
  let dir: string;
  let path: string;
  let storage: SqliteStorage;
  const repo = () => storage.registrationTokens;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-regtok-'));
    path = join(dir, 'svc.db');
    storage = SqliteStorage.open(path);
  });
  afterEach(async () => {
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // Single-connection behaviour is covered for both backends by test/storage/contract.ts; these cases
  // need several SQLite connections.
  it('a stale reader on another connection cannot push the count past the max', async () => {
    const r = token({ max_usage_count: 1 });
    await repo().create(T, r);
    const other = SqliteStorage.open(path);
    try {
      // Both connections saw a usable token...
      expect((await other.registrationTokens.get(T, r.jti))!.current_usage_count).toBe(0);
      expect((await repo().get(T, r.jti))!.current_usage_count).toBe(0);
      // ...only one of them gets the use.
      expect(await other.registrationTokens.consumeUse(T, r.jti, iso())).toBe(true);
      expect(await repo().consumeUse(T, r.jti, iso())).toBe(false);
    } finally {
      await other.close();
    }
    expect((await repo().get(T, r.jti))!.current_usage_count).toBe(1);
  });

  it('the consume statement stays exact under truly parallel writers (4 threads, 4 connections)', async () => {
    const max = 150;
    const r = token({ max_usage_count: max });
    await repo().create(T, r);
    const sqlitePath = createRequire(import.meta.url).resolve('better-sqlite3');
    // Each thread opens its own connection and races the production statement 100 times.
    const code = `
      const { workerData, parentPort } = require('node:worker_threads');
      const Database = require(workerData.sqlitePath);
      const db = new Database(workerData.path);
      db.pragma('busy_timeout = 5000');
      const stmt = db.prepare(workerData.sql);
      let won = 0;
      for (let i = 0; i < 100; i++) won += stmt.run(workerData.tenant, workerData.jti, new Date().toISOString()).changes;
      db.close();
      parentPort.postMessage(won);
    `;
    const runs = Array.from({ length: 4 }, () =>
      new Promise<number>((resolve, reject) => {
        const w = new Worker(code, { eval: true, workerData: { sqlitePath, path, sql: CONSUME_SQL, tenant: T, jti: r.jti } });
        w.once('message', resolve);
        w.once('error', reject);
      }),
    );
    const won = (await Promise.all(runs)).reduce((a, b) => a + b, 0);
    expect(won).toBe(max);
    expect((await repo().get(T, r.jti))!.current_usage_count).toBe(max);
  });
});
