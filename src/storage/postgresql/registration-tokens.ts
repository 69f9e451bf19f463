import type { Page, PageRequest, RegistrationTokenRecord, RegistrationTokenRepository, TenantId } from '../types.js';
import { Params, json } from './sql.js';
import type { TenantDb } from './tenant-db.js';

const COLUMNS = 'jti, token_hash, expires_at, max_usage_count, current_usage_count, policies, note, created_at, revoked_at, creator_scopes';

/**
 * One conditional UPDATE. Under READ COMMITTED a second writer of the same row waits for the first
 * to commit and then re-checks the WHERE clause against the new row version, so concurrent
 * registrations (any connection, any instance) can never push the count past max_usage_count; the
 * table's CHECK is the second fence.
 */
const CONSUME_SQL = `UPDATE registration_tokens SET current_usage_count = current_usage_count + 1
  WHERE tenant_id = $1 AND jti = $2 AND revoked_at IS NULL AND expires_at > $3 AND current_usage_count < max_usage_count`;
const RELEASE_SQL = `UPDATE registration_tokens SET current_usage_count = current_usage_count - 1
  WHERE tenant_id = $1 AND jti = $2 AND current_usage_count > 0`;

export class PgRegistrationTokens implements RegistrationTokenRepository {
  constructor(private readonly db: TenantDb) {}

  async create(tenant: TenantId, r: RegistrationTokenRecord): Promise<void> {
    await this.db.statement(tenant, `INSERT INTO registration_tokens (tenant_id, ${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, [
        tenant,
        r.jti,
        r.token_hash,
        r.expires_at,
        r.max_usage_count,
        r.current_usage_count,
        json(r.policies),
        r.note,
        r.created_at,
        r.revoked_at,
        r.creator_scopes === null ? null : json(r.creator_scopes),
      ]);
  }

  async get(tenant: TenantId, jti: string): Promise<RegistrationTokenRecord | undefined> {
    const { rows } = await this.db.statement<RegistrationTokenRecord>(tenant, `SELECT ${COLUMNS} FROM registration_tokens WHERE tenant_id = $1 AND jti = $2`, [tenant, jti]);
    return rows[0];
  }

  async findByHash(tenant: TenantId, tokenHash: string): Promise<RegistrationTokenRecord | undefined> {
    const { rows } = await this.db.statement<RegistrationTokenRecord>(tenant, `SELECT ${COLUMNS} FROM registration_tokens WHERE tenant_id = $1 AND token_hash = $2`, [tenant, tokenHash]);
    return rows[0];
  }

  /**
   * Active = usable at register-rp: not revoked, not expired, not used up (spec 4.8 "list active
   * tokens"; the conditions of CONSUME_SQL). The others are still read and revoked by jti.
   */
  async list(tenant: TenantId, page: PageRequest, nowIso: string): Promise<Page<RegistrationTokenRecord>> {
    const p = new Params();
    const filterSql = `tenant_id = ${p.add(tenant)} AND revoked_at IS NULL AND expires_at > ${p.add(nowIso)}::timestamptz AND current_usage_count < max_usage_count`;
    const countParams = p.snapshot();
    const pageSql = page.after ? `${filterSql} AND (created_at, jti) > (${p.add(page.after.created_at)}::timestamptz, ${p.add(page.after.id)})` : filterSql;

    return this.db.withTenant(tenant, async (q) => {
      const { rows } = await q<RegistrationTokenRecord>(`SELECT ${COLUMNS} FROM registration_tokens WHERE ${pageSql} ORDER BY created_at, jti LIMIT ${page.limit + 1}`, p.values);
      const result: Page<RegistrationTokenRecord> = { items: rows.slice(0, page.limit), has_more: rows.length > page.limit };
      if (page.include_count) {
        result.total_count = (await q<{ n: number }>(`SELECT count(*) AS n FROM registration_tokens WHERE ${filterSql}`, countParams)).rows[0]!.n;
      }
      return result;
    });
  }

  async revoke(tenant: TenantId, jti: string, atIso: string): Promise<boolean> {
    const { rowCount } = await this.db.statement(tenant, 'UPDATE registration_tokens SET revoked_at = $1 WHERE tenant_id = $2 AND jti = $3 AND revoked_at IS NULL', [atIso, tenant, jti]);
    return rowCount > 0;
  }

  async consumeUse(tenant: TenantId, jti: string, nowIso: string): Promise<boolean> {
    const { rowCount } = await this.db.statement(tenant, CONSUME_SQL, [tenant, jti, nowIso]);
    return rowCount === 1;
  }

  async releaseUse(tenant: TenantId, jti: string): Promise<void> {
    await this.db.statement(tenant, RELEASE_SQL, [tenant, jti]);
  }
}
