/**
 * The tenant registry on PostgreSQL. Every call runs in a transaction bound to the registry's owner
 * `_platforms` (see ../registry.ts); the data purge of delete() re-binds the deleted tenant itself
 * so row-level security confines it to that tenant's rows.
 */
import { UniqueViolation } from '../errors.js';
import { REGISTRY_OWNER, REGISTRY_TABLE, TENANT_LOCK_NAME } from '../registry.js';
import type { Page, PageRequest, TenantFilter, TenantRecord, TenantRepository } from '../types.js';
import { sqlState } from './errors.js';
import { Params, searchCondition } from './sql.js';
import type { Query, TenantDb } from './tenant-db.js';

const COLUMNS = 'id, slug, display_name, domain, status, created_at, updated_at';
const BIND = "SELECT set_config('app.tenant_id', $1, true)";
/** The write guard's lock (migration 110), exclusive: every write of the tenant in flight ends first. */
const DELETE_LOCK = 'SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))';

/**
 * Tables holding a tenant's own rows: every table of the schema with a tenant_id column that the
 * service may delete from. Read from the catalog so a table added by a later migration is purged
 * too without touching this file.
 */
const TENANT_TABLES = `
  SELECT c.relname AS name FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
  WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname <> $1
    AND has_table_privilege(c.oid, 'DELETE')
  ORDER BY 1`;

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

function translate(err: unknown): unknown {
  if (sqlState(err) !== '23505') return err;
  const constraint = (err as { constraint?: string }).constraint;
  return new UniqueViolation(constraint === 'tenants_domain' ? 'domain' : constraint === 'tenants_id' ? 'id' : 'slug');
}

export class PgTenants implements TenantRepository {
  constructor(private readonly db: TenantDb) {}

  private run<T>(fn: (q: Query) => Promise<T>): Promise<T> {
    return this.db.withTenant(REGISTRY_OWNER, fn);
  }

  async create(r: TenantRecord): Promise<void> {
    try {
      await this.run(async (q) => {
        await q(`INSERT INTO tenants (tenant_id, ${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [
          REGISTRY_OWNER, r.id, r.slug, r.display_name, r.domain, r.status, r.created_at, r.updated_at,
        ]);
        // A slug starts empty: rows a deleted tenant of the same slug left behind go with the new
        // record, in its transaction. Since the write guard (migration 110) a delete leaves none;
        // this still clears what deletes of earlier releases left (a write that raced the delete
        // and committed after its purge). Only once the record is in: an existing slug stops at
        // the unique key.
        if (r.slug !== REGISTRY_OWNER) await purgeData(q, r.slug);
      });
    } catch (err) {
      throw translate(err);
    }
  }

  async get(slug: string): Promise<TenantRecord | undefined> {
    const { rows } = await this.run((q) => q<TenantRecord>(`SELECT ${COLUMNS} FROM tenants WHERE tenant_id = $1 AND slug = $2`, [REGISTRY_OWNER, slug]));
    return rows[0];
  }

  async list(filter: TenantFilter, page: PageRequest): Promise<Page<TenantRecord>> {
    const p = new Params();
    const where = [`tenant_id = ${p.add(REGISTRY_OWNER)}`];
    if (filter.status) where.push(`status = ${p.add(filter.status)}`);
    if (filter.q) {
      // display_name has the database's collation, which folds non-ASCII case too: compared as
      // COLLATE "C" like slug and domain, the search folds ASCII only, as on SQLite.
      where.push(searchCondition(filter.q, ['slug', 'display_name COLLATE "C"', "coalesce(domain, '')"], p));
    }
    const filterSql = where.join(' AND ');
    const countParams = p.snapshot();
    const pageSql = page.after ? `${filterSql} AND (created_at, id) > (${p.add(page.after.created_at)}::timestamptz, ${p.add(page.after.id)})` : filterSql;
    return this.run(async (q) => {
      const { rows } = await q<TenantRecord>(`SELECT ${COLUMNS} FROM tenants WHERE ${pageSql} ORDER BY created_at, id LIMIT ${page.limit + 1}`, p.values);
      const result: Page<TenantRecord> = { items: rows.slice(0, page.limit), has_more: rows.length > page.limit };
      if (page.include_count) result.total_count = (await q<{ n: number }>(`SELECT count(*) AS n FROM tenants WHERE ${filterSql}`, countParams)).rows[0]!.n;
      return result;
    });
  }

  async update(slug: string, change: Parameters<TenantRepository['update']>[1]): Promise<TenantRecord | undefined> {
    const p = new Params();
    const sets = [`updated_at = ${p.add(new Date().toISOString())}`];
    if (change.display_name !== undefined) sets.push(`display_name = ${p.add(change.display_name)}`);
    if (change.domain !== undefined) sets.push(`domain = ${p.add(change.domain)}`);
    if (change.status !== undefined) sets.push(`status = ${p.add(change.status)}`);
    const sql = `UPDATE tenants SET ${sets.join(', ')} WHERE tenant_id = ${p.add(REGISTRY_OWNER)} AND slug = ${p.add(slug)} RETURNING ${COLUMNS}`;
    try {
      const { rows } = await this.run((q) => q<TenantRecord>(sql, p.values));
      return rows[0];
    } catch (err) {
      throw translate(err);
    }
  }

  /**
   * Removes the record and purges the tenant's data, in one transaction: the record first (bound
   * to the registry's owner; an unknown slug stops here, so nothing of `default` or of a typo is
   * ever purged), then the data, re-bound to the tenant so row-level security lets the DELETEs
   * reach its rows only. Either everything is gone or nothing is.
   *
   * First the write guard's lock, exclusive (migration 110): the delete waits for the tenant's
   * writes in flight, so the purge's statements, which take their snapshots after, see and remove
   * their rows; a write that starts meanwhile waits for the delete and then fails (TenantGone).
   */
  async delete(slug: string): Promise<boolean> {
    if (slug === REGISTRY_OWNER) throw new Error('the platform tenant cannot be deleted');
    return this.run(async (q) => {
      await q(DELETE_LOCK, [TENANT_LOCK_NAME, slug]);
      const { rowCount } = await q('DELETE FROM tenants WHERE tenant_id = $1 AND slug = $2', [REGISTRY_OWNER, slug]);
      if (rowCount === 0) return false;
      await purgeData(q, slug);
      return true;
    });
  }
}

/** Deletes every row of `slug`'s own data, binding the transaction to it (row-level security) and then back to the registry. */
async function purgeData(q: Query, slug: string): Promise<void> {
  await q(BIND, [slug]);
  const { rows: tables } = await q<{ name: string }>(TENANT_TABLES, [REGISTRY_TABLE]);
  for (const { name } of tables) await q(`DELETE FROM ${quoteIdent(name)} WHERE tenant_id = $1`, [slug]);
  // Back to the registry: in a transaction shared by several calls (KeyRepository.transaction of
  // REGISTRY_OWNER, as the capacity bench seeds), the next registry write ran bound to this slug
  // and row-level security refused it.
  await q(BIND, [REGISTRY_OWNER]);
}
