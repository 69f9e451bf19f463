import type { GrantIndexFilter, ListedModel, OidcPayloadRepository, OidcPayloadRow, OidcUpsert, SessionIndexFilter, TenantId } from '../types.js';
import type Database from 'better-sqlite3';
import type { Db } from './db.js';
import { WriteBatch } from './write-batch.js';

/**
 * A point read's row in better-sqlite3's raw mode (`payload, expires_at, consumed_at`): an array
 * instead of an object built per row, on the reads every token, userinfo and sign-in request makes.
 */
type Row = [payload: string, expires_at: number | null, consumed_at: number | null];

function toRow(row: Row | undefined, now: number): OidcPayloadRow | undefined {
  if (!row) return undefined;
  const expiresAt = row[1];
  if (expiresAt !== null && expiresAt <= now) return undefined;
  return { payload: JSON.parse(row[0]) as Record<string, unknown>, expires_at: expiresAt, consumed: row[2] !== null };
}

const nowSec = () => Math.floor(Date.now() / 1000);
/*
 * The keys a write or read concerns, for the group commit's read-your-writes (write-batch.ts): a
 * row by id, a row by uid, and "some row of this model went away or changed state" (a consume or
 * destroy, which a lookup by uid cannot tell apart by key).
 */
const rowKey = (tenant: string, model: string, id: string) => `${tenant}\u0000${model}\u0000${id}`;
const uidKey = (tenant: string, model: string, uid: string) => `${tenant}\u0000${model}\u0001${uid}`;
const removalKey = (tenant: string, model: string) => `${tenant}\u0000${model}\u0002`;
/** A consume or destroy concerns its row and every lookup by uid in its model. */
const removalKeys = (tenant: string, model: string, id: string) => [rowKey(tenant, model, id), removalKey(tenant, model)];

/** An upsert's statement parameters, serialised now: the caller may change the payload once the call returns. */
function upsertRow(tenant: string, r: OidcUpsert) {
  const { model, id, payload, expiresAt } = r;
  return {
    tenant,
    model,
    id,
    payload: JSON.stringify(payload),
    grant_id: typeof payload.grantId === 'string' ? payload.grantId : null,
    user_code: typeof payload.userCode === 'string' ? payload.userCode : null,
    uid: typeof payload.uid === 'string' ? payload.uid : null,
    expires_at: expiresAt,
  };
}
type UpsertRow = ReturnType<typeof upsertRow>;

/**
 * The keys an upsert concerns. A stored row's uid never changes (oidc-provider sets a Session's
 * once, at creation), so the new uid is the only one a lookup by uid could find this row under.
 */
const upsertKeys = (row: UpsertRow): string[] =>
  row.uid === null ? [rowKey(row.tenant, row.model, row.id)] : [rowKey(row.tenant, row.model, row.id), uidKey(row.tenant, row.model, row.uid)];

type Lookup = Database.Statement<[string, string], Row>;

/** Model names inlined into SQL: oidc-provider's (`Session`, `DeviceCode`, ...), letters only. */
const MODEL_NAME = /^[A-Za-z]{1,64}$/;
/** At most this many models get statements of their own (oidc-provider has about a dozen). */
const MAX_MODEL_STATEMENTS = 32;

/**
 * Lookups by a secondary column (uid, user_code) with the model written into the SQL text, one
 * statement per model. With the model bound as a parameter SQLite cannot decide at prepare time
 * whether the partial indexes `WHERE model = 'Session'` / `'Grant'` (migration 070) apply, so it
 * marks the statement to be planned again whenever that parameter is bound: every call re-prepared
 * (a session by uid: 15 µs instead of 5 µs, on every userinfo request and code exchange). Lookups
 * by primary key are unaffected (SQLite short-cuts a full-key equality before considering indexes).
 */
class PerModel {
  private readonly byModel = new Map<string, Lookup>();
  private readonly generic: Database.Statement<[string, string, string], Row>;

  constructor(
    private readonly db: Db,
    /** The statement with `MODEL` where the model goes and `?` for tenant and value, in that order. */
    private readonly sql: string,
  ) {
    this.generic = db.prepare<[string, string, string], Row>(sql.replace('MODEL', '?')).raw();
  }

  get(tenant: string, model: string, value: string): Row | undefined {
    let stmt = this.byModel.get(model);
    if (!stmt) {
      if (!MODEL_NAME.test(model) || this.byModel.size >= MAX_MODEL_STATEMENTS) return this.generic.get(tenant, model, value);
      stmt = this.db.prepare<[string, string], Row>(this.sql.replace('MODEL', `'${model}'`)).raw();
      this.byModel.set(model, stmt);
    }
    return stmt.get(tenant, value);
  }
}

export class SqliteOidcPayloads implements OidcPayloadRepository {
  private readonly upsertStmt;
  private readonly findStmt;
  private readonly uidStmt;
  private readonly userCodeStmt;
  private readonly consumeStmt;
  private readonly destroyStmt;
  private readonly revokeStmt;
  private readonly listStmt;
  private readonly sessionsStmt;
  private readonly sessionsByAccountStmt;
  private readonly grantsByAccountStmt;
  private readonly countStmt;
  private readonly grantsByClientStmt;
  private readonly sweepStmt;
  /** Writes are group-committed (write-batch.ts); a read first waits for (or commits) the queued writes it could see. */
  private readonly batch: WriteBatch;

  constructor(db: Db) {
    this.batch = new WriteBatch(db);
    this.upsertStmt = db.prepare(
      `INSERT INTO oidc_payloads (tenant_id, model, id, payload, grant_id, user_code, uid, expires_at, consumed_at)
       VALUES (@tenant, @model, @id, @payload, @grant_id, @user_code, @uid, @expires_at, NULL)
       ON CONFLICT (tenant_id, model, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id,
         user_code = excluded.user_code, uid = excluded.uid, expires_at = excluded.expires_at`,
    );
    const cols = 'payload, expires_at, consumed_at';
    this.findStmt = db.prepare<[string, string, string], Row>(`SELECT ${cols} FROM oidc_payloads WHERE tenant_id = ? AND model = ? AND id = ?`).raw();
    this.uidStmt = new PerModel(db, `SELECT ${cols} FROM oidc_payloads WHERE tenant_id = ? AND model = MODEL AND uid = ?`);
    this.userCodeStmt = new PerModel(db, `SELECT ${cols} FROM oidc_payloads WHERE tenant_id = ? AND model = MODEL AND user_code = ?`);
    this.consumeStmt = db.prepare('UPDATE oidc_payloads SET consumed_at = ? WHERE tenant_id = ? AND model = ? AND id = ? AND consumed_at IS NULL');
    this.destroyStmt = db.prepare('DELETE FROM oidc_payloads WHERE tenant_id = ? AND model = ? AND id = ?');
    this.revokeStmt = db.prepare('DELETE FROM oidc_payloads WHERE tenant_id = ? AND grant_id = ?');
    this.listStmt = db.prepare<[string, string, number], { id: string; payload: string; expires_at: number | null }>(
      'SELECT id, payload, expires_at FROM oidc_payloads WHERE tenant_id = ? AND model = ? AND (expires_at IS NULL OR expires_at > ?)',
    );
    // The account filter reads oidc_payloads_session_account (migration 070); a client is a key of
    // `authorizations`, filtered in SQL over the account's (or the tenant's) sessions.
    type SessionQuery = [{ tenant: string; now: number; account: string | null; client: string | null }];
    type SessionRow = { id: string; payload: string; expires_at: number | null };
    this.sessionsStmt = db.prepare<SessionQuery, SessionRow>(
      `SELECT id, payload, expires_at FROM oidc_payloads
       WHERE tenant_id = @tenant AND model = 'Session' AND (expires_at IS NULL OR expires_at > @now)
         AND (@account IS NULL OR json_extract(payload, '$.accountId') = @account)
         AND (@client IS NULL OR EXISTS (SELECT 1 FROM json_each(payload, '$.authorizations') WHERE json_each.key = @client))`,
    );
    // SQLite plans before it sees the parameters, so `@account IS NULL OR ...` could not use the
    // index: with an account, this statement names it.
    this.sessionsByAccountStmt = db.prepare<SessionQuery, SessionRow>(
      `SELECT id, payload, expires_at FROM oidc_payloads INDEXED BY oidc_payloads_session_account
       WHERE tenant_id = @tenant AND model = 'Session' AND json_extract(payload, '$.accountId') = @account
         AND (expires_at IS NULL OR expires_at > @now)
         AND (@client IS NULL OR EXISTS (SELECT 1 FROM json_each(payload, '$.authorizations') WHERE json_each.key = @client))`,
    );
    // The expressions and the literal model match the partial indexes of migration 070.
    type GrantQuery = [{ tenant: string; now: number; account: string | null; client: string | null }];
    this.grantsByAccountStmt = db.prepare<GrantQuery, string>(
      `SELECT id FROM oidc_payloads INDEXED BY oidc_payloads_grant_account
       WHERE tenant_id = @tenant AND model = 'Grant' AND json_extract(payload, '$.accountId') = @account
         AND (expires_at IS NULL OR expires_at > @now) AND (@client IS NULL OR json_extract(payload, '$.clientId') = @client)`,
    ).pluck();
    this.grantsByClientStmt = db.prepare<GrantQuery, string>(
      `SELECT id FROM oidc_payloads INDEXED BY oidc_payloads_grant_client
       WHERE tenant_id = @tenant AND model = 'Grant' AND json_extract(payload, '$.clientId') = @client
         AND (expires_at IS NULL OR expires_at > @now) AND @account IS NULL`,
    ).pluck();
    this.countStmt = db
      .prepare<[string, string, number], number>('SELECT count(*) FROM oidc_payloads WHERE tenant_id = ? AND model = ? AND (expires_at IS NULL OR expires_at > ?)')
      .pluck();
    this.sweepStmt = db.prepare('DELETE FROM oidc_payloads WHERE expires_at IS NOT NULL AND expires_at <= ?');
  }

  async upsert(tenant: TenantId, model: string, id: string, payload: Record<string, unknown>, expiresAt: number | null): Promise<void> {
    const row = upsertRow(tenant, { model, id, payload, expiresAt });
    return this.batch.write(upsertKeys(row), () => this.upsertStmt.run(row));
  }

  /** Every row in one write of the group commit: a turn whose commit fails stores all or none of them. */
  async upsertMany(tenant: TenantId, rows: OidcUpsert[]): Promise<void> {
    const written = rows.map((r) => upsertRow(tenant, r));
    return this.batch.write(written.flatMap(upsertKeys), () => {
      for (const row of written) this.upsertStmt.run(row);
    });
  }

  /**
   * The consume and, when it was this call's, the rows, in one write of the group commit (one
   * transaction whatever happens to the others of its turn). Side by side, a commit that failed
   * half-way (a full disk: the consume's in-place update fits, the new rows need a page) left the
   * token spent with no successor, and the client's retry was taken for a replay that revoked the
   * grant.
   */
  async consumeAndUpsert(tenant: TenantId, used: { model: string; id: string }, rows: OidcUpsert[]): Promise<boolean> {
    const at = nowSec();
    const written = rows.map((r) => upsertRow(tenant, r));
    // Set by the run that commits (a batch that failed is run again write by write).
    let consumed = false;
    await this.batch.write([...removalKeys(tenant, used.model, used.id), ...written.flatMap(upsertKeys)], () => {
      consumed = this.consumeStmt.run(at, tenant, used.model, used.id).changes === 1;
      if (consumed) for (const row of written) this.upsertStmt.run(row);
    });
    return consumed;
  }

  /** Commits the queued writes (SqliteStorage.close). */
  flush(): void {
    this.batch.flush();
  }

  /** True while a write waits for the group commit (SqliteStorage.readTogether opens no transaction then). */
  get writesQueued(): boolean {
    return this.batch.pending;
  }

  // A point read whose row has a write queued waits for that group commit; any other reads at once,
  // before its first await (SqliteStorage.readTogether relies on that).
  async find(tenant: TenantId, model: string, id: string) {
    const queued = this.batch.committedFor(rowKey(tenant, model, id));
    if (queued) await queued;
    return toRow(this.findStmt.get(tenant, model, id), nowSec());
  }

  async findByUid(tenant: TenantId, model: string, uid: string) {
    const queued = this.batch.committedFor(uidKey(tenant, model, uid), removalKey(tenant, model));
    if (queued) await queued;
    return toRow(this.uidStmt.get(tenant, model, uid), nowSec());
  }

  async findByUserCode(tenant: TenantId, model: string, userCode: string) {
    this.batch.flush();
    return toRow(this.userCodeStmt.get(tenant, model, userCode), nowSec());
  }

  async consume(tenant: TenantId, model: string, id: string): Promise<boolean> {
    const at = nowSec();
    // Set by the run that commits (a batch that failed is run again write by write).
    let consumed = false;
    await this.batch.write(removalKeys(tenant, model, id), () => {
      consumed = this.consumeStmt.run(at, tenant, model, id).changes === 1;
    });
    return consumed;
  }

  async destroy(tenant: TenantId, model: string, id: string): Promise<boolean> {
    // Set by the run that commits, as in consume.
    let removed = false;
    await this.batch.write(removalKeys(tenant, model, id), () => {
      removed = this.destroyStmt.run(tenant, model, id).changes === 1;
    });
    return removed;
  }

  async revokeByGrantId(tenant: TenantId, grantId: string): Promise<void> {
    return this.batch.write(undefined, () => this.revokeStmt.run(tenant, grantId));
  }

  async listByModel(tenant: TenantId, model: ListedModel) {
    this.batch.flush();
    return this.listStmt.all(tenant, model, nowSec()).map((r) => ({ id: r.id, payload: JSON.parse(r.payload) as Record<string, unknown>, expires_at: r.expires_at }));
  }

  async listSessions(tenant: TenantId, filter: SessionIndexFilter) {
    this.batch.flush();
    const stmt = filter.accountId !== undefined ? this.sessionsByAccountStmt : this.sessionsStmt;
    return stmt
      .all({ tenant, now: nowSec(), account: filter.accountId ?? null, client: filter.clientId ?? null })
      .map((r) => ({ id: r.id, payload: JSON.parse(r.payload) as Record<string, unknown>, expires_at: r.expires_at }));
  }

  async listGrantIds(tenant: TenantId, filter: GrantIndexFilter): Promise<string[]> {
    this.batch.flush();
    const params = { tenant, now: nowSec(), account: filter.accountId ?? null, client: filter.clientId ?? null };
    return (params.account !== null ? this.grantsByAccountStmt : this.grantsByClientStmt).all(params);
  }

  async countLive(tenant: TenantId, model: ListedModel): Promise<number> {
    this.batch.flush();
    return this.countStmt.get(tenant, model, nowSec()) ?? 0;
  }

  async sweepExpired(now: number): Promise<number> {
    this.batch.flush();
    return this.sweepStmt.run(now).changes;
  }
}
