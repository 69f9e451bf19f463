/**
 * Start-up failures that name their cause (issue 18 item 11): which file or dependency failed, the
 * setting it came from, and the underlying reason, so an operator reading `fatal: ...` knows what to
 * fix without a stack trace. Connection strings are shown without their password.
 */

/** A start-up step failed; `setting` is the environment variable the operator changes to fix it. */
export class StartupError extends Error {
  constructor(
    message: string,
    readonly setting: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StartupError';
  }
}

/** The URL without its password (and unparsable ones not echoed at all). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}

/** The underlying reason in one line: the system error code where there is one, and the message. */
export function reasonOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  // AggregateError (a host name resolving to several addresses): the first attempt's reason.
  const inner = err instanceof AggregateError && err.errors[0] instanceof Error ? err.errors[0].message : undefined;
  const text = err.message || inner || err.name;
  return typeof code === 'string' && !text.includes(code) ? `${code}: ${text}` : text;
}

/** Wraps an SQLite open failure: the path (as configured and resolved) and why. */
export function sqliteOpenFailed(path: string, resolved: string, err: unknown): StartupError {
  const where = path === resolved ? path : `${path} (${resolved})`;
  return new StartupError(`cannot open the SQLite database ${where} (STORAGE_SQLITE_PATH): ${reasonOf(err)}`, 'STORAGE_SQLITE_PATH', { cause: err });
}

/** Wraps a PostgreSQL start-up failure: refused, unreachable, rejected login, or its own message. */
export function postgresFailed(url: string, err: unknown): StartupError {
  return new StartupError(`PostgreSQL at ${redactUrl(url)} (STORAGE_POSTGRESQL_URL) failed at start-up: ${reasonOf(err)}`, 'STORAGE_POSTGRESQL_URL', { cause: err });
}

/** The development encryption key could not be read or written (SVC_ENCRYPTION_KEY not set). */
export function keyFileFailed(file: string, err: unknown): StartupError {
  return new StartupError(
    `cannot write the development encryption key ${file} (set SVC_ENCRYPTION_KEY, or make its folder writable): ${reasonOf(err)}`,
    'SVC_ENCRYPTION_KEY',
    { cause: err },
  );
}

/**
 * A signing key stored in the database does not decrypt with the configured SVC_ENCRYPTION_KEY:
 * the database was written under another key (a new key, a restored backup, another deployment's
 * settings). AES-GCM's own message ("unable to authenticate data") names neither.
 */
export function sealedKeyUnreadable(tenant: string, kid: string, err: unknown): StartupError {
  return new StartupError(
    `cannot decrypt the signing key ${kid} of tenant ${tenant} with SVC_ENCRYPTION_KEY: the database was written with another key (set the key it was created with): ${reasonOf(err)}`,
    'SVC_ENCRYPTION_KEY',
    { cause: err },
  );
}
