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
import { PREPARE_AFTER_USES } from '../../src/storage/postgresql/prepared.js';
import { inlineLiterals, paramLiterals } from '../../src/storage/postgresql/sql.js';
import { TenantDb } from '../../src/storage/postgresql/tenant-db.js';
import { loadConfig } from '../../src/config/index.js';
import { createLoginRole, migratedDatabase, openPg, pgSettings, type TestDatabase } from '../helpers/postgres.js';

const A = 'tenant-a';
const B = 'tenant-b';
const HOSTILE = ["o'brien", "x'); DELETE FROM users; --", 'back\\slash \\x00 \\\\', '$1 $2 ${x}', 'é ü 漢字 🙂', "E'\\''", ''];

/** A statement with its parameters written in, as TenantDb.statement's inlined path builds it. */
function inlineParams(sql: string, params: readonly unknown[]): string | undefined {
  const literals = paramLiterals(params);
  return literals && inlineLiterals(sql, literals);
}

let db: TestDatabase;
let login: Awaited<ReturnType<typeof createLoginRole>>;
let pool: pg.Pool;
let tdb: TenantDb;
let queries: string[];
/** Every text sent on the pool's connection (pool.query's and checked-out clients' alike). */
let sent: string[];

beforeAll(async () => {
  db = await migratedDatabase();
  login = await createLoginRole();
  // One connection: a binding left behind by one statement would be seen by the next.
  // createPool, as the product does: an idle connection the server ends (57P01 "terminating
  // connection due to administrator command", once in CI) is dropped, not an uncaught error.
  pool = createPool(pgSettings(login.urlFor(db.name), { pool_max: 1 }), () => undefined);
  queries = [];
  sent = [];
  pool.on('connect', (client: pg.PoolClient) => {
    const clientQuery = client.query.bind(client);
    client.query = ((text: string | { text: string }, ...rest: unknown[]) => {
      sent.push(typeof text === 'string' ? text : text.text);
      return (clientQuery as (...a: unknown[]) => unknown)(text, ...rest);
    }) as typeof client.query;
  });
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
    expect(queries[0]).toMatch(/^SET LOCAL app\.tenant_id = 'tenant-a';\n/);
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

describe('TenantDb.script (several statements as one transaction, one round trip)', () => {
  const insertPref = 'INSERT INTO user_preferences (tenant_id, user_id, data, updated_at) VALUES ($1, $2, $3, now())';
  const prefCount = async (tenant: string, userId: string) =>
    Number((await tdb.statement<{ n: string }>(tenant, 'SELECT count(*) AS n FROM user_preferences WHERE user_id = $1', [userId])).rows[0]!.n);

  it('is one round trip and answers each statement\'s rows in order', async () => {
    queries.length = 0;
    const [updated, read] = await tdb.script(A, [
      { sql: 'UPDATE users SET updated_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING id', params: [A, `${A}-1`] },
      { sql: 'SELECT $1::text AS v', params: [HOSTILE[1]] },
    ]);
    expect(queries).toHaveLength(1);
    expect(queries[0]).toMatch(/^SET LOCAL app\.tenant_id = 'tenant-a';\n/);
    expect(updated).toEqual({ rows: [{ id: `${A}-1` }], rowCount: 1 });
    expect(read!.rows).toEqual([{ v: HOSTILE[1] }]);
  });

  it('commits all or nothing: a failing statement rolls back the ones before it', async () => {
    await expect(
      tdb.script(A, [
        { sql: insertPref, params: [A, 'script-1', '{}'] },
        { sql: insertPref, params: [A, 'script-1', '{}'] }, // the same key: 23505
      ]),
    ).rejects.toMatchObject({ code: '23505' });
    expect(await prefCount(A, 'script-1')).toBe(0);
    await tdb.script(A, [{ sql: insertPref, params: [A, 'script-1', '{}'] }, { sql: insertPref, params: [A, 'script-2', '{}'] }]);
    expect(await prefCount(A, 'script-1')).toBe(1);
    expect(await prefCount(A, 'script-2')).toBe(1);
  });

  it('binds every statement to its tenant: one writing into another tenant fails the whole script, and no binding is left behind', async () => {
    await expect(
      tdb.script(A, [
        { sql: insertPref, params: [A, 'script-3', '{}'] },
        { sql: "INSERT INTO users (tenant_id, id, email, created_at, updated_at) VALUES ($1, 'planted', 'p@example.com', now(), now())", params: [B] },
      ]),
    ).rejects.toMatchObject({ code: '42501' });
    expect(await prefCount(A, 'script-3')).toBe(0);
    const { rows } = await pool.query<{ t: string | null }>("SELECT current_setting('app.tenant_id', true) AS t");
    expect(rows[0]!.t ?? '').toBe('');
  });

  it('runs the statements one by one in a transaction for a Buffer, and joins an open transaction()', async () => {
    queries.length = 0;
    const [r] = await tdb.script(A, [{ sql: 'SELECT length($1::bytea) AS n', params: [Buffer.from([0, 1])] }]);
    expect(r!.rows).toEqual([{ n: 2 }]);
    expect(queries).toEqual([]);
    await expect(
      tdb.transaction(A, 'test', async () => {
        await tdb.script(A, [{ sql: insertPref, params: [A, 'script-4', '{}'] }]);
        throw new Error('abort');
      }),
    ).rejects.toThrow('abort');
    expect(await prefCount(A, 'script-4')).toBe(0);
  });
});

describe('TenantDb.statement, prepared (a text used often is prepared once per connection and run with EXECUTE)', () => {
  /** Whether `sql` is prepared on the pool's only connection (the view holds the whole PREPARE). */
  const isPrepared = async (sql: string) => (await pool.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements')).rows.some((r) => r.statement.endsWith(` AS ${sql}`));

  it(`prepares a text at its ${PREPARE_AFTER_USES}th use, then sends only the binding and EXECUTE, one round trip each`, async () => {
    const sql = 'SELECT id, email FROM users WHERE tenant_id = $1 AND id = $2';
    sent.length = 0;
    for (let i = 0; i < PREPARE_AFTER_USES + 2; i++) {
      const { rows } = await tdb.statement(A, sql, [A, `${A}-2`]);
      expect(rows).toEqual([{ id: `${A}-2`, email: `${A}-2@example.com` }]);
    }
    const prepares = sent.filter((t) => t.startsWith('PREPARE'));
    expect(prepares).toHaveLength(1);
    expect(prepares[0]).toContain(sql);
    // Before: the statement inlined; from the PREPARE on: EXECUTE with the values as literals.
    expect(sent.filter((t) => t.includes("'tenant-a-2'") && t.includes('FROM users'))).toHaveLength(PREPARE_AFTER_USES - 1);
    const executes = sent.filter((t) => /EXECUTE svc_\d+\('tenant-a', 'tenant-a-2'\)/.test(t));
    expect(executes).toHaveLength(3);
    for (const text of executes) expect(text).toMatch(/^SET LOCAL app\.tenant_id = 'tenant-a';\n/);
    expect(sent).toHaveLength(PREPARE_AFTER_USES + 2 + 1);
    expect(await isPrepared(sql)).toBe(true);
  });

  it.each(HOSTILE)('hands %j to a prepared statement unchanged, as a value', async (value) => {
    const sql = 'SELECT $1::text AS hostile, length($1) AS len';
    for (let i = 0; i < PREPARE_AFTER_USES + 1; i++) {
      const { rows } = await tdb.statement<{ hostile: string; len: number }>(A, sql, [value]);
      expect(rows).toEqual([{ hostile: value, len: [...value].length }]);
    }
    expect(await isPrepared(sql)).toBe(true);
  });

  it('keeps row-level security per execution: one prepared text, tenants alternating past the generic plan, sees only its own', async () => {
    const sql = "SELECT id FROM users WHERE id LIKE $1 ORDER BY id";
    // PostgreSQL switches to a generic plan after five executions; twelve alternate here.
    for (let i = 0; i < 12; i++) {
      const tenant = i % 2 ? B : A;
      const { rows } = await tdb.statement<{ id: string }>(tenant, sql, ['tenant-%']);
      expect(rows.map((r) => r.id)).toEqual([`${tenant}-1`, `${tenant}-2`]);
    }
    expect(await isPrepared(sql)).toBe(true);
    const { rows } = await pool.query<{ t: string | null }>("SELECT current_setting('app.tenant_id', true) AS t");
    expect(rows[0]!.t ?? '').toBe('');
  });

  it('reports the rowCount of a prepared write', async () => {
    const sql = 'UPDATE users SET updated_at = now() WHERE tenant_id = $1 AND id LIKE $2';
    const counts: number[] = [];
    for (let i = 0; i < PREPARE_AFTER_USES + 1; i++) counts.push((await tdb.statement(B, sql, [B, `${B}-%`])).rowCount);
    expect(counts).toEqual(Array(PREPARE_AFTER_USES + 1).fill(2));
    expect(await isPrepared(sql)).toBe(true);
  });

  it('a prepared write refused by row-level security changes nothing, and the next statement is served', async () => {
    const sql = 'INSERT INTO users (tenant_id, id, email, created_at, updated_at) VALUES ($1, $2, $3, now(), now())';
    // Prepared by the tenant's own writes first (removed again below).
    for (let i = 0; i < PREPARE_AFTER_USES; i++) await tdb.statement(A, sql, [A, `prep-${i}`, `prep-${i}@example.com`]);
    expect(await isPrepared(sql)).toBe(true);
    await expect(tdb.statement(A, sql, [B, 'planted', 'planted@example.com'])).rejects.toMatchObject({ code: '42501' });
    await expect(tdb.statement(A, sql, [A, 'prep-0', 'dup@example.com'])).rejects.toMatchObject({ code: '23505' });
    const { rows } = await tdb.statement<{ n: string }>(B, "SELECT count(*) AS n FROM users WHERE id = 'planted'");
    expect(Number(rows[0]!.n)).toBe(0);
    await tdb.statement(A, "DELETE FROM users WHERE tenant_id = $1 AND id LIKE 'prep-%'", [A]);
    const left = await tdb.statement<{ n: string }>(A, 'SELECT count(*) AS n FROM users');
    expect(Number(left.rows[0]!.n)).toBe(2);
  });

  it('keeps the inlined path for a text the server will not prepare, without asking again', async () => {
    // `$1 IS NULL` gives the server no type to infer; an inlined literal of unknown type is text.
    const sql = 'SELECT $1 IS NULL AS v';
    sent.length = 0;
    for (let i = 0; i < PREPARE_AFTER_USES + 3; i++) {
      const { rows } = await tdb.statement<{ v: boolean }>(A, sql, ['x']);
      expect(rows).toEqual([{ v: false }]);
    }
    expect(sent.filter((t) => t.startsWith('PREPARE'))).toHaveLength(1);
    expect(sent.filter((t) => t.includes('EXECUTE'))).toHaveLength(0);
    expect(await isPrepared(sql)).toBe(false);
  });

  it('answers when the connection lost its statements behind its back (DEALLOCATE ALL), and prepares again', async () => {
    const sql = 'SELECT email FROM users WHERE tenant_id = $1 AND id = $2';
    for (let i = 0; i < PREPARE_AFTER_USES; i++) await tdb.statement(B, sql, [B, `${B}-1`]);
    expect(await isPrepared(sql)).toBe(true);
    await pool.query('DEALLOCATE ALL');
    sent.length = 0;
    for (let i = 0; i < 2; i++) {
      const { rows } = await tdb.statement(B, sql, [B, `${B}-1`]);
      expect(rows).toEqual([{ email: `${B}-1@example.com` }]);
    }
    // The failed EXECUTE, the statement inlined, then PREPARE and EXECUTE again.
    expect(sent.map((t) => (t.startsWith('PREPARE') ? 'prepare' : t.includes('EXECUTE') ? 'execute' : 'inlined'))).toEqual(['execute', 'inlined', 'prepare', 'execute']);
    expect(await isPrepared(sql)).toBe(true);
  });

  it('prepares nothing when switched off (STORAGE_POSTGRESQL_PREPARED_STATEMENTS=false: a pooler in transaction mode)', async () => {
    expect(loadConfig({ STORAGE_POSTGRESQL_PREPARED_STATEMENTS: 'false' }).storage.postgresql.prepared_statements).toBe(false);
    expect(loadConfig({}).storage.postgresql.prepared_statements).toBe(true);
    for (const prepared_statements of [false, true]) {
      // The storage as the service opens it, on one connection, with the setting as loaded.
      const storage = await openPg(login.urlFor(db.name), { pool_max: 1, prepared_statements });
      try {
        for (let i = 0; i < PREPARE_AFTER_USES + 2; i++) expect((await storage.users.get(A, `${A}-1`))?.email).toBe(`${A}-1@example.com`);
        const own = (storage as unknown as { pool: pg.Pool }).pool;
        const { rows } = await own.query<{ n: string }>('SELECT count(*) AS n FROM pg_prepared_statements');
        expect(Number(rows[0]!.n) > 0).toBe(prepared_statements);
      } finally {
        await storage.close();
      }
    }
  });

  it('does not prepare a text whose placeholders do not match its values', async () => {
    const sql = "SELECT id FROM users WHERE id = $1";
    sent.length = 0;
    for (let i = 0; i < PREPARE_AFTER_USES + 1; i++) {
      const { rows } = await tdb.statement<{ id: string }>(A, sql, [`${A}-1`, 'unused']);
      expect(rows).toEqual([{ id: `${A}-1` }]);
    }
    expect(sent.filter((t) => t.startsWith('PREPARE'))).toHaveLength(0);
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

describe('TenantDb.statement, prepared: answers parsed by its own query object (simple-query.ts) as node-postgres would', () => {
  it('reads every type the repositories read exactly as the inlined path does: several rows, none, NULL', async () => {
    await tdb.withTenant(A, (q) =>
      q(
        `UPDATE users SET email_verified = true, mfa_methods = '["totp", {"k": [1, 2.5, null]}]', locked_until = '2026-01-02T03:04:05.678Z', given_name = 'Zoë'
         WHERE tenant_id = $1 AND id = $2`,
        [A, `${A}-1`],
      ),
    );
    const sql = `SELECT id, email, email_verified, mfa_methods, locked_until, given_name, created_at, (SELECT count(*) FROM users WHERE id LIKE $2) AS n, 1.5::float8 AS f, 7::int4 AS i
                 FROM users WHERE tenant_id = $1 AND id LIKE $2 ORDER BY id`;
    const answers: unknown[] = [];
    sent.length = 0;
    for (let i = 0; i < PREPARE_AFTER_USES + 2; i++) answers.push(await tdb.statement(A, sql, [A, `${A}-%`]));
    // The first answers came through node-postgres's Query (inlined), the last through EXECUTE.
    expect(sent.filter((t) => t.includes('EXECUTE'))).toHaveLength(3);
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    const { rows, rowCount } = answers[0] as { rows: Array<Record<string, unknown>>; rowCount: number };
    expect(rowCount).toBe(2);
    expect(rows[0]).toMatchObject({ id: `${A}-1`, email_verified: true, mfa_methods: ['totp', { k: [1, 2.5, null] }], locked_until: '2026-01-02T03:04:05.678Z', given_name: 'Zoë', n: 2, f: 1.5, i: 7 });
    expect(rows[1]).toMatchObject({ id: `${A}-2`, email_verified: false, mfa_methods: [], locked_until: null, given_name: null });
    expect(rows[0]!.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Object.keys(rows[0]!)).toEqual(['id', 'email', 'email_verified', 'mfa_methods', 'locked_until', 'given_name', 'created_at', 'n', 'f', 'i']);
    // And no row at all.
    const none = await tdb.statement(A, sql, [A, 'nobody-%']);
    expect(none).toEqual({ rows: [], rowCount: 0 });
  });

  it('a prepared read past statement_timeout fails with the server\'s error (57014), once, and the pool serves the next', async () => {
    const slowPool = createPool(pgSettings(login.urlFor(db.name), { pool_max: 1, statement_timeout_ms: 300 }), () => undefined);
    const slow = new TenantDb(slowPool, 0);
    const admin = await db.admin();
    try {
      const sql = 'SELECT email FROM users WHERE tenant_id = $1 AND id = $2';
      for (let i = 0; i < PREPARE_AFTER_USES + 1; i++) expect((await slow.statement(B, sql, [B, `${B}-1`])).rows).toEqual([{ email: `${B}-1@example.com` }]);
      await admin.query('BEGIN');
      await admin.query('LOCK TABLE users IN ACCESS EXCLUSIVE MODE');
      const started = Date.now();
      let settled = 0;
      const err = await slow.statement(B, sql, [B, `${B}-1`]).then(
        () => undefined,
        (e: unknown) => {
          settled++;
          return e;
        },
      );
      expect(Date.now() - started).toBeLessThan(3000);
      expect((err as Error).cause ?? err).toMatchObject({ code: '57014' });
      await admin.query('ROLLBACK');
      expect((await slow.statement(B, sql, [B, `${B}-1`])).rows).toEqual([{ email: `${B}-1@example.com` }]);
      expect(settled).toBe(1);
    } finally {
      await admin.query('ROLLBACK').catch(() => undefined);
      await admin.end();
      await slowPool.end();
    }
  });
});
