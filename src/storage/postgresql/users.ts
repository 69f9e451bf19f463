import { UniqueViolation } from '../errors.js';
import type { AuditEntry, Page, PageRequest, TenantId, UserWithoutSecrets, UserFilter, UserRecord, UserRepository } from '../types.js';
import type { PgAudit } from './audit.js';
import { sqlState } from './errors.js';
import { stampsUpdatedAt } from '../user-stamps.js';
import { Params, json, searchCondition } from './sql.js';
import type { TenantDb } from './tenant-db.js';
import type { PgUserCache } from './user-cache.js';

type Column = keyof UserRecord;
const COLUMN_LIST: Column[] = [
  'id', 'email', 'email_verified', 'username', 'given_name', 'family_name', 'name', 'nickname', 'role',
  'account_enabled', 'locked', 'locked_until', 'auth_provider', 'password_hash', 'mfa_enabled', 'mfa_methods',
  'mfa_secret_sealed', 'mfa_recovery_sealed', 'deleted_at', 'created_at', 'updated_at', 'last_login_at',
];
const COLUMNS = COLUMN_LIST.join(', ');
/** What the token paths read: no password hash, no sealed MFA secrets (UserWithoutSecrets). */
const TOKEN_COLUMNS = COLUMN_LIST.filter((c) => c !== 'password_hash' && c !== 'mfa_secret_sealed' && c !== 'mfa_recovery_sealed').join(', ');
/** Columns update() may set; `id` and `created_at` are fixed at creation. */
const UPDATABLE = new Set<string>(COLUMN_LIST.filter((c) => c !== 'id' && c !== 'created_at'));

/** One record field as its parameter (the methods list as jsonb text; null stays null). */
const toColumn = (key: string, value: unknown): unknown => (key === 'mfa_methods' ? json(value ?? []) : value);

/** Maps the unique indexes (migrations/postgresql/001) to the storage-neutral error. */
function translate(err: unknown): unknown {
  if (sqlState(err) !== '23505') return err;
  const constraint = (err as { constraint?: string }).constraint;
  if (constraint === 'users_username') return new UniqueViolation('username');
  if (constraint === 'users_email') return new UniqueViolation('email');
  return new UniqueViolation('id');
}

export class PgUsers implements UserRepository {
  constructor(
    private readonly db: TenantDb,
    /** Audit entries of a write go in the write's own transaction. */
    private readonly audit: PgAudit,
  ) {}

  /** The token paths' users in memory (user-cache.ts); unset: every read goes to the database. */
  private cache: PgUserCache | undefined;

  /** Serves getForToken from `cache`, which this repository's own writes evict at once. */
  useCache(cache: PgUserCache): void {
    this.cache = cache;
  }

  getForToken(tenant: TenantId, id: string): Promise<UserWithoutSecrets | undefined> {
    return this.cache ? this.cache.get(tenant, id) : this.readForToken(tenant, id);
  }

  /** The uncached read behind getForToken. */
  async readForToken(tenant: TenantId, id: string): Promise<UserWithoutSecrets | undefined> {
    const { rows } = await this.db.statement<UserWithoutSecrets>(tenant, `SELECT ${TOKEN_COLUMNS} FROM users WHERE tenant_id = $1 AND id = $2`, [tenant, id]);
    return rows[0];
  }

  async create(tenant: TenantId, user: UserRecord, audit?: AuditEntry): Promise<void> {
    const p = new Params();
    const values = [p.add(tenant), ...COLUMN_LIST.map((c) => p.add(toColumn(c, user[c])))];
    try {
      await this.db.withTenant(tenant, async (q) => {
        await q(`INSERT INTO users (tenant_id, ${COLUMNS}) VALUES (${values.join(', ')})`, p.values);
        if (audit) await this.audit.write(q, tenant, audit);
      });
    } catch (err) {
      throw translate(err);
    }
  }

  async get(tenant: TenantId, id: string): Promise<UserRecord | undefined> {
    const { rows } = await this.db.statement<UserRecord>(tenant, `SELECT ${COLUMNS} FROM users WHERE tenant_id = $1 AND id = $2`, [tenant, id]);
    return rows[0];
  }

  async findByEmail(tenant: TenantId, email: string): Promise<UserRecord | undefined> {
    // Same expression and predicate as the users_email index, so the lookup is an index seek.
    const { rows } = await this.db.statement<UserRecord>(tenant, `SELECT ${COLUMNS} FROM users WHERE tenant_id = $1 AND lower(email) = lower($2) AND deleted_at IS NULL AND email IS NOT NULL`, [tenant, email]);
    return rows[0];
  }

  async list(tenant: TenantId, filter: UserFilter, page: PageRequest): Promise<Page<UserRecord>> {
    const p = new Params();
    // Deleted (anonymised) users are tombstones kept for the audit trail only: never listed (issue 18 item 3).
    const where = [`tenant_id = ${p.add(tenant)}`, 'deleted_at IS NULL'];
    if (filter.account_enabled !== undefined) where.push(`account_enabled = ${p.add(filter.account_enabled)}`);
    if (filter.role !== undefined) where.push(`role = ${p.add(filter.role)}`);
    if (filter.auth_provider !== undefined) where.push(`auth_provider = ${p.add(filter.auth_provider)}`);
    if (filter.q) {
      where.push(searchCondition(filter.q, ["coalesce(email, '')", "coalesce(username, '')", "coalesce(name, '')"], p));
    }
    const filterSql = where.join(' AND ');
    const countParams = p.snapshot();
    const pageSql = page.after ? `${filterSql} AND (created_at, id) > (${p.add(page.after.created_at)}::timestamptz, ${p.add(page.after.id)})` : filterSql;

    return this.db.withTenant(tenant, async (q) => {
      const { rows } = await q<UserRecord>(`SELECT ${COLUMNS} FROM users WHERE ${pageSql} ORDER BY created_at, id LIMIT ${page.limit + 1}`, p.values);
      const result: Page<UserRecord> = { items: rows.slice(0, page.limit), has_more: rows.length > page.limit };
      if (page.include_count) {
        result.total_count = (await q<{ n: number }>(`SELECT count(*) AS n FROM users WHERE ${filterSql}`, countParams)).rows[0]!.n;
      }
      return result;
    });
  }

  async count(tenant: TenantId): Promise<number> {
    const { rows } = await this.db.statement<{ n: number }>(tenant, 'SELECT count(*) AS n FROM users WHERE tenant_id = $1 AND deleted_at IS NULL', [tenant]);
    return rows[0]!.n;
  }

  async update(tenant: TenantId, id: string, change: Parameters<UserRepository['update']>[2], audit?: AuditEntry | readonly AuditEntry[]): Promise<UserRecord | undefined> {
    // updated_at is stamped now unless the change supplies one or is only a sign-in stamp (as in SQLite).
    const values = new Map<string, unknown>(stampsUpdatedAt(change) ? [['updated_at', new Date().toISOString()]] : []);
    for (const [key, value] of Object.entries(change)) {
      // Undefined means "not supplied"; null clears. Unknown keys never reach SQL.
      if (value === undefined || !UPDATABLE.has(key)) continue;
      values.set(key, toColumn(key, value));
    }
    const p = new Params();
    const assignments = [...values].map(([column, value]) => `${column} = ${p.add(value)}`).join(', ');
    // A deleted (anonymised) user is never written again: of two concurrent deletes the second finds
    // no row once the first commits (PostgreSQL re-checks the condition on the row it waited for).
    const sql = `UPDATE users SET ${assignments} WHERE tenant_id = ${p.add(tenant)} AND id = ${p.add(id)} AND deleted_at IS NULL RETURNING ${COLUMNS}`;
    const entries = audit === undefined ? [] : Array.isArray(audit) ? audit : [audit as AuditEntry];
    try {
      if (!entries.length) return (await this.db.statement<UserRecord>(tenant, sql, p.values)).rows[0];
      // The update and its audit entries in one round trip (a sign-in's user write: issue 17); an
      // entry is written only when this update changed the row: the row version it left behind is
      // this transaction's own (`xmin`; the script runs as one transaction).
      const found = { sql: 'EXISTS (SELECT 1 FROM users WHERE tenant_id = $1 AND id = $2 AND xmin = pg_current_xact_id()::xid)', params: [tenant, id] };
      const [updated] = await this.db.script(tenant, [{ sql, params: p.values }, ...entries.map((e) => this.audit.insertStatement(tenant, e, found))]);
      return updated!.rows[0] as UserRecord | undefined;
    } catch (err) {
      throw translate(err);
    } finally {
      // Committed or not, this instance forgets the row before its caller hears of the write (the
      // database's notice reaches the other instances; user-cache.ts).
      this.cache?.evict(tenant, id);
    }
  }
}
