import type { Page, PageRequest, RegistrationTokenRecord, RegistrationTokenRepository, TenantId } from '../types.js';
import { keysetPage, type Db } from './db.js';

interface Row extends Omit<RegistrationTokenRecord, 'policies' | 'creator_scopes'> {
  policies: string;
  creator_scopes: string | null;
}

const COLUMNS = 'jti, token_hash, expires_at, max_usage_count, current_usage_count, policies, note, created_at, revoked_at, creator_scopes';

/**
 * Active = usable at register-rp: not revoked, not expired, not used up (spec 4.8 "list active
 * tokens"; the conditions CONSUME_SQL checks). The others are still read and revoked by jti.
 */
const ACTIVE = 'revoked_at IS NULL AND expires_at > @now AND current_usage_count < max_usage_count';

/**
 * One conditional UPDATE: the check and the increment happen in the same statement under SQLite's
 * write lock, so concurrent registrations (other connections or processes too) can never push the
 * count past max_usage_count. Exported so the cross-thread test runs exactly this statement.
 */
export const CONSUME_SQL = `UPDATE registration_tokens SET current_usage_count = current_usage_count + 1
  WHERE tenant_id = ? AND jti = ? AND revoked_at IS NULL AND expires_at > ? AND current_usage_count < max_usage_count`;
export const RELEASE_SQL = `UPDATE registration_tokens SET current_usage_count = current_usage_count - 1
  WHERE tenant_id = ? AND jti = ? AND current_usage_count > 0`;

const toRecord = (r: Row): RegistrationTokenRecord => ({
  ...r,
  policies: JSON.parse(r.policies) as string[],
  creator_scopes: r.creator_scopes === null ? null : (JSON.parse(r.creator_scopes) as string[]),
});

export class SqliteRegistrationTokens implements RegistrationTokenRepository {
  private readonly insertStmt;
  private readonly getStmt;
  private readonly byHashStmt;
  private readonly revokeStmt;
  private readonly consumeStmt;
  private readonly releaseStmt;

  constructor(private readonly db: Db) {
    this.insertStmt = db.prepare(
      `INSERT INTO registration_tokens (tenant_id, ${COLUMNS})
       VALUES (@tenant_id, @jti, @token_hash, @expires_at, @max_usage_count, @current_usage_count, @policies, @note, @created_at, @revoked_at, @creator_scopes)`,
    );
    this.getStmt = db.prepare<[string, string], Row>(`SELECT ${COLUMNS} FROM registration_tokens WHERE tenant_id = ? AND jti = ?`);
    this.byHashStmt = db.prepare<[string, string], Row>(`SELECT ${COLUMNS} FROM registration_tokens WHERE tenant_id = ? AND token_hash = ?`);
    this.revokeStmt = db.prepare('UPDATE registration_tokens SET revoked_at = ? WHERE tenant_id = ? AND jti = ? AND revoked_at IS NULL');
    this.consumeStmt = db.prepare(CONSUME_SQL);
    this.releaseStmt = db.prepare(RELEASE_SQL);
  }

  async create(tenant: TenantId, r: RegistrationTokenRecord): Promise<void> {
    this.insertStmt.run({ ...r, tenant_id: tenant, policies: JSON.stringify(r.policies), creator_scopes: r.creator_scopes === null ? null : JSON.stringify(r.creator_scopes) });
  }

  async get(tenant: TenantId, jti: string): Promise<RegistrationTokenRecord | undefined> {
    const row = this.getStmt.get(tenant, jti);
    return row ? toRecord(row) : undefined;
  }

  async findByHash(tenant: TenantId, tokenHash: string): Promise<RegistrationTokenRecord | undefined> {
    const row = this.byHashStmt.get(tenant, tokenHash);
    return row ? toRecord(row) : undefined;
  }

  async list(tenant: TenantId, page: PageRequest, nowIso: string): Promise<Page<RegistrationTokenRecord>> {
    const params: Record<string, unknown> = { tenant, now: nowIso };
    const result = keysetPage<Row>(this.db, { table: 'registration_tokens', columns: COLUMNS, where: `tenant_id = @tenant AND ${ACTIVE}`, params, sortKey: ['created_at', 'jti'] }, page);
    return { ...result, items: result.items.map(toRecord) };
  }

  async revoke(tenant: TenantId, jti: string, atIso: string): Promise<boolean> {
    return this.revokeStmt.run(atIso, tenant, jti).changes > 0;
  }

  async consumeUse(tenant: TenantId, jti: string, nowIso: string): Promise<boolean> {
    return this.consumeStmt.run(tenant, jti, nowIso).changes === 1;
  }

  async releaseUse(tenant: TenantId, jti: string): Promise<void> {
    this.releaseStmt.run(tenant, jti);
  }
}
