import type { TenantId, UserPreferencesRepository } from '../types.js';
import type { Db } from './db.js';

export class SqliteUserPreferences implements UserPreferencesRepository {
  private readonly getStmt;
  private readonly putStmt;

  constructor(db: Db) {
    this.getStmt = db.prepare<[string, string], { data: string }>('SELECT data FROM user_preferences WHERE tenant_id = ? AND user_id = ?');
    this.putStmt = db.prepare(
      'INSERT INTO user_preferences (tenant_id, user_id, data, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (tenant_id, user_id) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at',
    );
  }

  async get(tenant: TenantId, userId: string): Promise<Record<string, unknown> | undefined> {
    const row = this.getStmt.get(tenant, userId);
    return row ? (JSON.parse(row.data) as Record<string, unknown>) : undefined;
  }

  async put(tenant: TenantId, userId: string, data: Record<string, unknown>, atIso: string): Promise<void> {
    this.putStmt.run(tenant, userId, JSON.stringify(data), atIso);
  }
}
