import type { AccountTokenKind, AccountTokenRecord, AccountTokenRepository, TenantId } from '../types.js';
import type { Db } from './db.js';

interface Row extends Omit<AccountTokenRecord, 'data'> {
  data: string | null;
}

const COLUMNS = 'token_hash, kind, user_id, email, data, created_at, expires_at, used_at';
const toRecord = (r: Row): AccountTokenRecord => ({ ...r, data: r.data ? (JSON.parse(r.data) as Record<string, unknown>) : null });

export class SqliteAccountTokens implements AccountTokenRepository {
  private readonly insertStmt;
  private readonly findStmt;
  private readonly consumeStmt;
  private readonly countStmt;
  private readonly expireStmt;
  private readonly sweepStmt;

  constructor(db: Db) {
    this.insertStmt = db.prepare(
      `INSERT INTO account_tokens (tenant_id, ${COLUMNS}) VALUES (@tenant_id, @token_hash, @kind, @user_id, @email, @data, @created_at, @expires_at, @used_at)`,
    );
    const usable = 'tenant_id = ? AND kind = ? AND token_hash = ? AND used_at IS NULL AND expires_at > ?';
    this.findStmt = db.prepare<[string, string, string, string], Row>(`SELECT ${COLUMNS} FROM account_tokens WHERE ${usable}`);
    // One statement: the check and the mark under SQLite's write lock (single use across processes).
    this.consumeStmt = db.prepare<[string, string, string, string, string], Row>(`UPDATE account_tokens SET used_at = ? WHERE ${usable} RETURNING ${COLUMNS}`);
    this.countStmt = db.prepare<[string, string, string, string], { n: number }>('SELECT count(*) AS n FROM account_tokens WHERE tenant_id = ? AND kind = ? AND lower(email) = lower(?) AND created_at > ?');
    this.sweepStmt = db.prepare<[string]>('DELETE FROM account_tokens WHERE expires_at <= ?');
    this.expireStmt = db.prepare('UPDATE account_tokens SET used_at = ? WHERE tenant_id = ? AND kind = ? AND user_id = ? AND used_at IS NULL');
  }

  async create(tenant: TenantId, r: AccountTokenRecord): Promise<void> {
    this.insertStmt.run({ ...r, tenant_id: tenant, data: r.data ? JSON.stringify(r.data) : null });
  }

  async findUsable(tenant: TenantId, kind: AccountTokenKind, tokenHash: string, nowIso: string): Promise<AccountTokenRecord | undefined> {
    const row = this.findStmt.get(tenant, kind, tokenHash, nowIso);
    return row ? toRecord(row) : undefined;
  }

  async consume(tenant: TenantId, kind: AccountTokenKind, tokenHash: string, nowIso: string): Promise<AccountTokenRecord | undefined> {
    const row = this.consumeStmt.get(nowIso, tenant, kind, tokenHash, nowIso);
    return row ? toRecord(row) : undefined;
  }

  async countSince(tenant: TenantId, kind: AccountTokenKind, email: string, sinceIso: string): Promise<number> {
    return this.countStmt.get(tenant, kind, email, sinceIso)!.n;
  }

  async expireForUser(tenant: TenantId, kind: AccountTokenKind, userId: string, nowIso: string): Promise<void> {
    this.expireStmt.run(nowIso, tenant, kind, userId);
  }

  async sweepExpired(beforeIso: string): Promise<number> {
    return this.sweepStmt.run(beforeIso).changes;
  }
}
