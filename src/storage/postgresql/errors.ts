/**
 * PostgreSQL failures in the service's terms: "the database is not there right now" becomes the
 * neutral Unavailable the Redis backend also raises (each surface answers it with a 503 and
 * Retry-After), so a restart or failover of the server costs clients a retry, not a 500.
 * Everything else (a constraint, a bug) stays as it is.
 */
import { Unavailable } from '../../errors.js';

/**
 * SQLSTATEs of a server out of disk, memory or I/O: transient, and the operator must hear of them
 * (tenant-db.ts). Not 53400 (configuration_limit_exceeded: the same statement meets the same
 * limit again).
 */
export const OUT_OF_RESOURCES: ReadonlySet<string> = new Set([
  '53000', // insufficient_resources
  '53100', // disk_full: the writes fail until space is freed, the reads go on
  '53200', // out_of_memory
  '58030', // io_error
]);

/** SQLSTATEs that mean "try again": timeouts, shutdowns, connection loss, lock conflicts, OUT_OF_RESOURCES. */
const TRANSIENT_SQLSTATES = new Set([
  ...OUT_OF_RESOURCES,
  '57014', // query_canceled: statement_timeout
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, recovery)
  '53300', // too_many_connections
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available
  '25P03', // idle_in_transaction_session_timeout
]);

const TRANSIENT_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** pg reports pool and connection-level failures as plain Errors with these messages. */
const TRANSIENT_MESSAGE = /^(timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error|Connection ended unexpectedly|Query read timeout)/;

/** pg's client-side query_timeout fired: the server did not answer, the connection is stuck behind it. */
export const isReadTimeout = (err: unknown): boolean => err instanceof Error && err.message === 'Query read timeout';

/**
 * Errors raised while a connection was being opened (pool.ts marks them): whatever the reason (the
 * server refusing connections to the database, 55000; a missing database, 3D000; authentication
 * refused, 28P01/28000; starting up, 57P03; TLS), no statement ran, and the service has no database
 * until an operator or the server fixes it: unavailable (503), as an unreachable server is.
 */
const connectFailures = new WeakSet<object>();

/** Marks err as raised while connecting; returns it. */
export function markConnectFailure<E>(err: E): E {
  if (typeof err === 'object' && err !== null) connectFailures.add(err);
  return err;
}

/** True for an error raised while connecting, or one that wraps it (pg-pool's connection timeout). */
export function isConnectFailure(err: unknown): boolean {
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (connectFailures.has(e)) return true;
  }
  return false;
}

export function isTransient(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (isConnectFailure(err)) return true;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (TRANSIENT_SQLSTATES.has(code) || code.startsWith('08') || TRANSIENT_NODE_CODES.has(code))) return true;
  return TRANSIENT_MESSAGE.test(err.message);
}

/** The error a repository call rejects with. */
export function storageError(err: unknown): unknown {
  return isTransient(err) ? new Unavailable('PostgreSQL is unavailable; retry shortly', 1, { cause: err }) : err;
}

/** SQLSTATE of a server error, if it is one. */
export const sqlState = (err: unknown): string | undefined => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
};
