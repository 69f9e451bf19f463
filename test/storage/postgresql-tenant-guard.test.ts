/**
 * The write guard of TenantDb (guardTenants, migration 110), as the service's role sees it: a
 * write of a tenant without a record fails with TenantGone and leaves nothing, in each of
 * TenantDb's paths (statement, script, withTenant); reads and the built-in tenants go unguarded;
 * the guard rides in the binding's message (no round trip of its own); and the tenant's delete
 * waits for a write in flight, then purges it, while a write after the delete fails.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TenantGone } from '../../src/errors.js';
import { createPool } from '../../src/storage/postgresql/pool.js';
import { TenantDb } from '../../src/storage/postgresql/tenant-db.js';
import { PgTenants } from '../../src/storage/postgresql/tenants.js';
import { createLoginRole, migratedDatabase, pgSettings, type TestDatabase } from '../helpers/postgres.js';

const LIVE = 'guard-live';
const GHOST = 'guard-ghost';
const now = new Date().toISOString();
const insertUser = (tenant: string, id: string) => ({
  sql: 'INSERT INTO users (tenant_id, id, email, created_at, updated_at) VALUES ($1, $2, $3, now(), now())',
  params: [tenant, id, `${id}@example.com`],
});

let db: TestDatabase;
let login: Awaited<ReturnType<typeof createLoginRole>>;
let pool: pg.Pool;
let tdb: TenantDb;
let tenants: PgTenants;
/** Every text sent (pool.query's and checked-out clients' alike). */
let sent: string[];

async function usersOf(tenant: string): Promise<number> {
  const admin = await db.admin();
  try {
    return (await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM users WHERE tenant_id = $1', [tenant])).rows[0]!.n;
  } finally {
    await admin.end();
  }
}

beforeAll(async () => {
  db = await migratedDatabase();
  login = await createLoginRole();
  pool = createPool(pgSettings(login.urlFor(db.name), { pool_max: 4 }), () => undefined);
  sent = [];
  pool.on('connect', (client: pg.PoolClient) => {
    const clientQuery = client.query.bind(client);
    client.query = ((text: string | { text: string }, ...rest: unknown[]) => {
      sent.push(typeof text === 'string' ? text : text.text);
      return (clientQuery as (...a: unknown[]) => unknown)(text, ...rest);
    }) as typeof client.query;
  });
  tdb = new TenantDb(pool, 0, undefined, { guardTenants: true });
  tenants = new PgTenants(tdb);
  await tenants.create({ id: 'id-live', slug: LIVE, display_name: 'Live', domain: null, status: 'active', created_at: now, updated_at: now });
});

afterAll(async () => {
  await pool?.end();
  await db?.drop();
  await login?.drop();
});

describe('TenantDb write guard', () => {
  it('refuses the writes of a tenant without a record, in every path, and stores nothing', async () => {
    const s = insertUser(GHOST, 'g1');
    await expect(tdb.statement(GHOST, s.sql, s.params)).rejects.toBeInstanceOf(TenantGone);
    await expect(tdb.script(GHOST, [s])).rejects.toThrow(new TenantGone(GHOST));
    await expect(tdb.withTenant(GHOST, (q) => q(s.sql, s.params))).rejects.toBeInstanceOf(TenantGone);
    expect(await usersOf(GHOST)).toBe(0);
  });

  it('lets the registered tenant write, with the guard in the binding message, and leaves reads and built-in tenants unguarded', async () => {
    sent.length = 0;
    const s = insertUser(LIVE, 'l1');
    await tdb.statement(LIVE, s.sql, s.params);
    expect(sent.filter((t) => t.includes('svc_tenant_write_guard'))).toHaveLength(1);
    expect(sent.find((t) => t.includes('svc_tenant_write_guard'))).toMatch(/^SET LOCAL app\.tenant_id = 'guard-live';\nSELECT svc_tenant_write_guard\('guard-live'\);\nINSERT INTO users/);
    await tdb.withTenant(LIVE, (q) => q(insertUser(LIVE, 'l2').sql, insertUser(LIVE, 'l2').params));
    expect(sent.filter((t) => /^BEGIN; SET LOCAL app\.tenant_id = 'guard-live'; SELECT svc_tenant_write_guard\('guard-live'\)$/.test(t))).toHaveLength(1);
    expect(await usersOf(LIVE)).toBe(2);

    sent.length = 0;
    expect((await tdb.statement(GHOST, 'SELECT id FROM users WHERE tenant_id = $1', [GHOST])).rows).toEqual([]);
    const d = insertUser('default', 'd1');
    await tdb.statement('default', d.sql, d.params);
    expect(sent.some((t) => t.includes('svc_tenant_write_guard'))).toBe(false);
  });

  it('makes the delete wait for a write in flight and purge it; a write after the delete fails', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let inserted!: () => void;
    const insertedP = new Promise<void>((r) => (inserted = r));
    const write = tdb.withTenant(LIVE, async (q) => {
      const s = insertUser(LIVE, 'in-flight');
      await q(s.sql, s.params);
      inserted();
      await held;
    });
    await insertedP;
    let deleted = false;
    const deletion = tenants.delete(LIVE).then((r) => ((deleted = true), r));
    await new Promise((r) => setTimeout(r, 300));
    expect(deleted).toBe(false);
    release();
    await write;
    expect(await deletion).toBe(true);
    expect(await usersOf(LIVE)).toBe(0);
    const s = insertUser(LIVE, 'too-late');
    await expect(tdb.statement(LIVE, s.sql, s.params)).rejects.toBeInstanceOf(TenantGone);
    expect(await usersOf(LIVE)).toBe(0);
  });
});
