/**
 * The PostgreSQL backend against a real server (a database of its own, dropped afterwards): the
 * shared storage contract, then what only PostgreSQL has: migrations, the refused start on an older
 * schema, pool settings, statement timeout, slow-statement log, transactions across repository
 * calls, and two instances rotating one tenant's keys.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { Unavailable } from '../../src/errors.js';
import { toProblem } from '../../src/http/problem.js';
import { InProcessBus } from '../../src/events/bus.js';
import { newKeyRecord } from '../../src/keys/keystore.js';
import { rotateIfDue, type KeyLifecycleDeps } from '../../src/keys/rotation.js';
import { Sealer } from '../../src/keys/sealer.js';
import { openStorage } from '../../src/storage/open.js';
import { PgStorage } from '../../src/storage/postgresql/index.js';
import { PG_MIGRATIONS_DIR, knownMigrations, migratePostgres } from '../../src/storage/postgresql/migrate.js';
import { createPool } from '../../src/storage/postgresql/pool.js';
import { TenantDb } from '../../src/storage/postgresql/tenant-db.js';
import { clientRecord, keyRecord } from '../helpers/storage.js';
import { createTestDatabase, migratedDatabase, openPg, pgSettings, type TestDatabase } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';
import { describeStorageContract } from './contract.js';

const dbs: TestDatabase[] = [];
async function freshDb(migrated = true): Promise<TestDatabase> {
  const db = migrated ? await migratedDatabase() : await createTestDatabase();
  dbs.push(db);
  return db;
}
afterAll(async () => {
  for (const db of dbs) await db.drop();
});

describeStorageContract('postgresql', async () => {
  const db = await freshDb();
  const admin = await db.admin();
  const opened: PgStorage[] = [];
  const open = async () => {
    const s = await openPg(db.url);
    opened.push(s);
    return s;
  };
  return {
    storage: await open(),
    openAnother: open,
    probe: {
      // As postgres (superuser): sees every tenant's rows.
      expiredPayloads: async (now) => Number((await admin.query('SELECT count(*) AS n FROM oidc_payloads WHERE expires_at <= $1', [now])).rows[0].n),
      accountTokenHashes: async (tenant) =>
        (await admin.query('SELECT token_hash FROM account_tokens WHERE tenant_id = $1 ORDER BY token_hash', [tenant])).rows.map((r: { token_hash: string }) => r.token_hash),
      loginAttemptTimes: async (tenant, key) =>
        (await admin.query('SELECT at FROM login_attempts WHERE tenant_id = $1 AND key = $2 ORDER BY at', [tenant, key])).rows.map((r: { at: Date }) => r.at.toISOString()),
    },
    close: async () => {
      for (const s of opened) await s.close();
      await admin.end();
    },
  };
});

const versions = knownMigrations().map((m) => m.version);

describe('migrations', () => {
  it('applies every migration file once, in order, recorded in schema_migrations', async () => {
    const db = await freshDb(false);
    expect(await migratePostgres(db.url)).toEqual(versions);
    expect(versions).toEqual(expect.arrayContaining(['001_init', '002_sweep_expired']));
    const admin = await db.admin();
    try {
      expect((await admin.query('SELECT version FROM schema_migrations ORDER BY version')).rows.map((r) => r.version)).toEqual(versions);
    } finally {
      await admin.end();
    }
  });

  it('is idempotent: a second run applies nothing and keeps data and applied_at', async () => {
    const db = await freshDb();
    const s = await openPg(db.url);
    await s.clients.create('t', clientRecord('survives'));
    await s.close();
    const admin = await db.admin();
    try {
      const before = (await admin.query('SELECT version, applied_at FROM schema_migrations ORDER BY version')).rows;
      expect(await migratePostgres(db.url)).toEqual([]);
      expect((await admin.query('SELECT version, applied_at FROM schema_migrations ORDER BY version')).rows).toEqual(before);
    } finally {
      await admin.end();
    }
    const again = await openPg(db.url);
    expect((await again.clients.get('t', 'survives'))?.client_id).toBe('survives');
    await again.close();
  });

  it('serialises concurrent runs: each version is applied exactly once, nobody fails', async () => {
    const db = await freshDb(false);
    const results = await Promise.all([migratePostgres(db.url), migratePostgres(db.url), migratePostgres(db.url)]);
    expect(results.flat().sort()).toEqual(versions);
  });

  it('rolls a failing migration back completely and does not record it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-pg-migrations-'));
    try {
      cpSync(PG_MIGRATIONS_DIR, dir, { recursive: true });
      writeFileSync(join(dir, '999_broken.sql'), 'CREATE TABLE half_done (x int);\nSELECT no_such_function();\n');
      const db = await freshDb(false);
      await expect(migratePostgres(db.url, { dir })).rejects.toThrow(/^migration 999_broken failed: /);
      const admin = await db.admin();
      try {
        expect((await admin.query('SELECT version FROM schema_migrations ORDER BY version')).rows.map((r) => r.version)).toEqual(versions);
        expect((await admin.query("SELECT to_regclass('half_done') AS t")).rows[0].t).toBeNull();
      } finally {
        await admin.end();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('start-up checks', () => {
  const oneLine = (err: unknown) => {
    expect(err).toBeInstanceOf(Error);
    const message = (err as Error).message;
    expect(message).not.toContain('\n');
    return message;
  };

  it('refuses a database that was never migrated, naming svc migrate', async () => {
    const db = await freshDb(false);
    const err = await openPg(db.url).catch((e: unknown) => e);
    expect(oneLine(err)).toMatch(/svc migrate/);
  });

  it('refuses a schema behind this build, naming the pending migrations and svc migrate; starts once migrated', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-pg-migrations-'));
    try {
      cpSync(join(PG_MIGRATIONS_DIR, '001_init.sql'), join(dir, '001_init.sql'));
      const db = await freshDb(false);
      expect(await migratePostgres(db.url, { dir })).toEqual(['001_init']);
      const config = loadConfig({ STORAGE_ADAPTER: 'postgresql', STORAGE_POSTGRESQL_URL: db.url });
      const err = await openStorage(config).catch((e: unknown) => e);
      const message = oneLine(err);
      expect(message).toMatch(/svc migrate/);
      expect(message).toContain(versions.filter((v) => v !== '001_init').join(', '));

      expect(await migratePostgres(db.url)).toEqual(versions.filter((v) => v !== '001_init'));
      const storage = await openStorage(config);
      expect(storage.kind).toBe('postgresql');
      await expect(storage.ping()).resolves.toBeUndefined();
      await storage.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('accepts a schema ahead of this build (a rolled-back release keeps running)', async () => {
    const db = await freshDb();
    const admin = await db.admin();
    await admin.query("INSERT INTO schema_migrations (version) VALUES ('999_from_a_newer_release')");
    await admin.end();
    const s = await openPg(db.url);
    await s.close();
  });
});

describe('connections', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDb();
  });

  it('runs as svc_app with the configured pool size and statement_timeout, whatever the URL options say', async () => {
    const url = `${db.url}?options=${encodeURIComponent('-c role=postgres')}`;
    const pool = createPool(pgSettings(url, { pool_max: 3, statement_timeout_ms: 1234 }), () => undefined);
    try {
      const { rows } = await pool.query('SELECT current_user AS role, current_setting($1) AS timeout', ['statement_timeout']);
      expect(rows[0]).toEqual({ role: 'svc_app', timeout: '1234ms' });
      const none = createPool(pgSettings(db.url, { statement_timeout_ms: 0 }), () => undefined);
      expect((await none.query('SHOW statement_timeout')).rows[0].statement_timeout).toBe('0');
      await none.end();
      const clients = await Promise.all([pool.connect(), pool.connect(), pool.connect()]);
      expect(pool.totalCount).toBe(3);
      for (const c of clients) c.release();
    } finally {
      await pool.end();
    }
  });

  it('logs an idle connection that dies by its error alone, never the pg client pg-pool attaches (cancel key, TLS key)', async () => {
    const logged: Array<{ msg: string; line: string; err: unknown }> = [];
    // pino's own error serialiser, as the service's logger applies it to `err`.
    const log = {
      error: (obj: Record<string, unknown>, msg: string) => logged.push({ msg, err: obj.err, line: JSON.stringify({ ...obj, err: pino.stdSerializers.err(obj.err as Error) }) }),
      warn: () => undefined,
    };
    const s = await openPg(db.url, {}, log);
    const admin = await db.admin();
    try {
      await s.clients.get('idle-t', 'none'); // leaves an idle connection in the pool
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'svc' AND pid <> pg_backend_pid()", [db.name]);
      await until(() => logged.some((l) => l.msg === 'idle PostgreSQL connection failed'));
      const entry = logged.find((l) => l.msg === 'idle PostgreSQL connection failed')!;
      expect(entry.err).toBeInstanceOf(Error);
      expect(entry.err).not.toHaveProperty('client');
      expect(entry.line).toMatch(/terminat/i);
      for (const leaked of ['connectionParameters', 'secretKey', 'processID', '"ssl"']) expect(entry.line).not.toContain(leaked);
      // The pool goes on with a new connection.
      expect(await s.clients.get('idle-t', 'none')).toBeUndefined();
    } finally {
      await admin.end();
      await s.close();
    }
  });

  it('a connection that dies while checked out between statements fails its transaction with Unavailable; the process does not crash', async () => {
    // pg emits 'error' on a client whose socket ends unexpectedly even when no statement is running;
    // pg-pool listens only while the connection is idle, so a server restart during a transaction's
    // await once surfaced as an uncaught exception (CI, infra-outage-postgresql). Vitest fails the
    // run on one; the process would have exited.
    const pool = createPool(pgSettings(db.url), () => undefined);
    const tdb = new TenantDb(pool, 1000);
    const admin = await db.admin();
    try {
      const run = tdb.withTenant('killed-t', async (query) => {
        await query('SELECT 1');
        await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'svc'", [db.name]);
        // The backend's FATAL message and the socket's end arrive while no statement is running.
        await new Promise((r) => setTimeout(r, 300));
        return query('SELECT 2');
      });
      await expect(run).rejects.toBeInstanceOf(Unavailable);
      // The dead connection was not pooled again: the next statement gets a new one.
      expect((await tdb.statement<{ n: number }>('killed-t', 'SELECT 3 AS n')).rows[0]?.n).toBe(3);
    } finally {
      await admin.end();
      await pool.end();
    }
  });

  it('turns a statement over statement_timeout into Unavailable (a 503 problem), not a hang or a 500', async () => {
    const s = await openPg(db.url, { statement_timeout_ms: 300 });
    const admin = await db.admin();
    try {
      await s.clients.create('timeout-t', clientRecord('locked'));
      await admin.query('BEGIN');
      await admin.query('LOCK TABLE clients IN ACCESS EXCLUSIVE MODE');
      const started = Date.now();
      const err = await s.clients.get('timeout-t', 'locked').catch((e: unknown) => e);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(err).toBeInstanceOf(Unavailable);
      expect(toProblem(err)).toMatchObject({ status: 503, type: 'urn:svc:error:unavailable' });
      expect((err as Error).cause).toMatchObject({ code: '57014' });
    } finally {
      await admin.query('ROLLBACK');
      await admin.end();
    }
    // The pool recovered: the next call works.
    expect((await s.clients.get('timeout-t', 'locked'))?.client_id).toBe('locked');
    await s.close();
  });

  it('logs statements slower than slow_query_ms at warn, without their parameters', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
    const s = await openPg(db.url, { slow_query_ms: 100 }, log);
    const admin = await db.admin();
    try {
      await s.clients.create('slow-t', clientRecord('param-value-that-must-not-be-logged'));
      await admin.query('BEGIN');
      await admin.query('LOCK TABLE clients IN ACCESS EXCLUSIVE MODE');
      const pending = s.clients.get('slow-t', 'param-value-that-must-not-be-logged');
      await new Promise((r) => setTimeout(r, 250));
      await admin.query('COMMIT');
      expect((await pending)?.client_id).toBe('param-value-that-must-not-be-logged');
    } finally {
      await admin.end();
      await s.close();
    }
    const slow = lines.filter((l) => l.msg === 'slow PostgreSQL statement');
    expect(slow.length).toBeGreaterThanOrEqual(1);
    expect(slow[0]).toMatchObject({ level: 40, tenant: 'slow-t', statement: expect.stringMatching(/^SELECT .* FROM clients WHERE tenant_id = \$1 AND client_id = \$2$/) });
    expect(slow[0]!.duration_ms as number).toBeGreaterThanOrEqual(100);
    expect(JSON.stringify(lines)).not.toContain('param-value-that-must-not-be-logged');
  });

  it('refuses a connection string that is not a URL with a message naming the setting', async () => {
    await expect(openPg('host=127.0.0.1 dbname=x')).rejects.toThrow(/^STORAGE_POSTGRESQL_URL must be a URL/);
  });

  it('logs nothing when slow_query_ms is 0', async () => {
    const lines: string[] = [];
    const s = await openPg(db.url, { slow_query_ms: 0 }, pino({ level: 'warn' }, { write: (l: string) => lines.push(l) }));
    await s.clients.count('quiet-t');
    await s.close();
    expect(lines).toEqual([]);
  });
});

describe('transactions (KeyRepository.transaction)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDb();
  });

  it('runs every repository call inside fn on its one connection (a pool of one does not deadlock)', async () => {
    const s = await openPg(db.url, { pool_max: 1 });
    try {
      await s.keys.transaction('tx-one', async () => {
        await s.keys.insert('tx-one', [keyRecord('k1')]);
        await s.keys.update('tx-one', 'k1', { promoted: false });
        await s.audit.insert('tx-one', { id: 'a1', type: 'jwks.rotated', status: 'success', username: null, user_id: null, client_id: null, ip_address: null, user_agent: null, tenant_id: 'tx-one', details: {}, timestamp: new Date().toISOString() });
        expect((await s.keys.list('tx-one'))[0]).toMatchObject({ kid: 'k1', promoted: false });
      });
      expect((await s.audit.get('tx-one', 'a1'))?.type).toBe('jwks.rotated');
    } finally {
      await s.close();
    }
  });

  it('refuses a call for another tenant inside a tenant transaction, and rolls back', async () => {
    const s = await openPg(db.url);
    try {
      await expect(
        s.keys.transaction('tx-a', async () => {
          await s.keys.insert('tx-a', [keyRecord('ka')]);
          await s.keys.list('tx-b');
        }),
      ).rejects.toThrow(/tenant "tx-b" inside a transaction of tenant "tx-a"/);
      expect(await s.keys.list('tx-a')).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it('work that outlives the transaction gets a transaction of its own', async () => {
    const s = await openPg(db.url);
    try {
      let late: Promise<unknown> | undefined;
      await s.keys.transaction('tx-late', async () => {
        late = new Promise((r) => setTimeout(r, 50)).then(() => s.keys.insert('tx-late', [keyRecord('k-late')]));
      });
      await late;
      expect((await s.keys.list('tx-late')).map((k) => k.kid)).toEqual(['k-late']);
    } finally {
      await s.close();
    }
  });

  it('serialises transactions of one tenant across instances, not of different tenants', async () => {
    const a = await openPg(db.url);
    const b = await openPg(db.url);
    try {
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let entered!: () => void;
      const aInside = new Promise<void>((r) => (entered = r));
      const first = a.keys.transaction('lock-t', async () => {
        entered();
        await held;
      });
      await aInside;
      const order: string[] = [];
      const sameTenant = b.keys.transaction('lock-t', async () => void order.push('same tenant'));
      const otherTenant = b.keys.transaction('lock-u', async () => void order.push('other tenant'));
      await otherTenant;
      await new Promise((r) => setTimeout(r, 200));
      expect(order).toEqual(['other tenant']);
      release();
      await Promise.all([first, sameTenant]);
      expect(order).toEqual(['other tenant', 'same tenant']);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('rotates once when two instances find the keys due at the same time', async () => {
    const config = loadConfig({
      SECURITY_KEY_STORE_ALGORITHMS: 'ES256,EdDSA',
      SECURITY_KEY_STORE_ROTATION_INTERVAL_DAYS: '90',
      SVC_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64'),
    });
    const sealer = new Sealer(Buffer.alloc(32, 3));
    const events = new InProcessBus();
    const log = pino({ level: 'silent' });
    const now = new Date('2026-03-01T12:00:00.000Z');
    const old = new Date(now.getTime() - 100 * 86_400_000);
    const a = await openPg(db.url);
    const b = await openPg(db.url);
    try {
      for (const tenant of ['rot-1', 'rot-2', 'rot-3']) {
        await a.keys.insert(tenant, await Promise.all(config.security.key_store.algorithms.map((alg) => newKeyRecord(alg, sealer, tenant, old))));
        const deps = (storage: PgStorage): KeyLifecycleDeps => ({ storage, sealer, config, events, log });
        const results = await Promise.all([rotateIfDue(deps(a), tenant, now), rotateIfDue(deps(b), tenant, now)]);
        expect(results.filter((r) => r !== null)).toHaveLength(1);
        const keys = await a.keys.list(tenant);
        expect(keys.filter((k) => k.status === 'active')).toHaveLength(2);
        expect(keys.filter((k) => k.status === 'expiring')).toHaveLength(2);
      }
    } finally {
      await events.close();
      await a.close();
      await b.close();
    }
  });
});

describe('U+0000 in input (PostgreSQL text cannot hold it)', () => {
  let s: PgStorage;
  beforeAll(async () => {
    s = await openPg((await freshDb()).url);
  });
  afterAll(async () => s?.close());

  it('is no error: lookups with it find nothing', async () => {
    expect(await s.clients.get('nul-t', 'a\u0000b')).toBeUndefined();
    expect(await s.users.findByEmail('nul-t', 'x\u0000@example.com')).toBeUndefined();
    expect(await s.oidc.find('nul-t', 'AuthorizationCode', '\u0000')).toBeUndefined();
    expect(await s.oidc.findByUserCode('nul-t', 'DeviceCode', 'AB\u0000CD')).toBeUndefined();
    expect((await s.clients.list('nul-t', { q: '\u0000' }, { limit: 10, include_count: true })).total_count).toBe(0);
  });

  it('is stored as U+FFFD in columns and in JSON keys and strings', async () => {
    await s.clients.create('nul-t', clientRecord('c-nul', { metadata: { client_name: 'A\u0000B', tags: ['t\u0000'] } }));
    const c = await s.clients.get('nul-t', 'c-nul');
    expect(c?.metadata).toMatchObject({ client_name: 'A\uFFFDB', tags: ['t\uFFFD'] });
    await s.oidc.upsert('nul-t', 'Interaction', 'i1', { params: { state: 's\u0000', ['k\u0000']: 1, literal: '\\u0000' } }, null);
    expect((await s.oidc.find('nul-t', 'Interaction', 'i1'))?.payload).toEqual({ params: { state: 's\uFFFD', ['k\uFFFD']: 1, literal: '\\u0000' } });
  });

  it('keeps a backslash followed by "u0000" exactly (it is not a NUL)', async () => {
    await s.oidc.upsert('nul-t', 'Grant', 'g1', { text: 'C:\\u0000dir' }, null);
    expect((await s.oidc.find('nul-t', 'Grant', 'g1'))?.payload).toEqual({ text: 'C:\\u0000dir' });
  });
});
