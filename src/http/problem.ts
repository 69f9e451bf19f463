/**
 * Typed errors and the one place that turns them into responses: problem+json (RFC 9457) for the
 * Management API and the platform, OAuth error JSON for the OIDC endpoints.
 */
import { BeyondOwnScopes, Conflict, Invalid, NotFound, Unavailable, UniqueViolation, type FieldError } from '../errors.js';
import type { HeaderValue, HttpResponse } from './types.js';

export type { FieldError } from '../errors.js';

const TITLES: Record<string, string> = {
  'bad-request': 'Bad Request',
  'tenant-unresolved': 'Tenant Unresolved',
  'invalid-tenant': 'Invalid Tenant',
  unauthorized: 'Unauthorized',
  'insufficient-scope': 'Insufficient Scope',
  'tenant-suspended': 'Tenant Suspended',
  forbidden: 'Forbidden',
  'not-found': 'Not Found',
  'method-not-allowed': 'Method Not Allowed',
  conflict: 'Conflict',
  'payload-too-large': 'Payload Too Large',
  'unsupported-media-type': 'Unsupported Media Type',
  validation: 'Validation Error',
  'rate-limited': 'Too Many Requests',
  internal: 'Internal Server Error',
  unavailable: 'Service Unavailable',
};

export class ProblemError extends Error {
  readonly type: string;
  readonly title: string;
  constructor(
    readonly status: number,
    readonly code: keyof typeof TITLES | string,
    readonly detail: string,
    readonly extra: { errors?: FieldError[]; headers?: Record<string, HeaderValue>; [k: string]: unknown } = {},
  ) {
    super(detail);
    this.name = 'ProblemError';
    this.type = `urn:svc:error:${code}`;
    this.title = TITLES[code] ?? 'Error';
  }
}

export const badRequest = (detail: string) => new ProblemError(400, 'bad-request', detail);
export const notFound = (detail = 'The requested resource was not found') => new ProblemError(404, 'not-found', detail);
export const conflict = (detail: string) => new ProblemError(409, 'conflict', detail);
/**
 * At most this many field errors are listed (the detail says how many more there were): a 1 MiB
 * body of tens of thousands of unknown fields must not be answered with megabytes.
 */
export const MAX_FIELD_ERRORS = 100;
export const validation = (errors: FieldError[], detail?: string) => {
  const shown = errors.slice(0, MAX_FIELD_ERRORS);
  const more = errors.length - shown.length;
  const text = shown.map((e) => `${e.field}: ${e.message}`).join('; ') + (more > 0 ? `; and ${more} more errors` : '');
  return new ProblemError(422, 'validation', detail ?? text, { errors: shown });
};
export const unauthorized = (detail: string) =>
  new ProblemError(401, 'unauthorized', detail, { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });
/**
 * 403 naming EVERY scope the caller lacks (issue 18 item 5): in the detail, in the
 * `WWW-Authenticate` challenge (RFC 6750 3: space-separated) and in `missing_scopes`, so a caller
 * fixes its token in one round trip instead of discovering the scopes one by one.
 */
export const insufficientScope = (scope: string | readonly string[]) => {
  const missing = typeof scope === 'string' ? [scope] : [...new Set(scope)];
  const list = missing.join(' ');
  const detail = missing.length === 1 ? `This operation requires the scope ${list}` : `This operation requires the scopes ${missing.join(' and ')}`;
  return new ProblemError(403, 'insufficient-scope', detail, {
    headers: { 'www-authenticate': `Bearer error="insufficient_scope", scope="${list}"` },
    missing_scopes: missing,
  });
};

/**
 * A dependency (Redis, the database) is unreachable: the request fails fast with 503 and a short
 * Retry-After instead of hanging; the service recovers by itself when the dependency is back.
 */
export const unavailable = (detail: string, retryAfterSeconds = 1) =>
  new ProblemError(503, 'unavailable', detail, { headers: { 'retry-after': String(retryAfterSeconds) } });

/** The surfaces ask src/errors.ts; re-exported for the modules that already import it from here. */
export { isUnavailable } from '../errors.js';

/**
 * The one mapping of the neutral errors of the lower floors and the domains (src/errors.ts) to
 * problems, for the Management API, the platform routes, app.ts and the pages and CLI that show a
 * domain's refusal; undefined for anything else (a bug: a 500 with the request id).
 */
export function toProblem(err: unknown): ProblemError | undefined {
  if (err instanceof ProblemError) return err;
  if (err instanceof Unavailable) return unavailable(err.message, err.retryAfterSeconds);
  if (err instanceof NotFound) return notFound(err.message);
  if (err instanceof Conflict) return conflict(err.message);
  if (err instanceof Invalid) return validation(err.errors, err.detail);
  if (err instanceof BeyondOwnScopes) {
    const list = err.missing.join(' ');
    return new ProblemError(403, 'insufficient-scope', err.message, {
      headers: { 'www-authenticate': `Bearer error="insufficient_scope", scope="${list}"` },
      missing_scopes: err.missing,
    });
  }
  if (err instanceof UniqueViolation) return conflict(`A record with this ${err.field} already exists`);
  return undefined;
}

export function problemResponse(err: ProblemError, instance: string, requestId: string): HttpResponse {
  const { headers, ...extra } = err.extra;
  const body: Record<string, unknown> = {
    type: err.type,
    title: err.title,
    status: err.status,
    detail: err.detail,
    instance,
    ...extra,
  };
  if (err.status >= 500) body.request_id = requestId;
  return { status: err.status, headers: { 'content-type': 'application/problem+json', ...(headers ?? {}) }, body: JSON.stringify(body) };
}

export function internalProblem(instance: string, requestId: string): HttpResponse {
  return problemResponse(new ProblemError(500, 'internal', 'An unexpected error occurred; quote the request_id when reporting it'), instance, requestId);
}

/** OAuth 2.0 error (RFC 6749 5.2) thrown by the hot paths that answer without oidc-provider. */
export class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
    readonly headers: Record<string, HeaderValue> = {},
  ) {
    super(description);
    this.name = 'OAuthError';
  }
}

export function oauthResponse(err: OAuthError): HttpResponse {
  return {
    status: err.status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...err.headers },
    body: JSON.stringify({ error: err.error, error_description: err.description }),
  };
}
