import type { AccountTokenKind, AccountTokenRecord, AccountTokenRepository, TenantId } from '../types.js';
import { json } from './sql.js';
import type { TenantDb } from './tenant-db.js';

const COLUMNS = 'token_hash, kind, user_id, email, data, created_at, expires_at, used_at';
const USABLE = 'tenant_id = $1 AND kind = $2 AND token_hash = $3 AND used_at IS NULL AND expires_at > $4';

export class PgAccountTokens implements AccountTokenRepository {
  constructor(private readonly db: TenantDb) {}

  async create(tenant: TenantId, r: AccountTokenRecord): Promise<void> {
    await this.db.statement(tenant, `INSERT INTO account_tokens (tenant_id, ${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, [
        tenant,
        r.token_hash,
        r.kind,
        r.user_id,
        r.email,
        r.data ? json(r.data) : null,
        r.created_at,
        r.expires_at,
        r.used_at,
      ]);
  }

  async findUsable(tenant: TenantId, kind: AccountTokenKind, tokenHash: string, nowIso: string): Promise<AccountTokenRecord | undefined> {
    const { rows } = await this.db.statement<AccountTokenRecord>(tenant, `SELECT ${COLUMNS} FROM account_tokens WHERE ${USABLE}`, [tenant, kind, tokenHash, nowIso]);
    return rows[0];
  }

  /** A second concurrent UPDATE waits for the first and re-checks used_at: only one gets the row. */
  async consume(tenant: TenantId, kind: AccountTokenKind, tokenHash: string, nowIso: string): Promise<AccountTokenRecord | undefined> {
    const { rows } = await this.db.statement<AccountTokenRecord>(tenant, `UPDATE account_tokens SET used_at = $4 WHERE ${USABLE} RETURNING ${COLUMNS}`, [tenant, kind, tokenHash, nowIso]);
    return rows[0];
  }

  async countSince(tenant: TenantId, kind: AccountTokenKind, email: string, sinceIso: string): Promise<number> {
    const { rows } = await this.db.statement<{ n: number }>(tenant, 'SELECT count(*)::int AS n FROM account_tokens WHERE tenant_id = $1 AND kind = $2 AND lower(email) = lower($3) AND created_at > $4', [tenant, kind, email, sinceIso]);
    return rows[0]!.n;
  }

  async expireForUser(tenant: TenantId, kind: AccountTokenKind, userId: string, nowIso: string): Promise<void> {
    await this.db.statement(tenant, 'UPDATE account_tokens SET used_at = $1 WHERE tenant_id = $2 AND kind = $3 AND user_id = $4 AND used_at IS NULL', [nowIso, tenant, kind, userId]);
  }

  /**
   * Cross-tenant, so through svc_sweep_account_tokens (migrations/postgresql/090), which may delete
   * only rows the database clock also finds expired, like the OIDC sweep (docs/postgresql.md).
   */
  async sweepExpired(beforeIso: string): Promise<number> {
    const { rows } = await this.db.unscoped<{ n: string | number }>('SELECT svc_sweep_account_tokens($1) AS n', [beforeIso]);
    return Number(rows[0]!.n);
  }
}
