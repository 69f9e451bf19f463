/**
 * Row-level security proven by the database itself, not by the repositories' WHERE clauses: raw SQL
 * without any tenant filter, sent on the service's own pool configuration while logged in as a
 * plain LOGIN role (no superuser, no BYPASSRLS) that is only a member of svc_app, as production
 * should be set up (docs/postgresql.md). For EVERY table of the schema:
 *   - nothing is visible or writable while no tenant is bound;
 *   - tenant A's transaction can neither read, update, delete nor insert tenant B's rows.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/storage/postgresql/pool.js';
import { createLoginRole, migratedDatabase, openPg, pgSettings, type TestDatabase } from '../helpers/postgres.js';

const A = 'tenant-a';
const B = 'tenant-b';

/** One row per table for tenant $1 with key $2. A new table fails the coverage test until it is added here. */
const SAMPLES: Record<string, string> = {
  clients: `INSERT INTO clients (tenant_id, client_id, metadata, client_name, application_type, created_at, updated_at) VALUES ($1, $2, '{}', 'n', 'web', now(), now())`,
  oidc_payloads: `INSERT INTO oidc_payloads (tenant_id, model, id, payload, expires_at) VALUES ($1, 'Session', $2, '{}', extract(epoch FROM now())::bigint + 3600)`,
  signing_keys: `INSERT INTO signing_keys (tenant_id, kid, alg, status, public_jwk, private_sealed, created_at) VALUES ($1, $2, 'RS256', 'active', '{}', 'sealed', now())`,
  audit_entries: `INSERT INTO audit_entries (tenant_id, id, type, status, "timestamp") VALUES ($1, $2, 'login', 'success', now())`,
  login_attempts: `INSERT INTO login_attempts (tenant_id, key, at) VALUES ($1, $2, now())`,
  users: `INSERT INTO users (tenant_id, id, email, created_at, updated_at) VALUES ($1, $2, $2 || '@example.com', now(), now())`,
  registration_tokens: `INSERT INTO registration_tokens (tenant_id, jti, token_hash, expires_at, max_usage_count, policies, created_at) VALUES ($1, $2, $2, now() + interval '1 hour', 1, '[]', now())`,
  // The registry's rows all belong to `_platforms` in practice (migrations/postgresql/003); the policy is the same.
  tenants: `INSERT INTO tenants (tenant_id, slug, id, display_name, status, created_at, updated_at) VALUES ($1, $2, $2, 'n', 'active', now(), now())`,
  tenant_config: `INSERT INTO tenant_config (tenant_id, section, data, updated_at) VALUES ($1, $2, '{}', now())`,
  social_identities: `INSERT INTO social_identities (tenant_id, provider, subject, user_id, linked_at) VALUES ($1, 'corp', $2, $2, now())`,
  webauthn_credentials: `INSERT INTO webauthn_credentials (tenant_id, id, user_id, public_key, device_type, name, created_at) VALUES ($1, $2, 'u', 'pk', 'singleDevice', 'n', now())`,
  webauthn_challenges: `INSERT INTO webauthn_challenges (tenant_id, challenge, binding, expires_at) VALUES ($1, $2, 'b', now() + interval '5 minutes')`,
  account_tokens: `INSERT INTO account_tokens (tenant_id, token_hash, kind, user_id, email, created_at, expires_at) VALUES ($1, $2, 'password_reset', $2, $2 || '@example.com', now(), now() + interval '1 hour')`,
  user_preferences: `INSERT INTO user_preferences (tenant_id, user_id, data, updated_at) VALUES ($1, $2, '{}', now())`,
  resources: `INSERT INTO resources (tenant_id, id, identifier, name, scopes, token_format, access_token_ttl, signing_alg, created_at, updated_at) VALUES ($1, $2, 'https://' || $2, 'n', '[]', 'jwt', 60, 'RS256', now(), now())`,
};
const TABLES = Object.keys(SAMPLES);

let db: TestDatabase;
let login: Awaited<ReturnType<typeof createLoginRole>>;
let service: pg.Pool;
let admin: pg.Client;

/** Runs fn in a transaction of the service role, bound to a tenant (or to none), then commits. */
async function as<T>(tenant: string | null, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await service.connect();
  try {
    await c.query('BEGIN');
    if (tenant !== null) await c.query("SELECT set_config('app.tenant_id', $1, true)", [tenant]);
    const result = await fn(c);
    await c.query('COMMIT');
    return result;
  } catch (err) {
    await c.query('ROLLBACK');
    throw err;
  } finally {
    c.release();
  }
}

const count = async (c: pg.ClientBase, table: string, where = 'true', params: unknown[] = []) => Number((await c.query(`SELECT count(*) AS n FROM ${table} WHERE ${where}`, params)).rows[0].n);
/** Rows per tenant, as the superuser sees them (ground truth). */
const truth = async (table: string) =>
  Object.fromEntries((await admin.query(`SELECT tenant_id, count(*)::int AS n FROM ${table} GROUP BY tenant_id ORDER BY tenant_id`)).rows.map((r) => [r.tenant_id, r.n]));
const RLS_REFUSED = { code: '42501', message: expect.stringMatching(/row-level security/) };

beforeAll(async () => {
  db = await migratedDatabase();
  login = await createLoginRole();
  // createPool, as the product does: pool.end() resolves before its connections have closed, and
  // the database drop in afterAll then ends them on the server (57P01), which a pool without an
  // error listener would throw as an uncaught exception (seen once in CI).
  service = createPool(pgSettings(login.urlFor(db.name), { pool_max: 2 }), () => undefined);
  admin = await db.admin();
  for (const table of TABLES) {
    // Each tenant writes its own rows through the policy (WITH CHECK lets these through).
    for (const tenant of [A, B]) {
      await as(tenant, async (c) => {
        await c.query(SAMPLES[table]!, [tenant, `${tenant}-1`]);
        await c.query(SAMPLES[table]!, [tenant, `${tenant}-2`]);
      });
    }
  }
});

afterAll(async () => {
  await service?.end();
  await admin?.end();
  await db?.drop();
  await login?.drop();
});

describe('the service connection', () => {
  it('is a plain login role acting as svc_app: no superuser, no BYPASSRLS, owner of nothing', async () => {
    const { rows } = await service.query(
      `SELECT current_user AS role, session_user AS login, r.rolsuper AS superuser, r.rolbypassrls AS bypass,
              (SELECT count(*)::int FROM pg_class c WHERE c.relowner = r.oid) AS owned
       FROM pg_roles r WHERE r.rolname = current_user`,
    );
    expect(rows[0]).toEqual({ role: 'svc_app', login: login.name, superuser: false, bypass: false, owned: 0 });
  });

  it('cannot switch RLS off, truncate, or become another role', async () => {
    await expect(service.query('ALTER TABLE clients DISABLE ROW LEVEL SECURITY')).rejects.toMatchObject({ code: '42501' });
    await expect(service.query('ALTER TABLE clients NO FORCE ROW LEVEL SECURITY')).rejects.toMatchObject({ code: '42501' });
    for (const table of TABLES) await expect(service.query(`TRUNCATE ${table}`)).rejects.toMatchObject({ code: '42501' });
    await expect(service.query('SET ROLE postgres')).rejects.toMatchObject({ code: '42501' });
    await expect(service.query('SET ROLE svc_maintenance')).rejects.toMatchObject({ code: '42501' });
  });

  it('works end to end through PgStorage when logged in as that role', async () => {
    const s = await openPg(login.urlFor(db.name));
    try {
      expect(await s.clients.count(A)).toBe(2);
      expect((await s.clients.get(A, `${B}-1`))).toBeUndefined();
    } finally {
      await s.close();
    }
  });
});

describe('every table', () => {
  it('is covered here: the schema has exactly these tables besides schema_migrations', async () => {
    const { rows } = await admin.query(
      `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname <> 'schema_migrations' ORDER BY 1`,
    );
    expect(rows.map((r) => r.relname)).toEqual([...TABLES].sort());
  });

  it.each(TABLES)('%s: RLS enabled and forced, a tenant policy, tenant_id first in the primary key', async (table) => {
    const { rows } = await admin.query(
      `SELECT c.relrowsecurity AS enabled, c.relforcerowsecurity AS forced,
              (SELECT count(*)::int FROM pg_policies p WHERE p.tablename = c.relname AND p.policyname = 'tenant_isolation' AND 'public' = ANY (p.roles)) AS policies,
              (SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                WHERE i.indrelid = c.oid AND i.indisprimary) AS first_key_column
       FROM pg_class c WHERE c.oid = $1::regclass`,
      [table],
    );
    expect(rows[0]).toEqual({ enabled: true, forced: true, policies: 1, first_key_column: 'tenant_id' });
  });

  it.each(TABLES)('%s: without app.tenant_id nothing is visible or writable', async (table) => {
    expect(await truth(table)).toEqual({ [A]: 2, [B]: 2 });
    // Outside any transaction, and in a transaction that binds no tenant.
    expect(await count(service, table)).toBe(0);
    await as(null, async (c) => {
      expect(await count(c, table)).toBe(0);
      expect((await c.query(`UPDATE ${table} SET tenant_id = tenant_id`)).rowCount).toBe(0);
      expect((await c.query(`DELETE FROM ${table}`)).rowCount).toBe(0);
    });
    await expect(as(null, (c) => c.query(SAMPLES[table]!, [A, 'no-tenant']))).rejects.toMatchObject(RLS_REFUSED);
    // On a connection whose previous transaction bound a tenant, the setting reads '' afterwards.
    const c = await service.connect();
    try {
      await c.query('BEGIN');
      await c.query("SELECT set_config('app.tenant_id', $1, true)", [A]);
      expect(await count(c, table)).toBe(2);
      await c.query('COMMIT');
      expect((await c.query("SELECT current_setting('app.tenant_id', true) AS v")).rows[0].v).toBe('');
      expect(await count(c, table)).toBe(0);
    } finally {
      c.release();
    }
    expect(await truth(table)).toEqual({ [A]: 2, [B]: 2 });
  });

  it.each(TABLES)('%s: tenant A cannot read tenant B rows', async (table) => {
    await as(A, async (c) => {
      expect(await count(c, table)).toBe(2);
      expect(await count(c, table, 'tenant_id = $1', [B])).toBe(0);
      expect((await c.query(`SELECT DISTINCT tenant_id FROM ${table}`)).rows).toEqual([{ tenant_id: A }]);
    });
  });

  it.each(TABLES)('%s: tenant A cannot update tenant B rows, nor move its own rows to B', async (table) => {
    await as(A, async (c) => {
      expect((await c.query(`UPDATE ${table} SET tenant_id = tenant_id WHERE tenant_id = $1`, [B])).rowCount).toBe(0);
    });
    await expect(as(A, (c) => c.query(`UPDATE ${table} SET tenant_id = $1 WHERE tenant_id = $2`, [B, A]))).rejects.toMatchObject(RLS_REFUSED);
    expect(await truth(table)).toEqual({ [A]: 2, [B]: 2 });
  });

  it.each(TABLES)('%s: tenant A cannot delete tenant B rows (an unfiltered DELETE reaches only its own)', async (table) => {
    await as(A, async (c) => {
      expect((await c.query(`DELETE FROM ${table} WHERE tenant_id = $1`, [B])).rowCount).toBe(0);
    });
    const c = await service.connect();
    try {
      await c.query('BEGIN');
      await c.query("SELECT set_config('app.tenant_id', $1, true)", [A]);
      expect((await c.query(`DELETE FROM ${table}`)).rowCount).toBe(2);
      await c.query('ROLLBACK'); // keep A's rows for the other tests
    } finally {
      c.release();
    }
    expect(await truth(table)).toEqual({ [A]: 2, [B]: 2 });
  });

  it.each(TABLES)('%s: tenant A cannot insert a row for tenant B (WITH CHECK)', async (table) => {
    await expect(as(A, (c) => c.query(SAMPLES[table]!, [B, 'planted-by-a']))).rejects.toMatchObject(RLS_REFUSED);
    expect(await truth(table)).toEqual({ [A]: 2, [B]: 2 });
  });
});

describe('the cross-tenant sweep', () => {
  it('deletes only rows the database clock finds expired, of every tenant, and shows none', async () => {
    for (const tenant of [A, B]) {
      await as(tenant, (c) => c.query("INSERT INTO oidc_payloads (tenant_id, model, id, payload, expires_at) VALUES ($1, 'Grant', 'expired', '{}', 1)", [tenant]));
    }
    // A forged "now" far in the future still cannot remove live artefacts: the policy checks expiry.
    const { rows } = await service.query('SELECT svc_sweep_oidc_payloads($1) AS n', [Number.MAX_SAFE_INTEGER]);
    expect(Number(rows[0].n)).toBe(2);
    expect(await truth('oidc_payloads')).toEqual({ [A]: 2, [B]: 2 });
  });

  it('is the only way in: svc_app is not a member of svc_maintenance', async () => {
    const { rows } = await service.query("SELECT pg_has_role('svc_maintenance', 'MEMBER') AS member");
    expect(rows[0].member).toBe(false);
  });
});
