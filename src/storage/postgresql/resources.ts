/** API resources on PostgreSQL under row-level security (migrations/postgresql/050_resources.sql). */
import { UniqueViolation } from '../errors.js';
import type { Page, PageRequest, ResourceChange, ResourceRecord, ResourceRepository, TenantId } from '../types.js';
import { sqlState } from './errors.js';
import { Params, json } from './sql.js';
import type { TenantDb } from './tenant-db.js';

const COLUMNS = 'id, identifier, name, scopes, token_format, access_token_ttl, signing_alg, include_roles, created_at, updated_at';
const UPDATABLE = ['name', 'scopes', 'token_format', 'access_token_ttl', 'signing_alg', 'include_roles', 'updated_at'] as const;

function translate(err: unknown): unknown {
  if (sqlState(err) !== '23505') return err;
  return new UniqueViolation((err as { constraint?: string }).constraint === 'resources_identifier' ? 'identifier' : 'id');
}

export class PgResources implements ResourceRepository {
  constructor(private readonly db: TenantDb) {}

  async create(tenant: TenantId, r: ResourceRecord): Promise<void> {
    try {
      await this.db.statement(tenant, `INSERT INTO resources (tenant_id, ${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, [
          tenant, r.id, r.identifier, r.name, json(r.scopes), r.token_format, r.access_token_ttl, r.signing_alg, r.include_roles, r.created_at, r.updated_at,
        ]);
    } catch (err) {
      throw translate(err);
    }
  }

  async get(tenant: TenantId, id: string): Promise<ResourceRecord | undefined> {
    const { rows } = await this.db.statement<ResourceRecord>(tenant, `SELECT ${COLUMNS} FROM resources WHERE tenant_id = $1 AND id = $2`, [tenant, id]);
    return rows[0];
  }

  async list(tenant: TenantId, page: PageRequest): Promise<Page<ResourceRecord>> {
    const p = new Params();
    const filterSql = `tenant_id = ${p.add(tenant)}`;
    const countParams = p.snapshot();
    const pageSql = page.after ? `${filterSql} AND (created_at, id) > (${p.add(page.after.created_at)}::timestamptz, ${p.add(page.after.id)})` : filterSql;
    return this.db.withTenant(tenant, async (q) => {
      const { rows } = await q<ResourceRecord>(`SELECT ${COLUMNS} FROM resources WHERE ${pageSql} ORDER BY created_at, id LIMIT ${page.limit + 1}`, p.values);
      const result: Page<ResourceRecord> = { items: rows.slice(0, page.limit), has_more: rows.length > page.limit };
      if (page.include_count) result.total_count = (await q<{ n: number }>(`SELECT count(*) AS n FROM resources WHERE ${filterSql}`, countParams)).rows[0]!.n;
      return result;
    });
  }

  async all(tenant: TenantId): Promise<ResourceRecord[]> {
    const { rows } = await this.db.statement<ResourceRecord>(tenant, `SELECT ${COLUMNS} FROM resources WHERE tenant_id = $1 ORDER BY created_at, id`, [tenant]);
    return rows;
  }

  async count(tenant: TenantId): Promise<number> {
    const { rows } = await this.db.statement<{ n: number }>(tenant, 'SELECT count(*) AS n FROM resources WHERE tenant_id = $1', [tenant]);
    return rows[0]!.n;
  }

  async update(tenant: TenantId, id: string, change: ResourceChange): Promise<ResourceRecord | undefined> {
    const p = new Params();
    const sets = UPDATABLE.filter((k) => change[k] !== undefined).map((k) => `${k} = ${p.add(k === 'scopes' ? json(change[k]) : change[k])}`);
    const { rows } = await this.db.statement<ResourceRecord>(tenant, `UPDATE resources SET ${sets.join(', ')} WHERE tenant_id = ${p.add(tenant)} AND id = ${p.add(id)} RETURNING ${COLUMNS}`, p.values);
    return rows[0];
  }

  async delete(tenant: TenantId, id: string): Promise<boolean> {
    const { rowCount } = await this.db.statement(tenant, 'DELETE FROM resources WHERE tenant_id = $1 AND id = $2', [tenant, id]);
    return rowCount > 0;
  }
}
