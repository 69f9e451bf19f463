/**
 * TenantDb.statement: one tenant-bound statement in one round trip (the binding and the statement
 * as one simple-protocol query, parameters inlined as escaped literals). What must hold: values
 * arrive exactly as node-postgres parameters would (hostile strings included), row-level security
 * still binds the statement to its tenant and the binding does not outlive it on the pooled
 * connection, a failed statement changes nothing, and inside transaction() the statement joins it.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/storage/postgresql/pool.js';
import { inlineParams } from '../../src/storage/postgresql/sql.js';
import { TenantDb } from '../../src/storage/postgresql/tenant-db.js';
import { createLoginRole, migratedDatabase, pgSettings, type TestDatabase } from '../helpers/postgres.js';

const A = 'tenant-a';
const B = 'tenant-b';
const HOSTILE = ["o'brien", "x'); DELETE FROM users; --", 'back\\slash \\x00 \\\\', '$1 $2 ${x}', 'é ü 漢字 🙂', "E'\\''", ''];

let db: TestDatabase;
let login: Awaited<ReturnType<typeof createLoginRole>>;
let pool: pg.Pool;
let tdb: TenantDb;
let queries: string[];

beforeAll(async () => {
  db = await migratedDatabase();
  login = await createLoginRole();
  // One connection: a binding left behind by one statement would be seen by the next.
  // createPool, as the product does: an idle connection the server ends (57P01 "terminating
  // connection due to administrator command", once in CI) is dropped, not an uncaught error.
  pool = createPool(pgSettings(login.urlFor(db.name), { pool_max: 1 }), () => undefined);
  queries = [];
  const query = pool.query.bind(pool);
  pool.query = ((text: string, values?: readonly unknown[]) => {
    queries.push(text);
    return query(text, values);
  }) as typeof pool.query;
  tdb = new TenantDb(pool, 0);
  for (const tenant of [A, B]) {
    for (const n of [1, 2]) {
      await tdb.withTenant(tenant, (q) => q("INSERT INTO users (tenant_id, id, email, created_at, updated_at) VALUES ($1, $2, $3, now(), now())", [tenant, `${tenant}-${n}`, `${tenant}-${n}@example.com`]));
    }
  }
});

afterAll(async () => {
  await pool?.end();
  await db?.drop();
  await login?.drop();
});

describe('inlineParams', () => {
  it('writes each value as node-postgres would send it: an escaped literal of unknown type, NULL for null', () => {
    expect(inlineParams('SELECT $1, $2, $3, $4, $5', ['a', 5, null, undefined, true])).toBe("SELECT 'a', '5', NULL, NULL, 'true'");
    expect(inlineParams('SELECT $1', ["o'brien"])).toBe("SELECT 'o''brien'");
    // Backslashes doubled in E'' syntax (pg.escapeLiteral puts a space before the E).
    expect(inlineParams('SELECT $1', ['a\\b'])).toBe("SELECT  E'a\\\\b'");
    expect(inlineParams('SELECT $1', [['x', 'y']])).toBe(`SELECT '{"x","y"}'`);
    expect(inlineParams('SELECT $1', [{ a: 1 }])).toBe(`SELECT '{"a":1}'`);
  });

  it('tells $1 from $10, and refuses what it cannot write (a Buffer, a placeholder without a value)', () => {
    const params = Array.from({ length: 10 }, (_, i) => `v${i + 1}`);
    expect(inlineParams('SELECT $10, $1', params)).toBe("SELECT 'v10', 'v1'");
    expect(inlineParams('SELECT $1', [Buffer.from('x')])).toBeUndefined();
    expect(inlineParams('SELECT $2', ['only one'])).toBeUndefined();
  });

  it('maps U+0000, which PostgreSQL text cannot hold, as the parameter path does', () => {
    expect(inlineParams('SELECT $1', ['a\u0000b'])).toBe("SELECT 'a\uFFFDb'");
  });
});

describe('TenantDb.statement', () => {
  it('is one round trip', async () => {
    queries.length = 0;
    await tdb.statement(A, 'SELECT id FROM users WHERE tenant_id = $1 AND id = $2', [A, `${A}-1`]);
    expect(queries).toHaveLength(1);
    expect(queries[0]).toContain("set_config('app.tenant_id', 'tenant-a', true)");
  });

  it.each(HOSTILE)('hands %j to the server unchanged', async (value) => {
    const { rows } = await tdb.statement<{ v: string; len: number }>(A, 'SELECT $1::text AS v, length($1) AS len', [value]);
    expect(rows).toEqual([{ v: value, len: [...value].length }]);
  });

  it('stores hostile values and reads them back, and an injection string stays a value', async () => {
    for (const [i, value] of HOSTILE.entries()) {
      await tdb.statement(A, 'INSERT INTO user_preferences (tenant_id, user_id, data, updated_at) VALUES ($1, $2, $3, now())', [A, value || `empty-${i}`, JSON.stringify({ value })]);
      const { rows } = await tdb.statement<{ data: { value: string } }>(A, 'SELECT data FROM user_preferences WHERE tenant_id = $1 AND user_id = $2', [A, value || `empty-${i}`]);
      expect(rows[0]?.data.value).toBe(value);
    }
    const { rows } = await tdb.statement<{ n: string }>(A, 'SELECT count(*) AS n FROM users');
    expect(Number(rows[0]!.n)).toBe(2);
  });

  it('sees only its tenant (row-level security, no WHERE on tenant_id), and leaves no binding behind', async () => {
    const seen = await tdb.statement<{ id: string }>(B, 'SELECT id FROM users ORDER BY id');
    expect(seen.rows.map((r) => r.id)).toEqual([`${B}-1`, `${B}-2`]);
    // The same (only) connection, no tenant bound: row-level security shows nothing.
    const { rows } = await pool.query<{ t: string | null; n: string }>("SELECT current_setting('app.tenant_id', true) AS t, (SELECT count(*) FROM users) AS n");
    expect(rows[0]!.t ?? '').toBe('');
    expect(Number(rows[0]!.n)).toBe(0);
  });

  it('cannot write into another tenant', async () => {
    await expect(tdb.statement(A, "INSERT INTO users (tenant_id, id, email, created_at, updated_at) VALUES ($1, 'planted', 'p@example.com', now(), now())", [B])).rejects.toMatchObject({ code: '42501' });
    const { rows } = await tdb.statement<{ n: string }>(B, 'SELECT count(*) AS n FROM users');
    expect(Number(rows[0]!.n)).toBe(2);
  });

  it('reports rowCount of the statement, not of the binding', async () => {
    const res = await tdb.statement(A, 'UPDATE users SET updated_at = now() WHERE tenant_id = $1', [A]);
    expect(res.rowCount).toBe(2);
  });

  it('takes the parameter path for a Buffer', async () => {
    queries.length = 0;
    const { rows } = await tdb.statement<{ n: number }>(A, 'SELECT length($1::bytea) AS n', [Buffer.from([0, 1, 2])]);
    expect(rows[0]!.n).toBe(3);
    expect(queries).toEqual([]); // a pooled client's transaction, not pool.query
  });

  it('joins an open transaction(): rolled back with it', async () => {
    await expect(
      tdb.transaction(A, 'test', async () => {
        await tdb.statement(A, "INSERT INTO users (tenant_id, id, email, created_at, updated_at) VALUES ($1, 'in-tx', 'tx@example.com', now(), now())", [A]);
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    const { rows } = await tdb.statement<{ n: string }>(A, "SELECT count(*) AS n FROM users WHERE id = 'in-tx'");
    expect(Number(rows[0]!.n)).toBe(0);
  });

  it('keeps the transaction() scope while one is open, and switches it off after the last (no promise hooks left on)', async () => {
    // Two connections: the file's own pool has one, and two transactions overlap here.
    const pool2 = createPool(pgSettings(login.urlFor(db.name), { pool_max: 2 }), () => undefined);
    try {
      await scopeAcrossTransactions(new TenantDb(pool2, 0));
    } finally {
      // Ended here, before afterAll drops the database under its connections.
      await pool2.end();
    }
  });
});

/** Two overlapping transaction() calls; the scope is read through Node's own `enabled` field (gone: the test fails). */
async function scopeAcrossTransactions(tdb: TenantDb): Promise<void> {
  const scopeEnabled = () => (tdb as unknown as { scope: { enabled: boolean } }).scope.enabled;
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let entered!: () => void;
  const inside = new Promise<void>((r) => (entered = r));
  const first = tdb.transaction(A, 'first', async () => {
    entered();
    await held;
    // Still inside after the second one ended: the statement joins this transaction.
    await tdb.statement(A, "INSERT INTO users (tenant_id, id, email, created_at, updated_at) VALUES ($1, 'late', 'late@example.com', now(), now())", [A]);
    throw new Error('roll back');
  });
  // Awaited below; this keeps a failed assertion in between from turning its rejection into an unhandled one.
  first.catch(() => undefined);
  try {
    // The second starts once the first is inside its body: on a loaded machine the first one's new
    // connection could otherwise open after the second had begun and committed (both scopes closed).
    await inside;
    await tdb.transaction(A, 'second', async () => undefined);
    expect(scopeEnabled()).toBe(true);
  } finally {
    // Never left holding its connection (the pool's end() would wait for it until the timeout).
    release();
  }
  await expect(first).rejects.toThrow('roll back');
  const { rows } = await tdb.statement<{ n: string }>(A, "SELECT count(*) AS n FROM users WHERE id = 'late'");
  expect(Number(rows[0]!.n)).toBe(0);
  expect(scopeEnabled()).toBe(false);
}
