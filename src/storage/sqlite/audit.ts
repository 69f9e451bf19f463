import type { AuditEntry, AuditFilter, AuditRepository, AuditStats, Page, PageRequest, TenantId } from '../types.js';
import { keysetPage, prepared, type Db } from './db.js';

interface Row extends Omit<AuditEntry, 'details' | 'tenant_id'> {
  tenant_id: string;
  details: string;
}

const toEntry = (r: Row): AuditEntry => ({ ...r, details: JSON.parse(r.details) as Record<string, unknown> });

export class SqliteAudit implements AuditRepository {
  private readonly insertStmt;
  private readonly getStmt;
  private readonly typesStmt;

  constructor(private readonly db: Db) {
    this.insertStmt = db.prepare(
      `INSERT INTO audit_entries (tenant_id, id, type, status, username, user_id, client_id, ip_address, user_agent, details, timestamp)
       VALUES (@tenant_id, @id, @type, @status, @username, @user_id, @client_id, @ip_address, @user_agent, @details, @timestamp)`,
    );
    this.getStmt = db.prepare<[string, string], Row>('SELECT * FROM audit_entries WHERE tenant_id = ? AND id = ?');
    this.typesStmt = db.prepare<[string], string>('SELECT DISTINCT type FROM audit_entries WHERE tenant_id = ? ORDER BY type').pluck();
  }

  async insert(tenant: TenantId, e: AuditEntry): Promise<void> {
    this.write(tenant, e);
  }

  /** The insert itself, synchronous: other repositories call it inside their own transaction. */
  write(tenant: TenantId, e: AuditEntry): void {
    this.insertStmt.run({ ...e, tenant_id: tenant, details: JSON.stringify(e.details) });
  }

  async get(tenant: TenantId, id: string): Promise<AuditEntry | undefined> {
    const row = this.getStmt.get(tenant, id);
    return row ? toEntry(row) : undefined;
  }

  async list(tenant: TenantId, f: AuditFilter, page: PageRequest): Promise<Page<AuditEntry>> {
    const where = ['tenant_id = @tenant'];
    const params: Record<string, unknown> = { tenant };
    for (const key of ['type', 'status', 'username', 'user_id', 'client_id', 'ip_address'] as const) {
      if (f[key] !== undefined) {
        where.push(`${key} = @${key}`);
        params[key] = f[key];
      }
    }
    if (f.from) {
      where.push('timestamp >= @from');
      params.from = f.from;
    }
    if (f.to) {
      where.push('timestamp <= @to');
      params.to = f.to;
    }
    // Newest first: the cursor walks backwards in time.
    const result = keysetPage<Row>(this.db, { table: 'audit_entries', columns: '*', where: where.join(' AND '), params, sortKey: ['timestamp', 'id'], descending: true }, page);
    return { ...result, items: result.items.map(toEntry) };
  }

  async types(tenant: TenantId): Promise<string[]> {
    return this.typesStmt.all(tenant);
  }

  async stats(tenant: TenantId, todayStartIso: string): Promise<AuditStats> {
    const row = prepared<[string, string], { total: number; users: number; today: number; ok: number; failed: number }>(
      this.db,
      `SELECT count(*) AS total,
              count(DISTINCT coalesce(user_id, username)) AS users,
              sum(CASE WHEN timestamp >= ? THEN 1 ELSE 0 END) AS today,
              sum(CASE WHEN type = 'login' AND status = 'success' THEN 1 ELSE 0 END) AS ok,
              sum(CASE WHEN type = 'failed_login' OR (type = 'login' AND status = 'failed') THEN 1 ELSE 0 END) AS failed
       FROM audit_entries WHERE tenant_id = ?`,
    ).get(todayStartIso, tenant)!;
    return { totalActivities: row.total, uniqueUsers: row.users, todayCount: row.today ?? 0, successfulLogins: row.ok ?? 0, failedLogins: row.failed ?? 0 };
  }
}
