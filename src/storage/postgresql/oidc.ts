import type { GrantIndexFilter, ListedModel, OidcListedRow, OidcPayloadRepository, OidcPayloadRow, OidcRowWithGrant, OidcUpsert, SessionIndexFilter, TenantId } from '../types.js';
import { json } from './sql.js';
import type { TenantDb } from './tenant-db.js';

interface Row {
  payload: Record<string, unknown>;
  expires_at: number | null;
  consumed_at: number | null;
}

const nowSec = () => Math.floor(Date.now() / 1000);

/** Expiry is judged by the service's clock, as in the SQLite backend (rows linger until the sweep). */
function toRow(row: Row | undefined, now: number): OidcPayloadRow | undefined {
  if (!row) return undefined;
  if (row.expires_at !== null && row.expires_at <= now) return undefined;
  return { payload: row.payload, expires_at: row.expires_at, consumed: row.consumed_at !== null };
}

/** A row with the columns of the Grant its grant_id names (null when there is none). */
interface RowWithGrant extends Row {
  grant_id: string | null;
  g_payload: Record<string, unknown> | null;
  g_expires_at: number | null;
  g_consumed_at: number | null;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const SELECT = 'SELECT payload, expires_at, consumed_at FROM oidc_payloads';
const LIVE = '(expires_at IS NULL OR expires_at > $3)';

/** Rows for writeRows: the columns upsert derives from a payload, computed here the same way. */
const recordsOf = (rows: OidcUpsert[]): string =>
  json(rows.map((r) => ({ model: r.model, id: r.id, payload: r.payload, grant_id: str(r.payload.grantId), user_code: str(r.payload.userCode), uid: str(r.payload.uid), expires_at: r.expiresAt })));

/**
 * A WITH member upserting the rows of $2 (recordsOf) for tenant $1 when `condition` holds, as upsert
 * does one by one (consumed_at kept on a re-save).
 */
const writeRows = (condition: string) => `written AS (
         INSERT INTO oidc_payloads (tenant_id, model, id, payload, grant_id, user_code, uid, expires_at, consumed_at)
         SELECT $1, r.model, r.id, r.payload, r.grant_id, r.user_code, r.uid, r.expires_at, NULL
           FROM jsonb_to_recordset($2::jsonb) AS r(model text, id text, payload jsonb, grant_id text, user_code text, uid text, expires_at bigint)
          WHERE ${condition}
         ON CONFLICT (tenant_id, model, id) DO UPDATE SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id,
           user_code = EXCLUDED.user_code, uid = EXCLUDED.uid, expires_at = EXCLUDED.expires_at
         RETURNING 1
       )`;
const UPSERT_MANY = `WITH ${writeRows('true')} SELECT 1`;
const CONSUME_AND_UPSERT = `WITH spent AS (
         UPDATE oidc_payloads SET consumed_at = $3 WHERE tenant_id = $1 AND model = $4 AND id = $5 AND consumed_at IS NULL RETURNING 1
       ), ${writeRows('EXISTS (SELECT 1 FROM spent)')}
       SELECT count(*)::int AS consumed FROM spent`;

export class PgOidcPayloads implements OidcPayloadRepository {
  constructor(private readonly db: TenantDb) {}

  async upsert(tenant: TenantId, model: string, id: string, payload: Record<string, unknown>, expiresAt: number | null): Promise<void> {
    // consumed_at is not in the update list: re-saving a consumed artefact keeps it consumed.
    await this.db.statement(
      tenant,
      `INSERT INTO oidc_payloads (tenant_id, model, id, payload, grant_id, user_code, uid, expires_at, consumed_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL)
         ON CONFLICT (tenant_id, model, id) DO UPDATE SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id,
           user_code = EXCLUDED.user_code, uid = EXCLUDED.uid, expires_at = EXCLUDED.expires_at`,
      [tenant, model, id, json(payload), str(payload.grantId), str(payload.userCode), str(payload.uid), expiresAt],
    );
  }

  find(tenant: TenantId, model: string, id: string): Promise<OidcPayloadRow | undefined> {
    return this.findOne(tenant, `${SELECT} WHERE tenant_id = $1 AND model = $2 AND id = $3`, [tenant, model, id]);
  }

  /** The row and its Grant in one statement: one round trip for both (issue 17). */
  async findWithGrant(tenant: TenantId, model: string, id: string): Promise<OidcRowWithGrant | undefined> {
    const { rows } = await this.db.statement<RowWithGrant>(
      tenant,
      `SELECT t.payload, t.expires_at, t.consumed_at, t.grant_id,
              g.payload AS g_payload, g.expires_at AS g_expires_at, g.consumed_at AS g_consumed_at
         FROM oidc_payloads t
         LEFT JOIN oidc_payloads g ON g.tenant_id = t.tenant_id AND g.model = 'Grant' AND g.id = t.grant_id
        WHERE t.tenant_id = $1 AND t.model = $2 AND t.id = $3`,
      [tenant, model, id],
    );
    const now = nowSec();
    const found = rows[0];
    const row = toRow(found, now);
    if (!found || !row) return undefined;
    if (found.grant_id === null) return { row };
    const grant = found.g_payload === null ? undefined : toRow({ payload: found.g_payload, expires_at: found.g_expires_at, consumed_at: found.g_consumed_at }, now);
    return { row, grant: { id: found.grant_id, row: grant } };
  }

  findByUid(tenant: TenantId, model: string, uid: string): Promise<OidcPayloadRow | undefined> {
    return this.findOne(tenant, `${SELECT} WHERE tenant_id = $1 AND model = $2 AND uid = $3 LIMIT 1`, [tenant, model, uid]);
  }

  findByUserCode(tenant: TenantId, model: string, userCode: string): Promise<OidcPayloadRow | undefined> {
    return this.findOne(tenant, `${SELECT} WHERE tenant_id = $1 AND model = $2 AND user_code = $3 LIMIT 1`, [tenant, model, userCode]);
  }

  /** Every row in one statement. */
  async upsertMany(tenant: TenantId, rows: OidcUpsert[]): Promise<void> {
    await this.db.statement(tenant, UPSERT_MANY, [tenant, recordsOf(rows)]);
  }

  /**
   * The consume and, when it was this call's, the rows, in one statement (one implicit
   * transaction). Side by side, a failure between the two (a restart, a full disk) left the token
   * spent with no successor, and the client's retry was taken for a replay that revoked the grant.
   */
  async consumeAndUpsert(tenant: TenantId, used: { model: string; id: string }, rows: OidcUpsert[]): Promise<boolean> {
    const { rows: out } = await this.db.statement<{ consumed: number }>(tenant, CONSUME_AND_UPSERT, [tenant, recordsOf(rows), nowSec(), used.model, used.id]);
    return out[0]?.consumed === 1;
  }

  async consume(tenant: TenantId, model: string, id: string): Promise<boolean> {
    const { rowCount } = await this.db.statement(tenant, 'UPDATE oidc_payloads SET consumed_at = $1 WHERE tenant_id = $2 AND model = $3 AND id = $4 AND consumed_at IS NULL', [nowSec(), tenant, model, id]);
    return rowCount === 1;
  }

  async destroy(tenant: TenantId, model: string, id: string): Promise<boolean> {
    const { rowCount } = await this.db.statement(tenant, 'DELETE FROM oidc_payloads WHERE tenant_id = $1 AND model = $2 AND id = $3', [tenant, model, id]);
    return rowCount === 1;
  }

  async revokeByGrantId(tenant: TenantId, grantId: string): Promise<void> {
    await this.db.statement(tenant, 'DELETE FROM oidc_payloads WHERE tenant_id = $1 AND grant_id = $2', [tenant, grantId]);
  }

  async listByModel(tenant: TenantId, model: ListedModel): Promise<OidcListedRow[]> {
    const { rows } = await this.db.statement<OidcListedRow>(tenant, `SELECT id, payload, expires_at FROM oidc_payloads WHERE tenant_id = $1 AND model = $2 AND ${LIVE}`, [tenant, model, nowSec()]);
    return rows;
  }

  async listSessions(tenant: TenantId, filter: SessionIndexFilter): Promise<OidcListedRow[]> {
    // accountId uses the oidc_payloads_session_account index; a client is a key of `authorizations`.
    const { rows } = await this.db.statement<OidcListedRow>(
      tenant,
      `SELECT id, payload, expires_at FROM oidc_payloads
         WHERE tenant_id = $1 AND model = $2 AND ${LIVE}
           AND ($4::text IS NULL OR payload ->> 'accountId' = $4)
           AND ($5::text IS NULL OR jsonb_typeof(payload -> 'authorizations') = 'object' AND payload -> 'authorizations' ? $5)`,
      [tenant, 'Session', nowSec(), filter.accountId ?? null, filter.clientId ?? null],
    );
    return rows;
  }

  async listGrantIds(tenant: TenantId, filter: GrantIndexFilter): Promise<string[]> {
    // The account index (oidc_payloads_grant_account, migration 070) when an account is given, the
    // client index otherwise; `model = 'Grant'` is a literal so the partial indexes apply.
    const { rows } = await this.db.statement<{ id: string }>(
      tenant,
      `SELECT id FROM oidc_payloads
         WHERE tenant_id = $1 AND model = 'Grant' AND (expires_at IS NULL OR expires_at > $2)
           AND ($3::text IS NULL OR payload ->> 'accountId' = $3)
           AND ($4::text IS NULL OR payload ->> 'clientId' = $4)`,
      [tenant, nowSec(), filter.accountId ?? null, filter.clientId ?? null],
    );
    return rows.map((r) => r.id);
  }

  async countLive(tenant: TenantId, model: ListedModel): Promise<number> {
    const { rows } = await this.db.statement<{ n: string }>(tenant, `SELECT count(*) AS n FROM oidc_payloads WHERE tenant_id = $1 AND model = $2 AND ${LIVE}`, [tenant, model, nowSec()]);
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Cross-tenant: the service role sees one tenant at a time, so this goes through the
   * svc_sweep_oidc_payloads function (migrations/postgresql/002), which may delete only rows the
   * database clock also finds expired, and reports a count.
   */
  async sweepExpired(nowSeconds: number): Promise<number> {
    const { rows } = await this.db.unscoped<{ n: number }>('SELECT svc_sweep_oidc_payloads($1) AS n', [nowSeconds]);
    return rows[0]!.n;
  }

  private async findOne(tenant: TenantId, sql: string, params: unknown[]): Promise<OidcPayloadRow | undefined> {
    const { rows } = await this.db.statement<Row>(tenant, sql, params);
    return toRow(rows[0], nowSec());
  }
}
