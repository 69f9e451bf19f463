import type { TenantId, UserPreferencesRepository } from '../types.js';
import { json } from './sql.js';
import type { TenantDb } from './tenant-db.js';

export class PgUserPreferences implements UserPreferencesRepository {
  constructor(private readonly db: TenantDb) {}

  async get(tenant: TenantId, userId: string): Promise<Record<string, unknown> | undefined> {
    const { rows } = await this.db.withTenant(tenant, (q) => q<{ data: Record<string, unknown> }>('SELECT data FROM user_preferences WHERE tenant_id = $1 AND user_id = $2', [tenant, userId]));
    return rows[0]?.data;
  }

  async put(tenant: TenantId, userId: string, data: Record<string, unknown>, atIso: string): Promise<void> {
    await this.db.statement(tenant, 'INSERT INTO user_preferences (tenant_id, user_id, data, updated_at) VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id, user_id) DO UPDATE SET data = EXCLUDED.data, updated_at = EXCLUDED.updated_at',
        [tenant, userId, json(data), atIso]);
  }
}
