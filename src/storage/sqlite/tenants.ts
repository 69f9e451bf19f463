/**
 * The tenant registry on SQLite. Multi-tenant mode needs PostgreSQL; this backend implements the
 * same interface so single-tenant tools and the storage contract tests behave identically.
 */
import { UniqueViolation } from '../errors.js';
import { REGISTRY_OWNER, REGISTRY_TABLE } from '../registry.js';
import type { Page, PageRequest, TenantFilter, TenantRecord, TenantRepository } from '../types.js';
import { keysetPage, prepared, searchCondition, type Db } from './db.js';

const COLUMNS = 'id, slug, display_name, domain, status, created_at, updated_at';

/** Tables holding a tenant's own rows: every table with a tenant_id column but the registry. */
const TENANT_TABLES = `SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) c
  WHERE m.type = 'table' AND c.name = 'tenant_id' AND m.name <> ? ORDER BY 1`;

function translate(err: unknown): unknown {
  const e = err as { code?: string; message?: string };
  if (e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return new UniqueViolation('slug');
  if (e?.code === 'SQLITE_CONSTRAINT_UNIQUE') return new UniqueViolation(e.message?.includes('tenants.domain') ? 'domain' : 'id');
  return err;
}

export class SqliteTenants implements TenantRepository {
  constructor(private readonly db: Db) {}

  async create(r: TenantRecord): Promise<void> {
    try {
      this.db.transaction(() => {
        prepared(this.db, `INSERT INTO tenants (tenant_id, ${COLUMNS}) VALUES (@owner, @id, @slug, @display_name, @domain, @status, @created_at, @updated_at)`).run({
          ...r,
          owner: REGISTRY_OWNER,
        });
        // A slug starts empty: leftovers of a deleted tenant of the same slug go with the new record.
        if (r.slug !== REGISTRY_OWNER) this.purgeData(r.slug);
      })();
    } catch (err) {
      throw translate(err);
    }
  }

  private purgeData(slug: string): void {
    const tables = prepared<[string], string>(this.db, TENANT_TABLES).pluck().all(REGISTRY_TABLE);
    for (const table of tables) prepared(this.db, `DELETE FROM "${table.replaceAll('"', '""')}" WHERE tenant_id = ?`).run(slug);
  }

  async get(slug: string): Promise<TenantRecord | undefined> {
    return prepared<[string, string], TenantRecord>(this.db, `SELECT ${COLUMNS} FROM tenants WHERE tenant_id = ? AND slug = ?`).get(REGISTRY_OWNER, slug);
  }

  async list(filter: TenantFilter, page: PageRequest): Promise<Page<TenantRecord>> {
    const params: Record<string, unknown> = { owner: REGISTRY_OWNER };
    let filterSql = 'tenant_id = @owner';
    if (filter.status) {
      filterSql += ' AND status = @status';
      params.status = filter.status;
    }
    if (filter.q) {
      filterSql += ` AND ${searchCondition(filter.q, ['slug', 'display_name', "coalesce(domain, '')"], params)}`;
    }
    return keysetPage<TenantRecord>(this.db, { table: 'tenants', columns: COLUMNS, where: filterSql, params, sortKey: ['created_at', 'id'] }, page);
  }

  async update(slug: string, change: Parameters<TenantRepository['update']>[1]): Promise<TenantRecord | undefined> {
    const sets = ['updated_at = @updated_at'];
    const params: Record<string, unknown> = { owner: REGISTRY_OWNER, slug, updated_at: new Date().toISOString() };
    for (const key of ['display_name', 'domain', 'status'] as const) {
      if (change[key] === undefined) continue;
      sets.push(`${key} = @${key}`);
      params[key] = change[key];
    }
    try {
      const sql = `UPDATE tenants SET ${sets.join(', ')} WHERE tenant_id = @owner AND slug = @slug RETURNING ${COLUMNS}`;
      return prepared<Record<string, unknown>, TenantRecord>(this.db, sql).get(params);
    } catch (err) {
      throw translate(err);
    }
  }

  /** Removes the record and purges the tenant's data in one transaction (nothing for an unknown slug). */
  async delete(slug: string): Promise<boolean> {
    if (slug === REGISTRY_OWNER) throw new Error('the platform tenant cannot be deleted');
    return this.db.transaction(() => {
      const gone = prepared(this.db, 'DELETE FROM tenants WHERE tenant_id = ? AND slug = ?').run(REGISTRY_OWNER, slug).changes > 0;
      if (!gone) return false;
      this.purgeData(slug);
      return true;
    })();
  }
}
