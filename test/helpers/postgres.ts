/**
 * A PostgreSQL database of its own for each test file (CREATE DATABASE svc_test_<random> on
 * 127.0.0.1:5432 as postgres, trust auth), dropped afterwards, so parallel runs never collide.
 * Roles are cluster-wide: svc_app / svc_maintenance are shared by every test database (the
 * migrations create them once); test login roles get random names and are dropped too.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PgStorage, type PgLog } from '../../src/storage/postgresql/index.js';
import { migratePostgres } from '../../src/storage/postgresql/migrate.js';

export const PG_SERVER = 'postgres://postgres@127.0.0.1:5432';

export interface TestDatabase {
  name: string;
  /** Logs in as postgres (superuser, the schema owner): what `svc migrate` uses. */
  url: string;
  /** A connection as postgres to this database (bypasses RLS: setup and inspection only). */
  admin(): Promise<pg.Client>;
  drop(): Promise<void>;
}

async function onServer<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  await onServer((c) => c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`));
  const url = `${PG_SERVER}/${name}`;
  return {
    name,
    url,
    async admin() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      return c;
    },
    // FORCE: a test that failed half-way may have left connections open.
    drop: () => onServer((c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`)).then(() => undefined),
  };
}

export async function migratedDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase();
  await migratePostgres(db.url);
  return db;
}

export const pgSettings = (url: string, over: Partial<{ pool_max: number; statement_timeout_ms: number; slow_query_ms: number }> = {}) => ({
  url,
  pool_max: 10,
  statement_timeout_ms: 5000,
  slow_query_ms: 0,
  ...over,
});

export function openPg(url: string, over: Parameters<typeof pgSettings>[1] = {}, log?: PgLog): Promise<PgStorage> {
  return PgStorage.open(pgSettings(url, over), log);
}

/** A LOGIN role (no superuser, no BYPASSRLS) that is a member of svc_app, like a production login. */
export async function createLoginRole(): Promise<{ name: string; urlFor(database: string): string; drop(): Promise<void> }> {
  const name = `svc_login_${randomBytes(5).toString('hex')}`;
  await onServer((c) => c.query(`CREATE ROLE ${pg.escapeIdentifier(name)} LOGIN NOSUPERUSER NOBYPASSRLS IN ROLE svc_app`));
  return {
    name,
    urlFor: (database) => `postgres://${name}@127.0.0.1:5432/${database}`,
    drop: () => onServer((c) => c.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(name)}`)).then(() => undefined),
  };
}
