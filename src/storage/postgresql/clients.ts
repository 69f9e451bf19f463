import pg from 'pg';
import type { AuditEntry, ClientFilter, ClientRecord, ClientRepository, Page, PageRequest, TenantId, UsageEntry } from '../types.js';
import type { PgAudit } from './audit.js';
import { Params, json, searchCondition } from './sql.js';
import type { TenantDb } from './tenant-db.js';

/** pg hands jsonb back parsed, booleans as booleans and (pool.ts) timestamps as ISO strings. */
type Row = ClientRecord;

const COLUMNS = 'client_id, secret_hash, secret_sealed, secret_generation, metadata, active, created_at, updated_at, last_used_at, tokens_issued';

/** The search and filter copies kept beside the metadata document. */
const searchColumns = (m: ClientRecord['metadata']) => [m.client_name, m.application_type, m.description ?? null];

export class PgClients implements ClientRepository {
  constructor(
    private readonly db: TenantDb,
    /** Audit entries of a write go in the write's own transaction. */
    private readonly audit: PgAudit,
  ) {}

  async create(tenant: TenantId, r: ClientRecord, audit?: AuditEntry): Promise<void> {
    await this.db.withTenant(tenant, async (q) => {
      await q(
        `INSERT INTO clients (tenant_id, ${COLUMNS}, client_name, application_type, description)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
        [tenant, r.client_id, r.secret_hash, r.secret_sealed, r.secret_generation, json(r.metadata), r.active, r.created_at, r.updated_at, r.last_used_at, r.tokens_issued, ...searchColumns(r.metadata)],
      );
      if (audit) await this.audit.write(q, tenant, audit);
    });
  }

  async get(tenant: TenantId, clientId: string): Promise<ClientRecord | undefined> {
    const { rows } = await this.db.statement<Row>(tenant, `SELECT ${COLUMNS} FROM clients WHERE tenant_id = $1 AND client_id = $2`, [tenant, clientId]);
    return rows[0];
  }

  async list(tenant: TenantId, filter: ClientFilter, page: PageRequest): Promise<Page<ClientRecord>> {
    const p = new Params();
    const where = [`tenant_id = ${p.add(tenant)}`];
    if (filter.application_type) where.push(`application_type = ${p.add(filter.application_type)}`);
    if (filter.active !== undefined) where.push(`active = ${p.add(filter.active)}`);
    if (filter.q) {
      where.push(searchCondition(filter.q, ['client_name', 'client_id', "coalesce(description, '')"], p));
    }
    const filterSql = where.join(' AND ');
    const countParams = p.snapshot();
    const pageSql = page.after ? `${filterSql} AND (created_at, client_id) > (${p.add(page.after.created_at)}::timestamptz, ${p.add(page.after.id)})` : filterSql;

    return this.db.withTenant(tenant, async (q) => {
      const { rows } = await q<Row>(`SELECT ${COLUMNS} FROM clients WHERE ${pageSql} ORDER BY created_at, client_id LIMIT ${page.limit + 1}`, p.values);
      const result: Page<ClientRecord> = { items: rows.slice(0, page.limit), has_more: rows.length > page.limit };
      if (page.include_count) {
        result.total_count = (await q<{ n: number }>(`SELECT count(*) AS n FROM clients WHERE ${filterSql}`, countParams)).rows[0]!.n;
      }
      return result;
    });
  }

  async count(tenant: TenantId): Promise<number> {
    const { rows } = await this.db.statement<{ n: number }>(tenant, 'SELECT count(*) AS n FROM clients WHERE tenant_id = $1', [tenant]);
    return rows[0]!.n;
  }

  async update(tenant: TenantId, clientId: string, change: Parameters<ClientRepository['update']>[2], audit?: AuditEntry, unlessChangedFrom?: ClientRecord['metadata']): Promise<ClientRecord | undefined> {
    const p = new Params();
    const sets = [`updated_at = ${p.add(new Date().toISOString())}`];
    if (change.metadata) {
      const [name, type, description] = searchColumns(change.metadata);
      sets.push(`metadata = ${p.add(json(change.metadata))}`, `client_name = ${p.add(name)}`, `application_type = ${p.add(type)}`, `description = ${p.add(description)}`);
    }
    if (change.active !== undefined) sets.push(`active = ${p.add(change.active)}`);
    if (change.secret_hash !== undefined) sets.push(`secret_hash = ${p.add(change.secret_hash)}`);
    if (change.secret_sealed !== undefined) sets.push(`secret_sealed = ${p.add(change.secret_sealed)}`);
    if (change.bump_generation) sets.push('secret_generation = secret_generation + 1');
    // jsonb equality is by value, so the condition holds exactly while nobody changed the metadata.
    const unchanged = unlessChangedFrom ? ` AND metadata = ${p.add(json(unlessChangedFrom))}::jsonb` : '';
    const sql = `UPDATE clients SET ${sets.join(', ')} WHERE tenant_id = ${p.add(tenant)} AND client_id = ${p.add(clientId)}${unchanged} RETURNING ${COLUMNS}`;
    return this.db.withTenant(tenant, async (q) => {
      const { rows } = await q<Row>(sql, p.values);
      if (rows[0] && audit) await this.audit.write(q, tenant, audit);
      return rows[0];
    });
  }

  async delete(tenant: TenantId, clientId: string, audit?: AuditEntry): Promise<boolean> {
    return this.db.withTenant(tenant, async (q) => {
      const { rowCount } = await q('DELETE FROM clients WHERE tenant_id = $1 AND client_id = $2', [tenant, clientId]);
      if (rowCount > 0 && audit) await this.audit.write(q, tenant, audit);
      return rowCount > 0;
    });
  }

  async recordUsageBatch(entries: readonly UsageEntry[]): Promise<void> {
    const lit = pg.escapeLiteral;
    // GREATEST ignores NULL, and an older batch arriving late does not move last_used_at back.
    await this.db.acrossTenants(
      entries.map((e) => ({
        tenant: e.tenant,
        sql: `UPDATE clients SET tokens_issued = tokens_issued + ${Math.trunc(e.tokens)}, last_used_at = GREATEST(last_used_at, ${lit(e.lastUsedAt)}::timestamptz) WHERE tenant_id = ${lit(e.tenant)} AND client_id = ${lit(e.clientId)}`,
      })),
    );
  }
}
