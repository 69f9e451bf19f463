/** `svc migrate` as a process on an empty PostgreSQL database: every migration, RLS on, idempotent. */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownMigrations } from '../../src/storage/postgresql/migrate.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

const CLI = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url));

describe('svc migrate (PostgreSQL)', { timeout: 240_000 }, () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => db?.drop());

  const svc = (args: string[]) =>
    spawnSync(process.execPath, [CLI, ...args], {
      env: {
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'production',
        STORAGE_ADAPTER: 'postgresql',
        STORAGE_POSTGRESQL_URL: db.url,
        SVC_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false',
      },
      encoding: 'utf8',
      timeout: 60_000,
    });

  it('applies every migration once, then reports the schema current', async () => {
    const run = svc(['migrate']);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^migrations applied \(postgresql\): 001_init/);
    const admin = await db.admin();
    try {
      const applied = (await admin.query('SELECT version FROM schema_migrations ORDER BY version')).rows.map((r) => r.version);
      expect(applied).toEqual(knownMigrations().map((m) => m.version));
      const rls = await admin.query("SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE relname = 'resources'");
      expect(rls.rows[0]).toEqual({ relrowsecurity: true, relforcerowsecurity: true });
    } finally {
      await admin.end();
    }
    const again = svc(['migrate']);
    expect(again.status).toBe(0);
    expect(again.stdout).toMatch(/schema is current \(postgresql\)/);
  });
});
