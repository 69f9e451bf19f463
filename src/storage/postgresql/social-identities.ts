import { UniqueViolation } from '../errors.js';
import type { SocialIdentityRecord, SocialIdentityRepository, TenantId } from '../types.js';
import { sqlState } from './errors.js';
import type { TenantDb } from './tenant-db.js';

const COLUMNS = 'provider, subject, user_id, email, linked_at, last_used_at';

export class PgSocialIdentities implements SocialIdentityRepository {
  constructor(private readonly db: TenantDb) {}

  async link(tenant: TenantId, r: SocialIdentityRecord): Promise<void> {
    try {
      await this.db.statement(tenant, `INSERT INTO social_identities (tenant_id, ${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7::timestamptz)`, [tenant, r.provider, r.subject, r.user_id, r.email, r.linked_at, r.last_used_at]);
    } catch (err) {
      if (sqlState(err) === '23505') throw new UniqueViolation('identity');
      throw err;
    }
  }

  async find(tenant: TenantId, provider: string, subject: string): Promise<SocialIdentityRecord | undefined> {
    const { rows } = await this.db.statement<SocialIdentityRecord>(tenant, `SELECT ${COLUMNS} FROM social_identities WHERE tenant_id = $1 AND provider = $2 AND subject = $3`, [tenant, provider, subject]);
    return rows[0];
  }

  async listByUser(tenant: TenantId, userId: string): Promise<SocialIdentityRecord[]> {
    const { rows } = await this.db.statement<SocialIdentityRecord>(tenant, `SELECT ${COLUMNS} FROM social_identities WHERE tenant_id = $1 AND user_id = $2 ORDER BY linked_at, provider, subject`, [tenant, userId]);
    return rows;
  }

  async touch(tenant: TenantId, provider: string, subject: string, atIso: string): Promise<void> {
    await this.db.statement(tenant, 'UPDATE social_identities SET last_used_at = $4::timestamptz WHERE tenant_id = $1 AND provider = $2 AND subject = $3', [tenant, provider, subject, atIso]);
  }

  async unlink(tenant: TenantId, userId: string, provider: string, subject: string): Promise<boolean> {
    const { rowCount } = await this.db.statement(tenant, 'DELETE FROM social_identities WHERE tenant_id = $1 AND user_id = $2 AND provider = $3 AND subject = $4', [tenant, userId, provider, subject]);
    return (rowCount ?? 0) > 0;
  }

  async unlinkAll(tenant: TenantId, userId: string): Promise<void> {
    await this.db.statement(tenant, 'DELETE FROM social_identities WHERE tenant_id = $1 AND user_id = $2', [tenant, userId]);
  }
}
