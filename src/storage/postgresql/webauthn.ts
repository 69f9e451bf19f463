/** Passkeys and ceremony challenges on PostgreSQL (migrations/postgresql/030_webauthn.sql, row-level security). */
import { UniqueViolation } from '../errors.js';
import type { AuditEntry, TenantId, WebauthnChallengeRecord, WebauthnCredentialRecord, WebauthnRepository } from '../types.js';
import type { PgAudit } from './audit.js';
import { sqlState } from './errors.js';
import { json } from './sql.js';
import type { TenantDb } from './tenant-db.js';

const COLUMNS = 'id, user_id, public_key, counter, transports, device_type, backed_up, aaguid, name, created_at, last_used_at';

/**
 * Under READ COMMITTED a second UPDATE of the same row waits for the first to commit and then
 * re-checks the WHERE clause on the new version, so two uses of one assertion cannot both pass.
 */
const USE_SQL = `UPDATE webauthn_credentials SET counter = $3, backed_up = $4, last_used_at = $5
  WHERE tenant_id = $1 AND id = $2 AND (counter < $3 OR (counter = 0 AND $3 = 0))`;

export class PgWebauthn implements WebauthnRepository {
  constructor(
    private readonly db: TenantDb,
    private readonly audit: PgAudit,
  ) {}

  async createCredential(tenant: TenantId, r: WebauthnCredentialRecord, audit?: AuditEntry): Promise<void> {
    try {
      await this.db.withTenant(tenant, async (q) => {
        await q(`INSERT INTO webauthn_credentials (tenant_id, ${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`, [
          tenant,
          r.id,
          r.user_id,
          r.public_key,
          r.counter,
          json(r.transports),
          r.device_type,
          r.backed_up,
          r.aaguid,
          r.name,
          r.created_at,
          r.last_used_at,
        ]);
        if (audit) await this.audit.write(q, tenant, audit);
      });
    } catch (err) {
      if (sqlState(err) === '23505') throw new UniqueViolation('id');
      throw err;
    }
  }

  async getCredential(tenant: TenantId, id: string): Promise<WebauthnCredentialRecord | undefined> {
    const { rows } = await this.db.statement<WebauthnCredentialRecord>(tenant, `SELECT ${COLUMNS} FROM webauthn_credentials WHERE tenant_id = $1 AND id = $2`, [tenant, id]);
    return rows[0];
  }

  async listCredentials(tenant: TenantId, userId: string): Promise<WebauthnCredentialRecord[]> {
    const { rows } = await this.db.statement<WebauthnCredentialRecord>(tenant, `SELECT ${COLUMNS} FROM webauthn_credentials WHERE tenant_id = $1 AND user_id = $2 ORDER BY created_at, id`, [tenant, userId]);
    return rows;
  }

  async renameCredential(tenant: TenantId, userId: string, id: string, name: string): Promise<boolean> {
    const { rowCount } = await this.db.statement(tenant, 'UPDATE webauthn_credentials SET name = $4 WHERE tenant_id = $1 AND user_id = $2 AND id = $3', [tenant, userId, id, name]);
    return rowCount > 0;
  }

  async deleteCredential(tenant: TenantId, userId: string, id: string): Promise<boolean> {
    const { rowCount } = await this.db.statement(tenant, 'DELETE FROM webauthn_credentials WHERE tenant_id = $1 AND user_id = $2 AND id = $3', [tenant, userId, id]);
    return rowCount > 0;
  }

  async deleteUserCredentials(tenant: TenantId, userId: string): Promise<number> {
    const { rowCount } = await this.db.statement(tenant, 'DELETE FROM webauthn_credentials WHERE tenant_id = $1 AND user_id = $2', [tenant, userId]);
    return rowCount;
  }

  async recordUse(tenant: TenantId, id: string, use: { counter: number; backed_up: boolean; at: string }): Promise<boolean> {
    const { rowCount } = await this.db.statement(tenant, USE_SQL, [tenant, id, use.counter, use.backed_up, use.at]);
    return rowCount === 1;
  }

  async putChallenge(tenant: TenantId, r: WebauthnChallengeRecord): Promise<void> {
    await this.db.withTenant(tenant, async (q) => {
      await q('DELETE FROM webauthn_challenges WHERE tenant_id = $1 AND expires_at <= now()', [tenant]);
      await q('INSERT INTO webauthn_challenges (tenant_id, challenge, binding, expires_at) VALUES ($1, $2, $3, $4)', [tenant, r.challenge, r.binding, r.expires_at]);
    });
  }

  async takeChallenge(tenant: TenantId, challenge: string, nowIso: string): Promise<WebauthnChallengeRecord | undefined> {
    const { rows } = await this.db.statement<WebauthnChallengeRecord>(tenant, 'DELETE FROM webauthn_challenges WHERE tenant_id = $1 AND challenge = $2 AND expires_at > $3 RETURNING challenge, binding, expires_at', [tenant, challenge, nowIso]);
    return rows[0];
  }
}
