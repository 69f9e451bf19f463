/**
 * PostgreSQL migrations (`svc migrate`, the spec's migrate-deploy): migrations/postgresql/*.sql in
 * name order, each in its own transaction together with its row in schema_migrations, so a failed
 * file leaves nothing half-applied. Concurrent runs (two deploys, two instances) are serialised by
 * a session advisory lock; the second finds nothing left to do. Applied migrations are never
 * reversed (spec 9: rollback reverts application files only).
 *
 * The service itself never migrates: at start it checks the schema is current (assertSchemaCurrent)
 * and refuses to run against an older one, because its role cannot change the schema anyway.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, type Queryable } from 'pg';
import { MIGRATIONS_DIR } from '../../paths.js';
import { sqlState } from './errors.js';

export const PG_MIGRATIONS_DIR = join(MIGRATIONS_DIR, 'postgresql');

/** Single-key advisory lock (the repositories use the two-key form, a separate lock space). */
const MIGRATION_LOCK = "SELECT pg_advisory_lock(hashtextextended('svc.schema_migrations', 0))";
const MIGRATION_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended('svc.schema_migrations', 0))";

export interface Migration {
  version: string;
  path: string;
}

/** The migrations this build knows, oldest first. */
export function knownMigrations(dir = PG_MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((f) => ({ version: f.replace(/\.sql$/, ''), path: join(dir, f) }));
}

async function appliedVersions(db: Queryable): Promise<Set<string>> {
  const { rows } = await db.query<{ version: string }>('SELECT version FROM schema_migrations');
  return new Set(rows.map((r) => r.version));
}

/**
 * Applies pending migrations and returns their versions (empty when the schema was current).
 * `url` must log in as the role that owns (or will own) the schema, not as the service role.
 */
export async function migratePostgres(url: string, opts: { dir?: string } = {}): Promise<string[]> {
  const client = new Client({ connectionString: url, application_name: 'svc migrate' });
  // A lost connection fails the statement in flight (and the command with it); the 'error' event
  // pg emits as well would otherwise exit with a stack trace instead (see pool.ts).
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query(MIGRATION_LOCK);
    try {
      await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
      const applied = await appliedVersions(client);
      const done: string[] = [];
      for (const m of knownMigrations(opts.dir)) {
        if (applied.has(m.version)) continue;
        await applyOne(client, m);
        done.push(m.version);
      }
      return done;
    } finally {
      await client.query(MIGRATION_UNLOCK);
    }
  } finally {
    await client.end();
  }
}

async function applyOne(client: Client, m: Migration): Promise<void> {
  const sql = readFileSync(m.path, 'utf8');
  await client.query('BEGIN');
  try {
    // No parameters: the simple protocol runs the whole file (several statements) in this transaction.
    await client.query(sql);
    await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [m.version]);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw new Error(`migration ${m.version} failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** The database is not (fully) migrated; the message is the one line the service stops with. */
export class SchemaNotCurrentError extends Error {
  constructor(reason: string) {
    super(`PostgreSQL schema is not current (${reason}): run \`svc migrate\` first`);
    this.name = 'SchemaNotCurrentError';
  }
}

/**
 * Throws SchemaNotCurrentError unless every migration of this build is applied. A database that is
 * ahead (a rolled-back release) is accepted: migrations stay compatible with the release before.
 */
export async function assertSchemaCurrent(db: Queryable, dir?: string): Promise<void> {
  let applied: Set<string>;
  try {
    applied = await appliedVersions(db);
  } catch (err) {
    if (sqlState(err) === '42P01') throw new SchemaNotCurrentError('no schema_migrations table');
    throw err;
  }
  const missing = knownMigrations(dir).filter((m) => !applied.has(m.version)).map((m) => m.version);
  if (missing.length) throw new SchemaNotCurrentError(`pending: ${missing.join(', ')}`);
}
