/** Passkeys and ceremony challenges on SQLite (migrations/sqlite/030_webauthn.sql). */
import { UniqueViolation } from '../errors.js';
import type { AuditEntry, TenantId, WebauthnChallengeRecord, WebauthnCredentialRecord, WebauthnRepository } from '../types.js';
import type { SqliteAudit } from './audit.js';
import type { Db } from './db.js';

interface Row extends Omit<WebauthnCredentialRecord, 'transports' | 'backed_up'> {
  transports: string;
  backed_up: number;
}

const COLUMNS = 'id, user_id, public_key, counter, transports, device_type, backed_up, aaguid, name, created_at, last_used_at';

const toRecord = (r: Row): WebauthnCredentialRecord => ({ ...r, transports: JSON.parse(r.transports) as string[], backed_up: r.backed_up === 1 });

export class SqliteWebauthn implements WebauthnRepository {
  private readonly insertStmt;
  private readonly getStmt;
  private readonly listStmt;
  private readonly renameStmt;
  private readonly deleteStmt;
  private readonly deleteUserStmt;
  private readonly useStmt;
  private readonly putChallengeStmt;
  private readonly pruneChallengesStmt;
  private readonly takeChallengeStmt;

  constructor(
    private readonly db: Db,
    private readonly audit: SqliteAudit,
  ) {
    this.insertStmt = db.prepare(
      `INSERT INTO webauthn_credentials (tenant_id, ${COLUMNS})
       VALUES (@tenant_id, @id, @user_id, @public_key, @counter, @transports, @device_type, @backed_up, @aaguid, @name, @created_at, @last_used_at)`,
    );
    this.getStmt = db.prepare<[string, string], Row>(`SELECT ${COLUMNS} FROM webauthn_credentials WHERE tenant_id = ? AND id = ?`);
    this.listStmt = db.prepare<[string, string], Row>(`SELECT ${COLUMNS} FROM webauthn_credentials WHERE tenant_id = ? AND user_id = ? ORDER BY created_at, id`);
    this.renameStmt = db.prepare('UPDATE webauthn_credentials SET name = ? WHERE tenant_id = ? AND user_id = ? AND id = ?');
    this.deleteStmt = db.prepare('DELETE FROM webauthn_credentials WHERE tenant_id = ? AND user_id = ? AND id = ?');
    this.deleteUserStmt = db.prepare('DELETE FROM webauthn_credentials WHERE tenant_id = ? AND user_id = ?');
    // The counter check and the write in one statement: two uses of one assertion cannot both pass.
    this.useStmt = db.prepare(
      `UPDATE webauthn_credentials SET counter = @counter, backed_up = @backed_up, last_used_at = @at
       WHERE tenant_id = @tenant AND id = @id AND (counter < @counter OR (counter = 0 AND @counter = 0))`,
    );
    this.putChallengeStmt = db.prepare('INSERT INTO webauthn_challenges (tenant_id, challenge, binding, expires_at) VALUES (?, ?, ?, ?)');
    this.pruneChallengesStmt = db.prepare('DELETE FROM webauthn_challenges WHERE tenant_id = ? AND expires_at <= ?');
    this.takeChallengeStmt = db.prepare<[string, string, string], WebauthnChallengeRecord>(
      'DELETE FROM webauthn_challenges WHERE tenant_id = ? AND challenge = ? AND expires_at > ? RETURNING challenge, binding, expires_at',
    );
  }

  async createCredential(tenant: TenantId, r: WebauthnCredentialRecord, audit?: AuditEntry): Promise<void> {
    try {
      this.db.transaction(() => {
        this.insertStmt.run({ ...r, tenant_id: tenant, transports: JSON.stringify(r.transports), backed_up: r.backed_up ? 1 : 0 });
        if (audit) this.audit.write(tenant, audit);
      })();
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw new UniqueViolation('id');
      throw err;
    }
  }

  async getCredential(tenant: TenantId, id: string): Promise<WebauthnCredentialRecord | undefined> {
    const row = this.getStmt.get(tenant, id);
    return row ? toRecord(row) : undefined;
  }

  async listCredentials(tenant: TenantId, userId: string): Promise<WebauthnCredentialRecord[]> {
    return this.listStmt.all(tenant, userId).map(toRecord);
  }

  async renameCredential(tenant: TenantId, userId: string, id: string, name: string): Promise<boolean> {
    return this.renameStmt.run(name, tenant, userId, id).changes > 0;
  }

  async deleteCredential(tenant: TenantId, userId: string, id: string): Promise<boolean> {
    return this.deleteStmt.run(tenant, userId, id).changes > 0;
  }

  async deleteUserCredentials(tenant: TenantId, userId: string): Promise<number> {
    return this.deleteUserStmt.run(tenant, userId).changes;
  }

  async recordUse(tenant: TenantId, id: string, use: { counter: number; backed_up: boolean; at: string }): Promise<boolean> {
    return this.useStmt.run({ tenant, id, counter: use.counter, backed_up: use.backed_up ? 1 : 0, at: use.at }).changes === 1;
  }

  async putChallenge(tenant: TenantId, r: WebauthnChallengeRecord): Promise<void> {
    this.db.transaction(() => {
      this.pruneChallengesStmt.run(tenant, new Date().toISOString());
      this.putChallengeStmt.run(tenant, r.challenge, r.binding, r.expires_at);
    })();
  }

  async takeChallenge(tenant: TenantId, challenge: string, nowIso: string): Promise<WebauthnChallengeRecord | undefined> {
    return this.takeChallengeStmt.get(tenant, challenge, nowIso);
  }
}
