/**
 * Management API dispatch: route -> tenant actor -> bearer token -> scope -> rate limit ->
 * query/body validation -> handler. Order matters: the scope check comes before any lookup.
 */
import type { AppContext } from '../context.js';
import { ProblemError, insufficientScope, isUnavailable, notFound, unauthorized } from '../http/problem.js';
import { Router } from '../http/router.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { MANAGEMENT_RESOURCE } from '../oidc/scopes.js';
import type { TenantActor } from '../tenancy/actor.js';
import type { Call, Operation } from './operation.js';
import type { Cursors } from './pagination.js';
import { rateHeaders, type RateDecision, type RateLimiter } from './rate-limit.js';
import { parseBody, parseQuery } from './validation.js';

export interface ManagementDeps {
  ctx: AppContext;
  actorFor: (req: HttpRequest) => Promise<{ tenant: string; actor: TenantActor }>;
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

  async handle(req: HttpRequest): Promise<HttpResponse> {
    const match = this.router.match(req.method, req.path);
    if (match === undefined) throw notFound(`No Management API route ${req.method} ${req.path}`);
    if (match === 'method') {
      throw new ProblemError(405, 'method-not-allowed', `${req.method} is not allowed on ${req.path}`, {
        headers: { allow: this.router.allowedMethods(req.path).join(', ') },
      });
    }
    req.params = match.params;
    return match.handler(req);
  }

  /** The rate decision; undefined only for a fail-open operation while the counters are unavailable. */
  private async limit(o: Operation, tenant: string, clientId: string): Promise<RateDecision | undefined> {
    try {
      return await this.deps.limiter.hit(tenant, clientId, o.rateClass);
    } catch (err) {
      if (o.rateLimitFailOpen && isUnavailable(err)) return undefined;
      throw err;
    }
  }

  private async run(o: Operation, req: HttpRequest): Promise<HttpResponse> {
    const { tenant, actor } = await this.deps.actorFor(req);

    const header = req.headers.authorization ?? '';
    const m = /^Bearer[ ]+([A-Za-z0-9._~+/=-]+)\s*$/i.exec(header);
    if (!m) throw unauthorized(header ? 'The Authorization header is not a Bearer token' : 'A Bearer access token is required');
    const check = await actor.checkAccessToken(m[1]!);
    if (!check.active) throw unauthorized(`The access token is not valid: ${check.reason}`);
    const claims = check.claims;
    const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!aud.includes(MANAGEMENT_RESOURCE)) throw unauthorized(`The access token is not valid: audience is not ${MANAGEMENT_RESOURCE}`);
    const scopes = new Set((claims.scope ?? '').split(' '));
    if (!scopes.has(o.scope)) throw insufficientScope(o.scope);

    const decision = await this.limit(o, tenant, claims.client_id);
    const limitHeaders = decision ? rateHeaders(decision) : {};
    if (decision && !decision.allowed) {
      throw new ProblemError(429, 'rate-limited', `Rate limit of ${decision.limit} ${o.rateClass} requests per window exceeded`, {
        headers: { ...limitHeaders, 'retry-after': String(decision.reset) },
      });
    }

    try {
      const call: Call = {
        req,
        ctx: this.deps.ctx,
        tenant,
        actor,
        claims,
        params: req.params,
        query: o.query ? parseQuery(o.query, req) : {},
        body: o.body ? parseBody(o.body, req) : undefined,
        cursors: this.deps.cursors,
        audit: async (event) => {
          await this.deps.ctx.audit.record(tenant, { ...event, client_id: claims.client_id, ip_address: req.ip, user_agent: req.headers['user-agent'] ?? null });
        },
      };
      const res = await o.handler(call);
      res.headers = { ...limitHeaders, ...res.headers };
      return res;
    } catch (err) {
      if (err instanceof ProblemError) err.extra.headers = { ...limitHeaders, ...(err.extra.headers ?? {}) };
      throw err;
    }
  }
}
