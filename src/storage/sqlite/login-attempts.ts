import type { LoginAttemptRepository, TenantId } from '../types.js';
import type { Db } from './db.js';

export class SqliteLoginAttempts implements LoginAttemptRepository {
  private readonly insertStmt;
  private readonly pruneStmt;
  private readonly countStmt;
  private readonly clearStmt;

  constructor(private readonly db: Db) {
    this.insertStmt = db.prepare('INSERT INTO login_attempts (tenant_id, key, at) VALUES (?, ?, ?)');
    this.pruneStmt = db.prepare('DELETE FROM login_attempts WHERE tenant_id = ? AND key = ? AND at < ?');
    this.countStmt = db.prepare<[string, string, string], number>('SELECT count(*) FROM login_attempts WHERE tenant_id = ? AND key = ? AND at >= ?').pluck();
    this.clearStmt = db.prepare('DELETE FROM login_attempts WHERE tenant_id = ? AND key = ?');
  }

  async recordFailure(tenant: TenantId, key: string, atIso: string, sinceIso: string): Promise<number> {
    return this.db.transaction(() => {
      this.pruneStmt.run(tenant, key, sinceIso);
      this.insertStmt.run(tenant, key, atIso);
      return this.countStmt.get(tenant, key, sinceIso) ?? 0;
    })();
  }

  async clear(tenant: TenantId, key: string): Promise<void> {
    this.clearStmt.run(tenant, key);
  }
}
