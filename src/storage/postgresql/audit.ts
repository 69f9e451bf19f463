import type { AuditEntry, AuditFilter, AuditRepository, AuditStats, Page, PageRequest, TenantId } from '../types.js';
import { Params, instant, json } from './sql.js';
import type { Query, TenantDb } from './tenant-db.js';

const COLUMNS = 'tenant_id, id, type, status, username, user_id, client_id, ip_address, user_agent, details, "timestamp"';
const EQUALITY_FILTERS = ['type', 'status', 'username', 'user_id', 'client_id', 'ip_address'] as const;

/** An entry's values in COLUMNS order; the row's tenant is the one the call names, whatever the entry says (as in SQLite). */
const entryParams = (tenant: TenantId, e: AuditEntry): unknown[] => [
  tenant, e.id, e.type, e.status, e.username, e.user_id, e.client_id, e.ip_address, e.user_agent, json(e.details), e.timestamp,
];

export class PgAudit implements AuditRepository {
  constructor(private readonly db: TenantDb) {}

  async insert(tenant: TenantId, e: AuditEntry): Promise<void> {
    await this.db.withTenant(tenant, (q) => this.write(q, tenant, e));
  }

  /** The insert on a given transaction: other repositories call it inside their own. */
  async write(q: Query, tenant: TenantId, e: AuditEntry): Promise<void> {
    await q(`INSERT INTO audit_entries (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, entryParams(tenant, e));
  }

  /**
   * The insert as a statement for TenantDb.script, written only when `onlyIf` (an SQL condition on
   * the same transaction, with its parameters after the entry's) holds. The casts give the
   * literals script() writes their column's type, since a SELECT list does not take it from the
   * table as VALUES does.
   */
  insertStatement(tenant: TenantId, e: AuditEntry, onlyIf: { sql: string; params: readonly unknown[] }): { sql: string; params: unknown[] } {
    return {
      sql:
        `INSERT INTO audit_entries (${COLUMNS}) SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text, $10::jsonb, $11::timestamptz ` +
        `WHERE ${onlyIf.sql.replace(/\$(\d+)/g, (_m, n: string) => `$${Number(n) + 11}`)}`,
      params: [...entryParams(tenant, e), ...onlyIf.params],
    };
  }

  async get(tenant: TenantId, id: string): Promise<AuditEntry | undefined> {
    const { rows } = await this.db.statement<AuditEntry>(tenant, `SELECT ${COLUMNS} FROM audit_entries WHERE tenant_id = $1 AND id = $2`, [tenant, id]);
    return rows[0];
  }

  async list(tenant: TenantId, f: AuditFilter, page: PageRequest): Promise<Page<AuditEntry>> {
    const p = new Params();
    const where = [`tenant_id = ${p.add(tenant)}`];
    for (const key of EQUALITY_FILTERS) {
      if (f[key] !== undefined) where.push(`${key} = ${p.add(f[key])}`);
    }
    if (f.from) where.push(`"timestamp" >= ${p.add(instant(f.from))}::timestamptz`);
    if (f.to) where.push(`"timestamp" <= ${p.add(instant(f.to))}::timestamptz`);
    const filterSql = where.join(' AND ');
    const countParams = p.snapshot();
    // Newest first: the cursor walks backwards in time.
    const pageSql = page.after ? `${filterSql} AND ("timestamp", id) < (${p.add(page.after.created_at)}::timestamptz, ${p.add(page.after.id)})` : filterSql;

    return this.db.withTenant(tenant, async (q) => {
      const { rows } = await q<AuditEntry>(`SELECT ${COLUMNS} FROM audit_entries WHERE ${pageSql} ORDER BY "timestamp" DESC, id DESC LIMIT ${page.limit + 1}`, p.values);
      const result: Page<AuditEntry> = { items: rows.slice(0, page.limit), has_more: rows.length > page.limit };
      if (page.include_count) {
        result.total_count = (await q<{ n: number }>(`SELECT count(*) AS n FROM audit_entries WHERE ${filterSql}`, countParams)).rows[0]!.n;
      }
      return result;
    });
  }

  async types(tenant: TenantId): Promise<string[]> {
    const { rows } = await this.db.statement<{ type: string }>(tenant, 'SELECT DISTINCT type FROM audit_entries WHERE tenant_id = $1 ORDER BY type', [tenant]);
    return rows.map((r) => r.type);
  }

  async stats(tenant: TenantId, todayStartIso: string): Promise<AuditStats> {
    const { rows } = await this.db.statement<AuditStats>(
      tenant,
      `SELECT count(*) AS "totalActivities",
                count(DISTINCT coalesce(user_id, username)) AS "uniqueUsers",
                count(*) FILTER (WHERE "timestamp" >= $2::timestamptz) AS "todayCount",
                count(*) FILTER (WHERE type = 'login' AND status = 'success') AS "successfulLogins",
                count(*) FILTER (WHERE type = 'failed_login' OR (type = 'login' AND status = 'failed')) AS "failedLogins"
         FROM audit_entries WHERE tenant_id = $1`,
      [tenant, instant(todayStartIso)],
    );
    return rows[0]!;
  }
}
