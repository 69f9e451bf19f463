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

  it('round-trips a record, found by jti and by hash', async () => {
    const r = token({ policies: ['general-policy', 'native-only'], note: 'for the mobile team' });
    await repo().create(T, r);
    expect(await repo().get(T, r.jti)).toEqual(r);
    expect(await repo().findByHash(T, r.token_hash)).toEqual(r);
    expect(await repo().findByHash(T, 'hash-unknown')).toBeUndefined();
    expect(await repo().get(T, 'unknown')).toBeUndefined();
  });

  it('consumeUse counts up to max_usage_count and then refuses; releaseUse gives one back', async () => {
    const r = token({ max_usage_count: 2 });
    await repo().create(T, r);
    expect(await repo().consumeUse(T, r.jti, iso())).toBe(true);
    expect(await repo().consumeUse(T, r.jti, iso())).toBe(true);
    expect(await repo().consumeUse(T, r.jti, iso())).toBe(false);
    expect((await repo().get(T, r.jti))!.current_usage_count).toBe(2);

    await repo().releaseUse(T, r.jti);
    expect((await repo().get(T, r.jti))!.current_usage_count).toBe(1);
    expect(await repo().consumeUse(T, r.jti, iso())).toBe(true);
    expect(await repo().consumeUse(T, r.jti, iso())).toBe(false);
  });

  it('releaseUse never goes below zero', async () => {
    const r = token();
    await repo().create(T, r);
    await repo().releaseUse(T, r.jti);
    expect((await repo().get(T, r.jti))!.current_usage_count).toBe(0);
  });

  it('consumeUse refuses an expired token, judged by the given clock', async () => {
    const r = token({ expires_at: iso(HOUR) });
    await repo().create(T, r);
    expect(await repo().consumeUse(T, r.jti, iso(2 * HOUR))).toBe(false);
    // exactly at expires_at the token is already expired
    expect(await repo().consumeUse(T, r.jti, r.expires_at)).toBe(false);
    expect(await repo().consumeUse(T, r.jti, iso())).toBe(true);
    expect((await repo().get(T, r.jti))!.current_usage_count).toBe(1);
  });

  it('revoke marks once (a second revoke is false) and blocks consumeUse', async () => {
    const r = token();
    await repo().create(T, r);
    const at = iso();
    expect(await repo().revoke(T, r.jti, at)).toBe(true);
    expect(await repo().revoke(T, r.jti, iso())).toBe(false);
    expect(await repo().revoke(T, 'unknown', iso())).toBe(false);
    expect((await repo().get(T, r.jti))!.revoked_at).toBe(at);
    expect(await repo().consumeUse(T, r.jti, iso())).toBe(false);
  });

  it('lists only active tokens (not revoked, not expired), in pages with a total count', async () => {
    const base = Date.now();
    const at = (i: number) => new Date(base + i).toISOString();
    const active = [0, 1, 2].map((i) => token({ jti: `a${i}`, created_at: at(i) }));
    const revoked = token({ jti: 'r', created_at: at(3) });
    const expired = token({ jti: 'e', created_at: at(4), expires_at: iso(-1000) });
    const usedUp = token({ jti: 'u', created_at: at(5), max_usage_count: 1, current_usage_count: 1 });
    for (const r of [...active, revoked, expired, usedUp]) await repo().create(T, r);
    await repo().revoke(T, 'r', iso());

    const first = await repo().list(T, { limit: 2, include_count: true }, iso());
    expect(first.items.map((r) => r.jti)).toEqual(['a0', 'a1']);
    expect(first.has_more).toBe(true);
    expect(first.total_count).toBe(4);
    const last = first.items[1]!;
    const second = await repo().list(T, { limit: 2, include_count: false, after: { created_at: last.created_at, id: last.jti } }, iso());
    expect(second.items.map((r) => r.jti)).toEqual(['a2', 'u']);
    expect(second.has_more).toBe(false);
    expect(second.total_count).toBeUndefined();
  });

  it('keeps tenants apart', async () => {
    const r = token({ jti: 'shared-jti', token_hash: 'shared-hash' });
    await repo().create('acme', r);
    expect(await repo().get('globex', r.jti)).toBeUndefined();
    expect(await repo().findByHash('globex', r.token_hash)).toBeUndefined();
    expect(await repo().consumeUse('globex', r.jti, iso())).toBe(false);
    expect(await repo().revoke('globex', r.jti, iso())).toBe(false);
    expect((await repo().list('globex', { limit: 10, include_count: true }, iso())).total_count).toBe(0);
    // the same jti may exist in another tenant without touching the first one
    await repo().create('globex', { ...r, max_usage_count: 5 });
    expect(await repo().consumeUse('globex', r.jti, iso())).toBe(true);
    const acme = (await repo().get('acme', r.jti))!;
    expect(acme.current_usage_count).toBe(0);
    expect(acme.revoked_at).toBeNull();
    expect((await repo().list('acme', { limit: 10, include_count: true }, iso())).total_count).toBe(1);
  });

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
