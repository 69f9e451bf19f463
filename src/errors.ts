/**
 * Errors the lower floors and the domains raise (storage, Redis, the event bus, the worker pools;
 * src/users, src/clients, src/tenants) in the service's own terms, knowing nothing of HTTP. Each surface maps them once: problem+json for the Management
 * API (http/problem.ts, toProblem), an OAuth error for OIDC (tenancy/actor.ts, oidc/adapter.ts), a
 * page for the browser (oidc/interactions.ts).
 */

/** A dependency is down or saturated right now; the caller may retry after `retryAfterSeconds`. */
export class Unavailable extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds = 1,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'Unavailable';
  }
}

/** A unique constraint refused the write (another live record already holds the value). */
export class UniqueViolation extends Error {
  constructor(readonly field: string) {
    super(`unique constraint violated on ${field}`);
    this.name = 'UniqueViolation';
  }
}

/** The record named does not exist (for this tenant). */
export class NotFound extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotFound';
  }
}

/**
 * The tenant a write was for is no longer registered: its delete committed first (the PostgreSQL
 * write guard, migration 110). A NotFound, so every surface answers it as the unknown tenant.
 */
export class TenantGone extends NotFound {
  constructor(readonly tenant: string) {
    super(`Tenant ${tenant} not found`);
    this.name = 'TenantGone';
  }
}

/**
 * The change contradicts the current state (a taken e-mail, a reserved tenant): the message says how,
 * `field` names the field whose value is taken when there is one (for surfaces that word it themselves).
 */
export class Conflict extends Error {
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'Conflict';
  }
}

/** One refused field of an input: its path (`redirect_uris[0]`) and why. */
export interface FieldError {
  field: string;
  message: string;
}

/** The input breaks a domain rule; every refused field is named. `detail`, when given, replaces the summary. */
export class Invalid extends Error {
  constructor(
    readonly errors: FieldError[],
    readonly detail?: string,
  ) {
    super(detail ?? errors.map((e) => `${e.field}: ${e.message}`).join('; '));
    this.name = 'Invalid';
  }
}

/** The caller would hand out scopes it does not hold itself (`missing`, in order). */
export class BeyondOwnScopes extends Error {
  constructor(
    readonly missing: string[],
    message: string,
  ) {
    super(message);
    this.name = 'BeyondOwnScopes';
  }
}

/** True for Unavailable, also when it travels as the `cause` of another error (oidc-provider wraps it). */
export function isUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof Unavailable) return true;
  }
  return false;
}

/** The innermost cause of an error's chain (the dependency's own error under an Unavailable). */
export function rootCause(err: unknown): unknown {
  let inner = err;
  for (let depth = 0; inner instanceof Error && inner.cause instanceof Error && depth < 5; depth++) inner = inner.cause;
  return inner;
}
