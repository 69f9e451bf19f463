/**
 * The tenant part of the request path, between the HTTP front door and the actors:
 *   resolve (resolver.ts) -> `_ops` gateway or `/platform/*` routes (multi-tenant mode only)
 *   -> registry check (unknown 404, suspended 403) -> the tenant's actor from the pool.
 *
 * Two rules of spec 1.5 live here: the development fallback to `default` is logged (at most once
 * a minute, with the number of requests since), and when the host's subdomain overruled a
 * conflicting tenant header the request's cookies are dropped, so no session of either tenant is
 * honoured for it ("the authentication state is cleared"). Cookies are signed with per-tenant keys
 * anyway, so a session cookie of one tenant never verifies at another.
 */
import type { AppContext } from '../context.js';
import { notFound } from '../http/problem.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import type { Cursors } from '../management/pagination.js';
import type { TenantActor } from './actor.js';
import { OpsGateway, RelayState } from './ops.js';
import { PlatformRoutes } from '../management/platform-routes.js';
import type { ActorPool } from './pool.js';
import { OPS_TENANT, PLATFORM_TENANT, type Resolution } from './resolver.js';

const FALLBACK_WARNING_INTERVAL_MS = 60_000;

export interface TenantTarget {
  tenant: string;
  actor: TenantActor;
  /** The request to hand on (without cookies after a subdomain/header conflict). */
  req: HttpRequest;
}

export interface FrontDoorDeps {
  ctx: AppContext;
  pool: ActorPool<TenantActor>;
  cursors: Cursors;
}

export class TenantFrontDoor {
  private readonly ops: OpsGateway;
  private readonly platform: PlatformRoutes;
  private lastFallbackWarning = 0;
  private fallbacksSinceWarning = 0;
  /** Each request is resolved once, whichever of special(), actorFor() and the console asks first. */
  private readonly resolved = new WeakMap<HttpRequest, Resolution>();

  constructor(private readonly deps: FrontDoorDeps) {
    const { ctx } = deps;
    this.ops = new OpsGateway({ resolver: ctx.resolver, registry: ctx.registry, relay: new RelayState(ctx.sealer.derive('ops-relay-state')), oidcPath: ctx.config.oidc.path });
    this.platform = new PlatformRoutes({ ctx, platformActor: () => deps.pool.get(PLATFORM_TENANT), cursors: deps.cursors });
  }

  /** The tenant a request addresses (resolver.ts), computed once per request. */
  resolve(req: HttpRequest): Resolution {
    let resolution = this.resolved.get(req);
    if (!resolution) {
      resolution = this.deps.ctx.resolver.resolve(req);
      this.resolved.set(req, resolution);
    }
    return resolution;
  }

  /**
   * Requests of the special tenants: `_ops` (all of them) and `/platform/*` of `_platforms`.
   * Undefined for everything else, and always in single-tenant mode. Not async: every other
   * request learns that without a promise (issue 17: promises cost async-hook time per request).
   * A refusal (resolution, `/platform` elsewhere) is thrown.
   */
  special(req: HttpRequest): Promise<HttpResponse> | undefined {
    if (!this.deps.ctx.config.multi_tenancy.enabled) return undefined;
    const { tenant } = this.resolve(req);
    if (tenant === OPS_TENANT) return this.ops.handle(req);
    if (req.path === '/platform' || req.path.startsWith('/platform/')) {
      if (tenant !== PLATFORM_TENANT) throw notFound(`The platform routes are served by the ${PLATFORM_TENANT} tenant only`);
      return this.platform.handle(req);
    }
    return undefined;
  }

  /**
   * True when `_ops` answers the request (multi-tenant mode): it answers JSON only (spec 1.5), so
   * the front door must not draw an HTML error page or serve the tenants' stylesheet for it. A
   * request whose tenant cannot be resolved is not `_ops` (its refusal is the resolver's).
   */
  isOps(req: HttpRequest): boolean {
    if (!this.deps.ctx.config.multi_tenancy.enabled) return false;
    try {
      return this.resolve(req).tenant === OPS_TENANT;
    } catch {
      return false;
    }
  }

  /** The actor of the tenant a request addresses; 400 (resolution), 404 (unknown) or 403 (suspended). */
  async actorFor(req: HttpRequest): Promise<TenantTarget> {
    const { ctx, pool } = this.deps;
    const resolution = this.resolve(req);
    const { tenant } = resolution;
    if (resolution.via === 'fallback') this.warnFallback(req);
    // `_ops` is stateless: it never gets an actor (special() answered its requests already).
    if (tenant === OPS_TENANT) throw notFound(`No route for ${req.method} ${req.path} on ${OPS_TENANT}`);
    // The common case answered from the caches without a promise (issue 17): a tenant cached as
    // active passes require() as it stands (same cache read), and a live actor is pool.get()'s hit.
    if (ctx.registry.activeNow(tenant) !== true) await ctx.registry.require(tenant);
    let out = req;
    if (resolution.conflict !== undefined) {
      ctx.log.debug({ req_id: req.id, tenant, header_tenant: resolution.conflict }, 'subdomain overrules the tenant header: cookies dropped');
      out = withoutCookies(req);
    }
    return { tenant, actor: pool.getLive(tenant) ?? (await pool.get(tenant)), req: out };
  }

  /**
   * actorFor without a promise hop, for the common case (issue 17): a tenant the registry's cache
   * knows to be active whose actor is live, resolved without the development fallback and without
   * a subdomain/header conflict. Undefined otherwise: actorFor decides (and answers 404/403).
   */
  liveTarget(req: HttpRequest): TenantTarget | undefined {
    const { ctx, pool } = this.deps;
    const resolution = this.resolve(req);
    const { tenant } = resolution;
    if (resolution.via === 'fallback' || resolution.conflict !== undefined || tenant === OPS_TENANT) return undefined;
    if (!ctx.registry.activeNow(tenant)) return undefined;
    const actor = pool.getLive(tenant);
    return actor ? { tenant, actor, req } : undefined;
  }

  /** Development fallback (spec 1.5 rule 2): a warning, rate-limited so a busy dev box is not flooded. */
  private warnFallback(req: HttpRequest): void {
    this.fallbacksSinceWarning++;
    const now = Date.now();
    if (now - this.lastFallbackWarning < FALLBACK_WARNING_INTERVAL_MS) return;
    this.deps.ctx.log.warn(
      { req_id: req.id, path: req.path, requests: this.fallbacksSinceWarning },
      `no tenant in the ${this.deps.ctx.config.multi_tenancy.tenant_header} header or the host name: falling back to the default tenant (development only; production answers 400)`,
    );
    this.lastFallbackWarning = now;
    this.fallbacksSinceWarning = 0;
  }
}

function withoutCookies(req: HttpRequest): HttpRequest {
  const { cookie: _dropped, ...headers } = req.headers;
  return { ...req, headers };
}
