import { UniqueViolation } from '../errors.js';
import type { SocialIdentityRecord, SocialIdentityRepository, TenantId } from '../types.js';
import type { Db } from './db.js';

const COLUMNS = 'provider, subject, user_id, email, linked_at, last_used_at';

export class SqliteSocialIdentities implements SocialIdentityRepository {
  private readonly insertStmt;
  private readonly findStmt;
  private readonly byUserStmt;
  private readonly touchStmt;
  private readonly unlinkStmt;
  private readonly unlinkAllStmt;

  constructor(db: Db) {
    this.insertStmt = db.prepare(`INSERT INTO social_identities (tenant_id, ${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`);
    this.findStmt = db.prepare<[string, string, string], SocialIdentityRecord>(`SELECT ${COLUMNS} FROM social_identities WHERE tenant_id = ? AND provider = ? AND subject = ?`);
    this.byUserStmt = db.prepare<[string, string], SocialIdentityRecord>(`SELECT ${COLUMNS} FROM social_identities WHERE tenant_id = ? AND user_id = ? ORDER BY linked_at, provider, subject`);
    this.touchStmt = db.prepare('UPDATE social_identities SET last_used_at = ? WHERE tenant_id = ? AND provider = ? AND subject = ?');
    this.unlinkStmt = db.prepare('DELETE FROM social_identities WHERE tenant_id = ? AND user_id = ? AND provider = ? AND subject = ?');
    this.unlinkAllStmt = db.prepare('DELETE FROM social_identities WHERE tenant_id = ? AND user_id = ?');
  }

  async link(tenant: TenantId, r: SocialIdentityRecord): Promise<void> {
    try {
      this.insertStmt.run(tenant, r.provider, r.subject, r.user_id, r.email, r.linked_at, r.last_used_at);
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw new UniqueViolation('identity');
      throw err;
    }
  }

  async find(tenant: TenantId, provider: string, subject: string): Promise<SocialIdentityRecord | undefined> {
    return this.findStmt.get(tenant, provider, subject);
  }

  async listByUser(tenant: TenantId, userId: string): Promise<SocialIdentityRecord[]> {
    return this.byUserStmt.all(tenant, userId);
  }

  async touch(tenant: TenantId, provider: string, subject: string, atIso: string): Promise<void> {
    this.touchStmt.run(atIso, tenant, provider, subject);
  }

  async unlink(tenant: TenantId, userId: string, provider: string, subject: string): Promise<boolean> {
    return this.unlinkStmt.run(tenant, userId, provider, subject).changes > 0;
  }

  async unlinkAll(tenant: TenantId, userId: string): Promise<void> {
    this.unlinkAllStmt.run(tenant, userId);
  }
}
