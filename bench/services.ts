/**
 * PostgreSQL and Redis for a run of their own, shared by the benches (bench:tenants,
 * bench:capacity) and the test suite (test/helpers/postgres.ts, test/helpers/app.ts): a fresh
 * database per run or test file, dropped afterwards, and deletion of a Redis key prefix. One copy,
 * so a fix to either (FORCE on drop, no WAL flush wait) reaches both.
 *
 * PostgreSQL at 127.0.0.1:5432 as `postgres` (trust auth), Redis at redis://127.0.0.1:6379: the
 * callers pass other servers where they allow it (BENCH_PG_SERVER, BENCH_REDIS_URL, TEST_REDIS_URL).
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import pg from 'pg';
import { knownMigrations, migratePostgres } from '../src/storage/postgresql/migrate.js';

export const DEFAULT_PG_SERVER = 'postgres://postgres@127.0.0.1:5432';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export interface ScratchDatabase {
  name: string;
  /** Logs in as postgres (superuser, the schema owner): what `svc migrate` uses. The product's
   *  pool runs every connection as svc_app whatever the login (src/storage/postgresql/pool.ts). */
  url: string;
  drop(): Promise<void>;
}

/** Runs fn on a connection to the server's `postgres` database (CREATE/DROP DATABASE, roles, pg_stat_*). */
export async function onPgServer<T>(server: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: `${server}/postgres` });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/**
 * CREATE DATABASE <prefix>_<random>. No WAL flush wait on commit: neither a bench nor a test needs
 * durability across an OS crash. Dropped WITH (FORCE): a run that failed half-way may have left
 * connections open.
 */
export async function createScratchDatabase(prefix: string, server = DEFAULT_PG_SERVER, template?: string): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await onPgServer(server, async (c) => {
    await c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}${template ? ` TEMPLATE ${pg.escapeIdentifier(template)}` : ''}`);
    await c.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} SET synchronous_commit = off`);
  });
  return {
    name,
    url: `${server}/${name}`,
    drop: () => onPgServer(server, (c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`)).then(() => undefined),
  };
}

/** createScratchDatabase, then the product's migrations (dropped again when they fail). */
export async function createMigratedDatabase(prefix: string, server = DEFAULT_PG_SERVER): Promise<ScratchDatabase> {
  const db = await createScratchDatabase(prefix, server);
  try {
    await migratePostgres(db.url);
  } catch (err) {
    await db.drop().catch(() => undefined);
    throw err;
  }
  return db;
}

const templates = new Map<string, Promise<string>>();

/**
 * The name of a database holding exactly this build's migrations, to copy with CREATE DATABASE
 * ... TEMPLATE: the test suite starts ~200 PostgreSQL apps a run, and a copy costs what an empty
 * CREATE DATABASE costs, without the ~170 ms (more under load) of running the migrations each time.
 * Named by a hash of the migration files, so it is built once per migration set and machine, kept
 * across runs (about 8 MB; a changed migration gets a new name), and never connected to
 * (ALLOW_CONNECTIONS false): a copy needs its template free of sessions. Built under a scratch name
 * and renamed when complete, so a concurrent run (another fork) never copies a half-migrated one.
 */
export function migratedTemplate(server = DEFAULT_PG_SERVER): Promise<string> {
  let pending = templates.get(server);
  if (!pending) {
    pending = buildTemplate(server);
    pending.catch(() => templates.delete(server));
    templates.set(server, pending);
  }
  return pending;
}

async function buildTemplate(server: string): Promise<string> {
  const hash = createHash('sha256');
  for (const m of knownMigrations()) hash.update(m.version).update('\0').update(readFileSync(m.path));
  const name = `svc_template_${hash.digest('hex').slice(0, 16)}`;
  const exists = async () => (await onPgServer(server, (c) => c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]))).rowCount === 1;
  if (await exists()) return name;
  const scratch = await createMigratedDatabase('svc_template_build', server);
  try {
    // The migration's session may still be closing on the server: the rename waits for it.
    for (let attempt = 0; ; attempt++) {
      try {
        await onPgServer(server, async (c) => {
          await c.query(`ALTER DATABASE ${pg.escapeIdentifier(scratch.name)} RENAME TO ${pg.escapeIdentifier(name)}`);
          await c.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} ALLOW_CONNECTIONS false`);
        });
        return name;
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === '42P04' && (await exists())) return name; // another run built it first
        if (code !== '55006' || attempt >= 50) throw err; // 55006: object in use
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  } finally {
    await scratch.drop().catch(() => undefined); // a no-op once renamed
  }
}

/** A Redis key prefix no other run uses, so parallel runs against one server never collide. */
export const uniqueRedisPrefix = (label: string) => `${label}-${randomBytes(4).toString('hex')}`;

/**
 * Deletes every key under `<prefix>:` (artefacts with long TTLs would otherwise stay for days).
 * Best effort when `bestEffort`: a Redis that went away keeps nothing worth cleaning for long.
 */
export async function purgeRedisPrefix(url: string, prefix: string, { bestEffort = false } = {}): Promise<void> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: bestEffort ? 1 : 2, enableOfflineQueue: !bestEffort });
  if (bestEffort) r.on('error', () => {});
  try {
    await r.connect();
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await r.unlink(...keys);
    } while (cursor !== '0');
  } catch (err) {
    if (!bestEffort) throw err;
  } finally {
    r.disconnect();
  }
}
