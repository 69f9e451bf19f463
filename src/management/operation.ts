/**
 * A Management API operation: its route, scope, rate class, request schemas and handler. The same
 * declaration drives dispatch, validation and the OpenAPI document (openapi.ts).
 */
import type { z } from 'zod';
import type { Attribution, AuditEvent } from '../audit/audit-log.js';
import type { AppContext } from '../context.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import type { AccessTokenClaims, TokenUser } from '../oidc/token-verification.js';
import type { ManagementScope } from '../oidc/scopes.js';
import type { TenantHandle } from '../tenancy/handle.js';
import type { Cursors } from './pagination.js';
import type { RateClass } from './rate-limit.js';

export interface Call<Q = unknown, B = unknown> {
  req: HttpRequest;
  ctx: AppContext;
  tenant: string;
  actor: TenantHandle;
  /** The bearer's claims; for a user token `scope` is narrowed to the user's current role. */
  claims: AccessTokenClaims;
  /** The user who acts (a user token), absent for a client's own token. */
  user?: TokenUser;
  params: Record<string, string>;
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

export interface Operation<QS extends z.ZodType = z.ZodType, BS extends z.ZodType = z.ZodType> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
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
  handler: (call: Call<z.output<QS>, z.output<BS>>) => Promise<HttpResponse>;
}

/** Keeps the generic types of one operation while collecting them in an array. */
export function op<QS extends z.ZodType, BS extends z.ZodType>(o: Operation<QS, BS>): Operation {
  return o as unknown as Operation;
}
