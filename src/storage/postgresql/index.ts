/**
 * The PostgreSQL backend (multi-tenant deployments): the repositories of ../types.ts on a `pg` pool
 * whose connections run as the row-level-security-bound role svc_app (pool.ts, tenant-db.ts,
 * migrations/postgresql, docs/postgresql.md).
 */
import type { Pool } from 'pg';
import type { Storage, UserCacheStats } from '../types.js';
import { PgAudit } from './audit.js';
import { PgClients } from './clients.js';
import { sqlState } from './errors.js';
import { PgKeys } from './keys.js';
import { PgLoginAttempts } from './login-attempts.js';
import { SchemaNotCurrentError, assertSchemaCurrent } from './migrate.js';
import { PgOidcPayloads } from './oidc.js';
import { SERVICE_ROLE, connectFailureFields, createPool, poolConfig, type PgSettings } from './pool.js';
import { PgRegistrationTokens } from './registration-tokens.js';
import { PgAccountTokens } from './account-tokens.js';
import { PgUserPreferences } from './user-preferences.js';
import { PgSocialIdentities } from './social-identities.js';
import { PgResources } from './resources.js';
import { TenantDb, type QueryLog } from './tenant-db.js';
import { PgTenantConfig } from './tenant-config.js';
import { PgTenants } from './tenants.js';
import { PgUserCache } from './user-cache.js';
import { PgUsers } from './users.js';
import { PgWebauthn } from './webauthn.js';

export type { PgSettings } from './pool.js';
export type { QueryLog } from './tenant-db.js';

/** Logger the backend reports to: slow statements (warn) and broken idle connections (error). */
export interface PgLog extends QueryLog {
  error(obj: Record<string, unknown>, msg: string): void;
}

export class PgStorage implements Storage {
  readonly kind = 'postgresql' as const;
  readonly clients: PgClients;
  readonly oidc: PgOidcPayloads;
  readonly keys: PgKeys;
  readonly audit: PgAudit;
  readonly users: PgUsers;
  readonly loginAttempts: PgLoginAttempts;
  readonly registrationTokens: PgRegistrationTokens;
  readonly accountTokens: PgAccountTokens;
  readonly userPreferences: PgUserPreferences;
  readonly tenants: PgTenants;
  readonly tenantConfig: PgTenantConfig;
  readonly socialIdentities: PgSocialIdentities;
  readonly webauthn: PgWebauthn;
  readonly resources: PgResources;
  private closed = false;
  /** The token paths' users in memory (user-cache.ts), unless the settings turn it off. */
  readonly userCache: PgUserCache | undefined;

  private constructor(
    private readonly pool: Pool,
    db: TenantDb,
    settings: PgSettings,
    log?: PgLog,
  ) {
    this.audit = new PgAudit(db);
    this.clients = new PgClients(db, this.audit);
    this.oidc = new PgOidcPayloads(db);
    this.keys = new PgKeys(db);
    this.users = new PgUsers(db, this.audit);
    this.loginAttempts = new PgLoginAttempts(db);
    this.registrationTokens = new PgRegistrationTokens(db);
    this.accountTokens = new PgAccountTokens(db);
    this.userPreferences = new PgUserPreferences(db);
    this.tenants = new PgTenants(db);
    this.tenantConfig = new PgTenantConfig(db);
    this.socialIdentities = new PgSocialIdentities(db);
    this.webauthn = new PgWebauthn(db, this.audit);
    this.resources = new PgResources(db);
    if (settings.user_cache ?? true) {
      const users = this.users;
      this.userCache = new PgUserCache({
        client: poolConfig(settings),
        read: (tenant, id) => users.readForToken(tenant, id),
        // The message and code only: pg's errors carry their whole client object.
        onError: (err) => log?.warn({ error: err.message, code: (err as { code?: string }).code }, 'PostgreSQL user-change listener failed; users are read from the database until it is back'),
      });
      users.useCache(this.userCache);
      this.userCache.start();
    }
  }

  /**
   * Opens the pool and checks, before the service takes traffic, that the schema is current and
   * that the connections really are subject to row-level security. Either failure is one line
   * that says what to do. `guardTenants` (multi-tenant mode): the writes of registered tenants
   * go through the write guard against their delete (tenant-db.ts).
   */
  static async open(settings: PgSettings, log?: PgLog, opts: { guardTenants?: boolean } = {}): Promise<PgStorage> {
    const pool = createPool(settings, (err) => log?.error({ err }, 'idle PostgreSQL connection failed'), { onConnectError: connectFailureLog(settings.url, log) });
    try {
      await checkDatabase(pool);
    } catch (err) {
      await pool.end();
      throw err;
    }
    return new PgStorage(pool, new TenantDb(pool, settings.slow_query_ms, log, { preparedStatements: settings.prepared_statements ?? true, guardTenants: opts.guardTenants === true }), settings, log);
  }

  userCacheStats(): UserCacheStats {
    return this.userCache?.stats() ?? { serving: false, entries: 0, hits: 0, misses: 0 };
  }

  /** Each read goes to the pool as it is (a shared snapshot would cost a transaction of its own). */
  readTogether<T>(reads: () => T): T {
    return reads();
  }

  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.userCache?.close();
    await this.pool.end();
  }
}

/** At most one line per reason this often: in an outage every request tries to connect. */
const CONNECT_FAILURE_LOG_INTERVAL_MS = 10_000;

/**
 * Reports connections the server refused or that could not be opened (each request answers 503
 * meanwhile), at error with the SQLSTATE: the operator's clue when the database was made to refuse
 * connections, dropped, or the login refused. The first failure of each reason is logged at once,
 * then one line per interval with the number left out.
 */
function connectFailureLog(url: string, log: PgLog | undefined): (err: unknown) => void {
  let last: { code: string | undefined; at: number } | undefined;
  let unlogged = 0;
  return (err) => {
    if (!log) return;
    const fields = connectFailureFields(err, url);
    const now = Date.now();
    if (last && last.code === fields.code && now - last.at < CONNECT_FAILURE_LOG_INTERVAL_MS) {
      unlogged++;
      return;
    }
    log.error({ ...fields, ...(unlogged ? { similar_failures_not_logged: unlogged } : {}) }, 'PostgreSQL connection could not be opened; requests that need the database answer 503');
    last = { code: fields.code, at: now };
    unlogged = 0;
  };
}

async function checkDatabase(pool: Pool): Promise<void> {
  try {
    await assertSchemaCurrent(pool);
  } catch (err) {
    // The role comes with the first migration: a database never migrated refuses the connection.
    if (sqlState(err) === '22023' || sqlState(err) === '42704') throw new SchemaNotCurrentError(`role ${SERVICE_ROLE} is missing`);
    throw err;
  }
  const { rows } = await pool.query<{ role: string; superuser: boolean; bypass: boolean }>(
    'SELECT current_user AS role, rolsuper AS superuser, rolbypassrls AS bypass FROM pg_roles WHERE rolname = current_user',
  );
  const me = rows[0];
  if (!me || me.role !== SERVICE_ROLE || me.superuser || me.bypass) {
    throw new Error(`PostgreSQL connections run as role ${me?.role ?? '?'}, which would bypass row-level security; they must run as ${SERVICE_ROLE} (see docs/postgresql.md)`);
  }
}
