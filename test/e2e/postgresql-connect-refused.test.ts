/**
 * PostgreSQL up but refusing the service's connections with a FATAL at connect time (the database
 * made to refuse connections, 55000; dropped, 3D000; the login role gone, 28000): no statement ran,
 * the service has no database, so requests answer 503 as for an unreachable server (never 500
 * internal), health says degraded, and the refusal is logged at error with its SQLSTATE and without
 * the URL's password (src/storage/postgresql/errors.ts, pool.ts).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onPgServer } from '../../bench/services.js';
import { Unavailable } from '../../src/errors.js';
import { storageError } from '../../src/storage/postgresql/errors.js';
import { createPool } from '../../src/storage/postgresql/pool.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { captureLog, type CapturedLog } from '../helpers/log.js';
import { PG_SERVER, migratedDatabase, pgSettings, type TestDatabase } from '../helpers/postgres.js';
import { expectProblem } from '../helpers/problem.js';

const PASSWORD = 'pw-that-must-not-be-logged-4711';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let db: TestDatabase;
let t: TestApp;
let captured: CapturedLog;
let admin: string;
/** Only this file's own scratch database is altered and its backends terminated. */
const onServer = <T>(fn: (c: pg.Client) => Promise<T>) => onPgServer(PG_SERVER, fn);
const allowConnections = (allow: boolean) => onServer((c) => c.query(`ALTER DATABASE ${pg.escapeIdentifier(db.name)} WITH ALLOW_CONNECTIONS ${allow}`));

beforeAll(async () => {
  db = await migratedDatabase();
  captured = captureLog('warn');
  // A password in the URL (trust auth ignores it): it must never reach a log line.
  const url = db.url.replace('postgres@', `postgres:${PASSWORD}@`);
  t = await startTestApp({ STORAGE_ADAPTER: 'postgresql', STORAGE_POSTGRESQL_URL: url, STORAGE_POSTGRESQL_CONNECT_TIMEOUT_MS: '2000' }, { log: captured.log });
  admin = await t.token('svc:users:read svc:stats:read');
});

afterAll(async () => {
  await t?.close();
  if (db) {
    await allowConnections(true).catch(() => undefined);
    await db.drop();
  }
});

describe('a database that refuses connections (ALTER DATABASE ... ALLOW_CONNECTIONS false)', () => {
  beforeAll(async () => {
    await allowConnections(false);
    await onServer((c) => c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [db.name]));
    // The pool learns of its terminated idle connections from their sockets.
    await sleep(200);
  });

  it('Management calls answer 503 unavailable, not 500 internal', async () => {
    const res = await api(t, 'GET', '/api/v1/users', { token: admin });
    const body = expectProblem(res, 503, 'unavailable', '/api/v1/users');
    expect(res.headers.get('retry-after')).toBe('1');
    expect(JSON.stringify(body)).not.toContain('55000');
  });

  it('health answers 503 degraded with the database unhealthy; readiness 503', async () => {
    const res = await api(t, 'GET', '/api/v1/stats/health', { token: admin });
    expect(res.status).toBe(503);
    expect(res.json.data).toMatchObject({ status: 'degraded', checks: { database: { status: 'unhealthy' } } });
    expect((await fetch(`${t.url}/readyz`)).status).toBe(503);
  });

  it('logs the refusal at error with its SQLSTATE, without the password', async () => {
    const lines = captured.lines.filter((l) => l.level === 50 && l.code === '55000');
    expect(lines.length).toBeGreaterThanOrEqual(1);
    expect(lines[0]!.msg).toMatch(/PostgreSQL connection could not be opened/);
    expect(lines[0]!.error).toMatch(/not currently accepting connections/);
    expect(JSON.stringify(captured.lines)).not.toContain(PASSWORD);
  });

  it('recovers once the database takes connections again', async () => {
    await allowConnections(true);
    const started = Date.now();
    while ((await fetch(`${t.url}/readyz`)).status !== 200) {
      if (Date.now() - started > 8000) throw new Error('not ready again within 8 s');
      await sleep(100);
    }
    expect((await api(t, 'GET', '/api/v1/users', { token: admin })).status).toBe(200);
  });
});

describe('any error raised while connecting is unavailable; a failing statement is not', () => {
  it('a missing database (3D000) and a missing login role (28000) become Unavailable, and are reported', async () => {
    const base = new URL(db.url);
    const missingDb = new URL(db.url);
    missingDb.pathname = `/${db.name}_missing`;
    const missingRole = new URL(db.url);
    missingRole.username = `svc_no_such_role_${Date.now()}`;
    for (const [url, code] of [[missingDb.toString(), '3D000'], [missingRole.toString(), '28000']] as const) {
      const reported: unknown[] = [];
      const pool = createPool(pgSettings(url, { pool_max: 1 }), () => undefined, { onConnectError: (err) => reported.push(err) });
      try {
        const err = await pool.query('SELECT 1').then(() => undefined, (e: unknown) => e);
        expect((err as { code?: string }).code, url).toBe(code);
        expect(storageError(err), code).toBeInstanceOf(Unavailable);
        expect(reported, code).toHaveLength(1);
      } finally {
        await pool.end();
      }
    }
    // On a connection that opened, a statement's own error stays what it is (a bug is a 500).
    const pool = createPool(pgSettings(base.toString(), { pool_max: 1 }), () => undefined);
    try {
      const err = await pool.query('SELECT 1/0').then(() => undefined, (e: unknown) => e);
      expect((err as { code?: string }).code).toBe('22012');
      expect(storageError(err)).toBe(err);
    } finally {
      await pool.end();
    }
  });
});
