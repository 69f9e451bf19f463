/**
 * Management API dispatch: route -> tenant actor -> bearer token (authenticate.ts) -> scope ->
 * rate limit -> query/body validation -> handler. Order matters: the scope check comes before any
 * lookup.
 */
import { z } from 'zod';
import type { AppContext } from '../context.js';
import { isUnavailable } from '../errors.js';
import { ProblemError, insufficientScope, toProblem } from '../http/problem.js';
import { Router } from '../http/router.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import type { TenantHandle } from '../tenancy/handle.js';
import { authenticate, type AuthDeps } from './authenticate.js';
import { CrossTenantAudit } from './cross-tenant-audit.js';
import { inRequestScheme } from './dpop.js';
import type { Call, Operation } from './operation.js';
import type { Cursors } from './pagination.js';
import { rateHeaders, type RateDecision, type RateLimiter } from './rate-limit.js';
import { parseBody, parseQuery, refuseNonJsonBody } from './validation.js';

const NO_QUERY = z.object({});

export interface ManagementDeps extends AuthDeps {
  ctx: AppContext;
  /** A tenant's live actor on this instance, without creating one (pool.peek). */
  peekActor?: (tenant: string) => TenantHandle | undefined;
  limiter: RateLimiter;
  cursors: Cursors;
}

export class ManagementApi {
  readonly router = new Router();

  constructor(
    private readonly deps: ManagementDeps,
    readonly operations: Operation[],
  ) {
    for (const o of operations) this.router.add(o.method, o.path, (req) => this.run(o, req));
  }

  handle(req: HttpRequest): Promise<HttpResponse> {
    return this.router.dispatch(req, 'Management API');
  }

  /** The rate decision; undefined only for a fail-open operation while the counters are unavailable. */
  private async limit(o: Operation, tenant: string, clientId: string, max: number): Promise<RateDecision | undefined> {
    try {
      return await this.deps.limiter.hit(tenant, clientId, o.rateClass, max);
    } catch (err) {
      if (o.rateLimitFailOpen && isUnavailable(err)) return undefined;
      throw err;
    }
  }

  private async run(o: Operation, req: HttpRequest): Promise<HttpResponse> {
    try {
      return await this.authorizedRun(o, req);
    } catch (err) {
      throw inRequestScheme(req, err);
    }
  }

  private async authorizedRun(o: Operation, req: HttpRequest): Promise<HttpResponse> {
    // Tenant, actor and verified token (own tenant, `_platforms` for platform operations, or a
    // cross-tenant `_platforms` token): authenticate.ts.
    const { tenant, actor, claims, user, tokenTenant } = await authenticate(this.deps, o, req);
    const scopes = new Set((claims.scope ?? '').split(' '));
    if (!scopes.has(o.scope)) throw insufficientScope(o.scope);

    // The tenant's own limit: its config overrides may lower the global one.
    // A user token counts per (client, user): the admins of one console do not share one budget,
    // so one of them cannot use up everyone's (issue 12; client tokens count per client as before).
    const bucket = user ? `${claims.client_id}|user:${user.id}` : claims.client_id;
    const decision = await this.limit(o, tenant, bucket, actor.config.security.rate_limit[o.rateClass]);
    const limitHeaders = decision ? rateHeaders(decision) : {};
    if (decision && !decision.allowed) {
      throw new ProblemError(429, 'rate-limited', `Rate limit of ${decision.limit} ${o.rateClass} requests per window exceeded`, {
        headers: { ...limitHeaders, 'retry-after': String(decision.reset) },
      });
    }

    // With a user token the entry names the user who acted (issue 12); the affected id is in details.
    const by = { client_id: claims.client_id, ip_address: req.ip, user_agent: req.headers['user-agent'] ?? null, ...(user ? { user_id: user.id, username: user.email } : {}) };
    // Another tenant's caller: its entries here name its tenant, and are copied into its own log.
    const crossing = tokenTenant ? new CrossTenantAudit(this.deps.ctx.audit, this.deps.ctx.storage.audit, tenant, tokenTenant) : undefined;
    const ctx = crossing ? { ...this.deps.ctx, audit: crossing } : this.deps.ctx;
    try {
      const call: Call = {
        req,
        ctx,
        tenant,
        actor,
        claims,
        ...(user ? { user } : {}),
        params: req.params,
        // An operation without query parameters still refuses unknown ones (422), never ignores them.
        query: parseQuery(o.query ?? NO_QUERY, req),
        body: o.body ? parseBody(o.body, req) : refuseNonJsonBody(req),
        cursors: this.deps.cursors.of(tenant),
        peekActor: (t) => this.deps.peekActor?.(t),
        by,
        // The domain writes that take their entry into their own transaction (clients, users) never
        // come here; the others are refused rather than acknowledged unaudited (recordOrFail).
        audit: async (event) => {
          await ctx.audit.recordOrFail(tenant, { ...event, ...by });
        },
      };
      const res = crossing ? await crossing.around(by, () => o.handler(call)) : await o.handler(call);
      res.headers = { ...limitHeaders, ...res.headers };
      return res;
    } catch (err) {
      // Neutral errors of the lower floors become problems here, so they carry the rate headers too.
      const problem = toProblem(err);
      if (!problem) throw err;
      problem.extra.headers = { ...limitHeaders, ...(problem.extra.headers ?? {}) };
      throw problem;
    }
  }
}
