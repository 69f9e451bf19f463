import type { TenantConfigRepository, TenantId } from '../types.js';
import { json } from './sql.js';
import type { TenantDb } from './tenant-db.js';

export class PgTenantConfig implements TenantConfigRepository {
  constructor(private readonly db: TenantDb) {}

  async get(tenant: TenantId): Promise<Record<string, Record<string, unknown>>> {
    const { rows } = await this.db.withTenant(tenant, (q) =>
      q<{ section: string; data: Record<string, unknown> }>('SELECT section, data FROM tenant_config WHERE tenant_id = $1 ORDER BY section', [tenant]),
    );
    return Object.fromEntries(rows.map((r) => [r.section, r.data]));
  }

  async put(tenant: TenantId, section: string, data: Record<string, unknown>): Promise<void> {
    await this.db.statement(
      tenant,
      `INSERT INTO tenant_config (tenant_id, section, data, updated_at) VALUES ($1, $2, $3::jsonb, now())
         ON CONFLICT (tenant_id, section) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
      [tenant, section, json(data)],
    );
  }
}
