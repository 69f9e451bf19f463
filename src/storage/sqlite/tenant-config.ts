import type { TenantConfigRepository, TenantId } from '../types.js';
import type { Db } from './db.js';

export class SqliteTenantConfig implements TenantConfigRepository {
  private readonly listStmt;
  private readonly upsertStmt;

  constructor(db: Db) {
    this.listStmt = db.prepare<[string], { section: string; data: string }>('SELECT section, data FROM tenant_config WHERE tenant_id = ? ORDER BY section');
    this.upsertStmt = db.prepare(
      'INSERT INTO tenant_config (tenant_id, section, data, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (tenant_id, section) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at',
    );
  }

  async get(tenant: TenantId): Promise<Record<string, Record<string, unknown>>> {
    const out: Record<string, Record<string, unknown>> = {};
    for (const row of this.listStmt.all(tenant)) out[row.section] = JSON.parse(row.data) as Record<string, unknown>;
    return out;
  }

  async put(tenant: TenantId, section: string, data: Record<string, unknown>): Promise<void> {
    this.upsertStmt.run(tenant, section, JSON.stringify(data), new Date().toISOString());
  }
}
