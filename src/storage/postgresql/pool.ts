/**
 * The service's connection pool. Every connection runs as the role `svc_app` (created by the
 * migrations): it owns no table and has no BYPASSRLS, so row-level security applies to every
 * statement whatever role the URL logs in as. The role is set with the startup option
 * `-c role=svc_app` rather than a SET ROLE after connecting: it is in force before the first
 * statement, and RESET ROLE returns to it instead of to the login role. statement_timeout travels
 * the same way.
 */
import { Client, Pool, types, type CustomTypes, type PoolConfig } from 'pg';
import { markConnectFailure } from './errors.js';

export interface PgSettings {
  url: string;
  pool_max: number;
  statement_timeout_ms: number;
  slow_query_ms: number;
  /** TenantDb.statement prepares the texts it runs often (prepared.ts); default true. */
  prepared_statements?: boolean;
  /** The token paths' users kept in memory, evicted by change notices (user-cache.ts); default true. */
  user_cache?: boolean;
  /** Longest wait for a connection (pool exhausted, server unreachable); default 5000. */
  connect_timeout_ms?: number;
}

/** The role the service's statements run as (docs/postgresql.md). */
export const SERVICE_ROLE = 'svc_app';

/** How long a request waits for a connection (pool exhausted, server unreachable) before failing. */
const CONNECT_TIMEOUT_MS = 5000;
/**
 * The client-side backstop behind statement_timeout: a server that stopped answering (frozen,
 * network gone, half-open socket) enforces no timeout, so the client gives up a little after it
 * (half the statement timeout, between 250 ms and 1 s later). 0 = no statement timeout: none either.
 */
export function clientQueryTimeout(statementTimeoutMs: number): number | undefined {
  if (statementTimeoutMs <= 0) return undefined;
  return statementTimeoutMs + Math.min(1000, Math.max(250, Math.round(statementTimeoutMs / 2)));
}
/** A transaction left idle (a stalled process) gives its locks back after this. */
const IDLE_IN_TRANSACTION_MS = 60_000;

const INT8 = 20;
const TIMESTAMPTZ = 1184;

/**
 * Values come back in the shapes the repositories speak: bigint counters as numbers (they stay far
 * below 2^53) and timestamptz as the ISO 8601 UTC strings the SQLite backend stores
 * (Date.toISOString(): millisecond precision, which is what the service writes).
 */
export const TYPES: CustomTypes = {
  getTypeParser(oid, format) {
    if (oid === INT8) return (v: string) => Number(v);
    if (oid === TIMESTAMPTZ) {
      const parseDate = types.getTypeParser(TIMESTAMPTZ, 'text');
      return (v: string) => (parseDate(v) as Date).toISOString();
    }
    return types.getTypeParser(oid, format);
  },
};

/**
 * The URL with startup options added after any it has (later ones win): the role, and the
 * statement timeout exactly as configured (pg's own setting would not send 0 = none).
 */
export function withStartupOptions(url: string, settings: { role: string; statement_timeout_ms: number }): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error('STORAGE_POSTGRESQL_URL must be a URL: postgres://user[:password]@host[:port]/database');
  }
  const ours = `-c role=${settings.role} -c statement_timeout=${settings.statement_timeout_ms}`;
  u.searchParams.set('options', [u.searchParams.get('options'), ours].filter(Boolean).join(' '));
  return u.toString();
}

export function poolConfig(settings: PgSettings, role: string = SERVICE_ROLE): PoolConfig {
  return {
    connectionString: withStartupOptions(settings.url, { role, statement_timeout_ms: settings.statement_timeout_ms }),
    application_name: 'svc',
    max: settings.pool_max,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
    connectionTimeoutMillis: settings.connect_timeout_ms ?? CONNECT_TIMEOUT_MS,
    query_timeout: clientQueryTimeout(settings.statement_timeout_ms),
    keepAlive: true,
    types: TYPES,
  };
}

export interface PoolReports {
  /** The login role (default svc_app). */
  role?: string;
  /** A connection could not be opened (the error is marked as a connect failure, errors.ts). */
  onConnectError?: (err: unknown) => void;
}

export function createPool(settings: PgSettings, onIdleError: (err: Error) => void, opts: PoolReports = {}): Pool {
  const pool = new Pool({ ...poolConfig(settings, opts.role), Client: connectMarkingClient(opts.onConnectError) });
  // An idle connection can die (server restart); without a listener that would crash the process.
  // The pool drops the connection and opens a new one on demand.
  pool.on('error', (err) => onIdleError(withoutClient(err)));
  return pool;
}

/**
 * pg-pool hands over an idle connection's error with the dead client attached (`err.client`): the
 * whole pg.Client, whose enumerable fields include the backend's cancel key and the connection
 * parameters, among them the TLS client key and certificate that pg reads from an `sslkey` /
 * `sslcert` in STORAGE_POSTGRESQL_URL. A logger serialising the error would print all of it, so the
 * client is taken off first (the pool has already dropped it).
 */
export function withoutClient(err: Error): Error {
  delete (err as Error & { client?: unknown }).client;
  return err;
}

/**
 * pg.Client whose connect() failures are marked (errors.ts, markConnectFailure) and reported: the
 * one place that knows an error came from opening a connection rather than from a statement, for
 * any statement path (pool.query, pool.connect) the pool opens connections on.
 */
function connectMarkingClient(onConnectError: ((err: unknown) => void) | undefined): new (config: PoolConfig) => Client {
  const failed = (err: unknown) => {
    markConnectFailure(err);
    onConnectError?.(err);
    return err;
  };
  return class ConnectMarkingClient extends Client {
    constructor(config: PoolConfig) {
      super(config);
      // pg emits 'error' when the socket dies, even with no statement running (a server restart
      // during a transaction's await). pg-pool listens only while the connection is idle; checked
      // out, nobody would, and an 'error' without a listener exits the process. The failure still
      // reaches the holder: pg rejects the statements in flight and refuses later ones, and the
      // holder releases the connection as broken. Idle connections' errors still go to the pool's
      // listener (createPool's onIdleError).
      this.on('error', () => undefined);
    }

    override connect(): Promise<void>;
    override connect(callback: (err?: Error | null) => void): void;
    override connect(callback?: (err?: Error | null) => void): Promise<void> | void {
      if (!callback) return super.connect().catch((err: unknown) => Promise.reject(failed(err)));
      super.connect((err) => callback(err ? (failed(err) as Error) : err));
    }
  };
}

/**
 * The fields a failed connection is logged with: its SQLSTATE (or errno code) and message, never
 * the error object (it can carry connection parameters) and never the URL's password, should a
 * message ever repeat it.
 */
export function connectFailureFields(err: unknown, url: string): { code?: string; severity?: string; error: string } {
  const e = err as { code?: unknown; severity?: unknown; message?: unknown } | null;
  let message = typeof e?.message === 'string' ? e.message : String(err);
  let password = '';
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {
    // Not a URL: pool.ts refused it before any connection.
  }
  if (password) message = message.split(password).join('[redacted]');
  return {
    ...(typeof e?.code === 'string' ? { code: e.code } : {}),
    ...(typeof e?.severity === 'string' ? { severity: e.severity } : {}),
    error: message,
  };
}
