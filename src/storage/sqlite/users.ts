import type { AuditEntry, Page, PageRequest, TenantId, UserFilter, UserRecord, UserRepository } from '../types.js';
import type { SqliteAudit } from './audit.js';
import { UniqueViolation } from '../errors.js';
import { stampsUpdatedAt } from '../user-stamps.js';
import { keysetPage, prepared, searchCondition, type Db } from './db.js';

interface Row {
  id: string;
  email: string | null;
  email_verified: number;
  username: string | null;
  given_name: string | null;
  family_name: string | null;
  name: string | null;
  nickname: string | null;
  role: string;
  account_enabled: number;
  locked: number;
  locked_until: string | null;
  auth_provider: string;
  password_hash: string | null;
  mfa_enabled: number;
  mfa_methods: string;
  mfa_secret_sealed: string | null;
  mfa_recovery_sealed: string | null;
  deleted_at: string | null;
  created_at: string;
  updated_at: string;
  last_login_at: string | null;
}

type Column = keyof Row;
const COLUMN_LIST: Column[] = [
  'id', 'email', 'email_verified', 'username', 'given_name', 'family_name', 'name', 'nickname', 'role',
  'account_enabled', 'locked', 'locked_until', 'auth_provider', 'password_hash', 'mfa_enabled', 'mfa_methods',
  'mfa_secret_sealed', 'mfa_recovery_sealed', 'deleted_at', 'created_at', 'updated_at', 'last_login_at',
];
const COLUMNS = COLUMN_LIST.join(', ');
const BOOL_COLUMNS = new Set<string>(['email_verified', 'account_enabled', 'locked', 'mfa_enabled']);
/** Columns update() may set; `id` and `created_at` are fixed at creation. */
const UPDATABLE = new Set<string>(COLUMN_LIST.filter((c) => c !== 'id' && c !== 'created_at'));

function toRecord(r: Row): UserRecord {
  return {
    ...r,
    email_verified: r.email_verified === 1,
    account_enabled: r.account_enabled === 1,
    locked: r.locked === 1,
    mfa_enabled: r.mfa_enabled === 1,
    mfa_methods: JSON.parse(r.mfa_methods) as string[],
  };
}

/** A row in better-sqlite3's raw mode: the values of COLUMN_LIST, in that order. */
type Values = readonly [
  id: string, email: string | null, email_verified: number, username: string | null, given_name: string | null,
  family_name: string | null, name: string | null, nickname: string | null, role: string, account_enabled: number,
  locked: number, locked_until: string | null, auth_provider: string, password_hash: string | null, mfa_enabled: number,
  mfa_methods: string, mfa_secret_sealed: string | null, mfa_recovery_sealed: string | null, deleted_at: string | null,
  created_at: string, updated_at: string, last_login_at: string | null,
];

/**
 * toRecord for a raw row: the record built as one literal, the same keys in the same order. Point
 * reads use it (every token request, userinfo and sign-in reads its user): better-sqlite3 building
 * a 22-key row object and spreading it into another cost ~4 µs more per read.
 */
function fromValues(v: Values): UserRecord {
  return {
    id: v[0], email: v[1], email_verified: v[2] === 1, username: v[3], given_name: v[4], family_name: v[5], name: v[6],
    nickname: v[7], role: v[8], account_enabled: v[9] === 1, locked: v[10] === 1, locked_until: v[11], auth_provider: v[12],
    password_hash: v[13], mfa_enabled: v[14] === 1, mfa_methods: JSON.parse(v[15]) as string[], mfa_secret_sealed: v[16],
    mfa_recovery_sealed: v[17], deleted_at: v[18], created_at: v[19], updated_at: v[20], last_login_at: v[21],
  };
}

/** One record field as its column value (booleans as 0/1, the methods list as JSON). */
function toColumn(key: string, value: unknown): unknown {
  if (BOOL_COLUMNS.has(key)) return value ? 1 : 0;
  if (key === 'mfa_methods') return JSON.stringify(value ?? []);
  return value;
}

/** Maps SQLite's unique-index failure to the storage-neutral error (the index name says which field). */
function translate(err: unknown): unknown {
  const e = err as { code?: string; message?: string };
  if (e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return new UniqueViolation('id');
  if (e?.code === 'SQLITE_CONSTRAINT_UNIQUE') {
    if (e.message?.includes('users_username')) return new UniqueViolation('username');
    if (e.message?.includes('users_email')) return new UniqueViolation('email');
    return new UniqueViolation('id');
  }
  return err;
}

export class SqliteUsers implements UserRepository {
  private readonly getStmt;
  private readonly insertStmt;
  private readonly byEmailStmt;
  private readonly countStmt;

  constructor(
    private readonly db: Db,
    /** Audit entries of a write go in the write's own transaction. */
    private readonly audit: SqliteAudit,
  ) {
    this.getStmt = db.prepare<[string, string], Values>(`SELECT ${COLUMNS} FROM users WHERE tenant_id = ? AND id = ?`).raw();
    this.insertStmt = db.prepare(`INSERT INTO users (tenant_id, ${COLUMNS}) VALUES (@tenant_id, ${COLUMN_LIST.map((c) => `@${c}`).join(', ')})`);
    // Same expression as the users_email index, so the lookup is an index seek.
    this.byEmailStmt = db.prepare<[string, string], Row>(
      `SELECT ${COLUMNS} FROM users WHERE tenant_id = ? AND lower(email) = lower(?) AND deleted_at IS NULL AND email IS NOT NULL`,
    );
    this.countStmt = db.prepare<[string], number>('SELECT count(*) FROM users WHERE tenant_id = ? AND deleted_at IS NULL').pluck();
  }

  async create(tenant: TenantId, user: UserRecord, audit?: AuditEntry): Promise<void> {
    const params: Record<string, unknown> = { tenant_id: tenant };
    for (const c of COLUMN_LIST) params[c] = toColumn(c, user[c]);
    this.atomically(tenant, audit, () => this.insertStmt.run(params).changes);
  }

  /** Runs the write and, when it changed a row, the audit entry, in one transaction. */
  private atomically(tenant: TenantId, audit: AuditEntry | readonly AuditEntry[] | undefined, write: () => number): number {
    try {
      return this.db.transaction(() => {
        const changes = write();
        if (changes > 0 && audit) for (const entry of Array.isArray(audit) ? audit : [audit]) this.audit.write(tenant, entry);
        return changes;
      })();
    } catch (err) {
      throw translate(err);
    }
  }

  async get(tenant: TenantId, id: string): Promise<UserRecord | undefined> {
    const row = this.getStmt.get(tenant, id);
    return row ? fromValues(row) : undefined;
  }

  async findByEmail(tenant: TenantId, email: string): Promise<UserRecord | undefined> {
    const row = this.byEmailStmt.get(tenant, email);
    return row ? toRecord(row) : undefined;
  }

  async list(tenant: TenantId, filter: UserFilter, page: PageRequest): Promise<Page<UserRecord>> {
    // Deleted (anonymised) users are tombstones kept for the audit trail only: never listed (issue 18 item 3).
    const where = ['tenant_id = @tenant', 'deleted_at IS NULL'];
    const params: Record<string, unknown> = { tenant };
    if (filter.account_enabled !== undefined) {
      where.push('account_enabled = @account_enabled');
      params.account_enabled = filter.account_enabled ? 1 : 0;
    }
    if (filter.role !== undefined) {
      where.push('role = @role');
      params.role = filter.role;
    }
    if (filter.auth_provider !== undefined) {
      where.push('auth_provider = @auth_provider');
      params.auth_provider = filter.auth_provider;
    }
    if (filter.q) {
      where.push(searchCondition(filter.q, ["coalesce(email, '')", "coalesce(username, '')", "coalesce(name, '')"], params));
    }
    const result = keysetPage<Row>(this.db, { table: 'users', columns: COLUMNS, where: where.join(' AND '), params, sortKey: ['created_at', 'id'] }, page);
    return { ...result, items: result.items.map(toRecord) };
  }

  async count(tenant: TenantId): Promise<number> {
    return this.countStmt.get(tenant) ?? 0;
  }

  async update(tenant: TenantId, id: string, change: Parameters<UserRepository['update']>[2], audit?: AuditEntry | readonly AuditEntry[]): Promise<UserRecord | undefined> {
    const params: Record<string, unknown> = { tenant, id };
    const sets = new Set<string>();
    if (stampsUpdatedAt(change)) {
      sets.add('updated_at = @updated_at');
      params.updated_at = new Date().toISOString();
    }
    for (const [key, value] of Object.entries(change)) {
      // Undefined means "not supplied"; null clears. Unknown keys never reach SQL.
      if (value === undefined || !UPDATABLE.has(key)) continue;
      sets.add(`${key} = @${key}`);
      params[key] = toColumn(key, value);
    }
    // A deleted (anonymised) user is never written again: two concurrent deletes erase and audit once.
    const changes = this.atomically(tenant, audit, () => prepared(this.db, `UPDATE users SET ${[...sets].join(', ')} WHERE tenant_id = @tenant AND id = @id AND deleted_at IS NULL`).run(params).changes);
    return changes === 0 ? undefined : this.get(tenant, id);
  }
}
