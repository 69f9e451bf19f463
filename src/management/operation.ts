/**
 * A Management API operation: its route, scope, rate class, request schemas and handler. The same
 * declaration drives dispatch, validation and the OpenAPI document (openapi.ts).
 */
import type { z } from 'zod';
import { NotFound } from '../errors.js';
import type { Attribution, AuditEvent } from '../audit/audit-log.js';
import type { AppContext } from '../context.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import type { AccessTokenClaims, TokenUser } from '../oidc/token-verification.js';
import type { ManagementScope } from '../oidc/scopes.js';
import type { TenantHandle } from '../tenancy/handle.js';
import type { Cursors } from './pagination.js';
import type { RateClass } from './rate-limit.js';

/**
 * The `:name` segments of a route pattern as an object type: `/api/v1/users/:user_id/lock` gives
 * `{ user_id: string }`, so a handler reads `call.params.user_id` as a string, no assertion. A
 * pattern only known as `string` gives a record whose values may be missing.
 */
export type PathParams<P extends string> = string extends P ? Record<string, string | undefined> : { [K in ParamNames<P>]: string };

/** The names of the `:name` segments of a pattern, as a union. */
type ParamNames<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? Name | ParamNames<`/${Rest}`>
  : P extends `${string}:${infer Name}`
    ? Name
    : never;

export interface Call<Q = unknown, B = unknown, P extends object = Record<string, string | undefined>> {
  req: HttpRequest;
  /**
   * The app's context; for a cross-tenant caller a copy whose `audit` attributes and copies the
   * call's entries (cross-tenant-audit.ts), so no identity-keyed cache should be keyed by it.
   */
  ctx: AppContext;
  tenant: string;
  actor: TenantHandle;
  /** The bearer's claims; for a user token `scope` is narrowed to the user's current role. */
  claims: AccessTokenClaims;
  /** The user who acts (a user token), absent for a client's own token. */
  user?: TokenUser;
  /** The path parameters of the operation's pattern (the router matched it: each one is there). */
  params: P;
  query: Q;
  body: B;
  cursors: Cursors;
  /** Another tenant's live actor on this instance, if any (never creates one): tenant config updates reload it. */
  peekActor(tenant: string): TenantHandle | undefined;
  /**
   * The calling client and request, as domain operations name them in their audit entries; with a
   * user token also the user who acted (`user_id`, `username`: the affected id stays in `details`).
   */
  by: Attribution;
  /** Records an audit entry attributed to the calling client and request (and user, as `by`). */
  audit(event: Omit<AuditEvent, 'client_id' | 'ip_address' | 'user_agent'>): Promise<void>;
}

export interface Operation<QS extends z.ZodType = z.ZodType, BS extends z.ZodType = z.ZodType, P extends string = string> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: P;
  scope: ManagementScope;
  rateClass: RateClass;
  /**
   * Go on without a rate decision when the counter store (Redis) is unavailable, instead of 503:
   * only for the health check, which must be able to report that very outage.
   */
  rateLimitFailOpen?: boolean;
  /**
   * A platform operation (spec 4.9, 5 rule 4: the tenants resource and its configuration): only
   * in multi-tenant mode (404 otherwise), and the bearer token is verified by the `_platforms`
   * actor whatever tenant the request resolved to; the call runs as tenant `_platforms` (rate
   * limits, audit) and names the tenant it manages in its path.
   */
  platform?: boolean;
  summary: string;
  tag: string;
  query?: QS;
  body?: BS;
  /** Response status on success and a zod schema of its body (for the OpenAPI document). */
  /** `contentType` when the body is not JSON (the audit CSV export). */
  success: { status: number; schema?: z.ZodType; description?: string; contentType?: string };
  errors?: number[];
  handler: (call: Call<z.output<QS>, z.output<BS>, PathParams<P>>) => Promise<HttpResponse>;
}

/**
 * One operation, its query, body and path types intact inside (the handler is checked against its
 * own schemas and pattern), for a list of operations of different types. What the list loses is
 * restored at run time: the dispatcher parses query and body with these very schemas
 * (management/api.ts), and `pathParams` checks the pattern's parameters are all present.
 */
export function op<QS extends z.ZodType, BS extends z.ZodType, P extends string>(o: Operation<QS, BS, P>): Operation {
  const { handler, ...rest } = o;
  return {
    ...rest,
    handler: (call) => handler({ ...(call as Call<z.output<QS>, z.output<BS>>), params: pathParams(o.path, call.params) }),
  };
}

/** The parameters `pattern` names, taken from what the router matched; 404 if one is missing. */
export function pathParams<P extends string>(pattern: P, matched: Record<string, string | undefined>): PathParams<P> {
  const out: Record<string, string> = {};
  for (const segment of pattern.split('/')) {
    if (!segment.startsWith(':')) continue;
    const name = segment.slice(1);
    const value = matched[name];
    if (value === undefined) throw new NotFound(`No ${name} in the path`);
    out[name] = value;
  }
  // Every `:name` of P is a key of `out` now: the shape PathParams<P> describes.
  return out as PathParams<P>;
}
