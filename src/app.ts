/**
 * Composition root: on the shared services (build-context.ts), the actor pool, the routes and the
 * front door. `startApp` is what main.ts and the tests call; the CLI needs only the services.
 *
 * Over 300 lines, on purpose: the composition root is the one place every service is built and
 * wired to the front door; cutting it in parts would spread the order of construction and of
 * shutdown, which matters, over several files.
 */
import { afterAnswerSettled } from './http/after-answer.js';
import { performance } from 'node:perf_hooks';
import { CONSOLE_PATH, StaticConsole } from './admin/static-console.js';
import { ensureBootstrapAdmin, ensureBootstrapClient, ensurePlatformTenant } from './bootstrap.js';
import type { Config } from './config/index.js';
import type { AppContext } from './context.js';
import { channelPattern } from './events/bus.js';
import { RedisEventBus } from './events/redis-bus.js';
import { refusedContentEncoding } from './http/content-encoding.js';
import { OAuthError, ProblemError, internalProblem, notFound, oauthResponse, problemResponse, toProblem } from './http/problem.js';
import { HttpServer, uwsTransport, type RequestHead } from './http/server.js';
import { json, type HttpRequest, type HttpResponse } from './http/types.js';
import { opensslWarning } from './keys/openssl-dispatch.js';
import { opensslStartNote } from './keys/openssl-reexec.js';
import { lifetimeEnv, lifetimesBeyondOverlap, overrunMessage } from './keys/overlap.js';
import { RotationScheduler } from './keys/scheduler.js';
import { buildContext, type ContextOptions } from './build-context.js';
import { accessLogger } from './http/access-log.js';
import { startLine } from './start-line.js';
import { ManagementApi } from './management/api.js';
import { allOperations } from './management/index.js';
import { buildOpenApi } from './management/openapi.js';
import { Cursors } from './management/pagination.js';
import { MemoryRateLimiter } from './management/rate-limit.js';
import { RedisRateLimiter } from './management/rate-limit-redis.js';
import { ExpirySweeper } from './storage/sweeper.js';
import { TenantActor } from './tenancy/actor.js';
import { oidcRouteLabel } from './tenancy/oidc-routes.js';
import { TenantFrontDoor } from './tenancy/front-door.js';
import { ActorPool } from './tenancy/pool.js';
import { routeTenantEvents } from './tenancy/tenant-events.js';
import { clearPairsOf } from './oidc/auth-throttle.js';
import { OPS_TENANT, PLATFORM_TENANT } from './tenancy/resolver.js';
import { metricsAccessCheck } from './metrics/access.js';
import { PROJECT_ROOT } from './paths.js';
import { join } from 'node:path';

import { clientIpResolver } from './http/client-ip.js';
import { GLOBAL_STYLESHEET_PATH, problemPage, wantsErrorPage } from './ui/error-page.js';
import { STYLESHEET, STYLESHEET_ETAG } from './ui/style.js';

export interface App {
  readonly ctx: AppContext;
  readonly pool: ActorPool<TenantActor>;
  readonly server: HttpServer;
  readonly management: ManagementApi;
  readonly port: number;
  /** http://127.0.0.1:<port>, for tests and tools on this machine. */
  readonly localUrl: string;
  close(): Promise<void>;
}

export interface StartOptions extends ContextOptions {
  /** Listen (default) or only build the application (CLI). */
  listen?: boolean;
}

/**
 * The Management API's JSON answers are not to be sniffed as anything else, and its errors are not
 * to be stored by a cache (its 200/201 answers say no-store already; a 401 or 404 said nothing).
 */
function managementHeaders(res: HttpResponse): HttpResponse {
  const type = String(res.headers?.['content-type'] ?? '');
  const problem = type.startsWith('application/problem+json');
  if (!problem && !type.startsWith('application/json')) return res;
  const extra: Record<string, string> = { 'x-content-type-options': 'nosniff' };
  if (problem && res.headers?.['cache-control'] === undefined) extra['cache-control'] = 'no-store';
  return { ...res, headers: { ...res.headers, ...extra } };
}

export async function startApp(config: Config, opts: StartOptions = {}): Promise<App> {
  const started = performance.now();
  const ctx = await buildContext(config, opts);
  const { log, metrics } = ctx;
  // Signed tokens that can outlive their key's overlap window (keys/overlap.ts): said, not refused.
  for (const o of lifetimesBeyondOverlap(config)) {
    log.warn({ setting: lifetimeEnv(o.name), seconds: o.seconds, overlap_window_seconds: o.overlap }, overrunMessage(lifetimeEnv(o.name), o));
  }
  const poolCfg = config.multi_tenancy.provider_pool;

  const pool = new ActorPool<TenantActor>({
    maxSize: poolCfg.max_size,
    idleTtlMs: poolCfg.idle_ttl_ms,
    cleanupIntervalMs: poolCfg.cleanup_interval_ms,
    create: async (tenant) => {
      const stopTimer = metrics.poolCreateDuration.startTimer();
      const actor = await TenantActor.create(ctx, tenant);
      stopTimer();
      return actor;
    },
    onHit: () => metrics.poolHits.inc(),
    onMiss: () => metrics.poolMisses.inc(),
    onEvict: (tenant, reason) => {
      metrics.poolEvictions.inc({ reason });
      log.debug({ tenant, reason }, 'tenant actor evicted');
    },
    onError: (tenant, err) => log.error({ err, tenant }, 'tenant actor failed to close'),
  });
  // Sessions the service ends get their back-channel logouts from the tenant's actor (its keys, its clients).
  ctx.sessionsEnded.handle((tenant, sessions) => {
    pool.get(tenant).then(
      (actor) => actor.logoutEndedSessions(sessions),
      (err: unknown) => log.warn({ err, tenant }, 'back-channel logout of ended sessions not sent: the tenant could not be loaded'),
    );
  });

  // Every tenant's change events, one pattern subscription per kind (tenancy/tenant-events.ts).
  const stopEvents = routeTenantEvents({ events: ctx.events, prefix: config.redis.key_prefix, states: ctx.tenantStates, pool, registry: ctx.registry, clearPairs: clearPairsOf(ctx), log });
  // Events published while this instance's subscriber was away are lost (pub/sub): once it is
  // back, cached tenant state and registry entries are dropped and every live actor re-reads its
  // keys, configuration and clients from storage; the throttle counts every client again.
  if (ctx.events instanceof RedisEventBus) {
    ctx.events.onReconnect(() => {
      ctx.registry.clear();
      ctx.tenantStates.clear();
      clearPairsOf(ctx).reset();
      for (const tenant of pool.tenants()) {
        pool
          .peek(tenant)
          ?.reload()
          .catch((err: unknown) => log.error({ err, tenant }, 'tenant state could not be reloaded after the event bus reconnected'));
      }
    });
  }

  // A suspended or deleted tenant (changed here or announced by another instance) loses its actor.
  // A slug deleted and created again must never see the old tenant's cached keys or clients.
  ctx.registry.onChange((event) => {
    if (event.change !== 'updated') ctx.tenantStates.invalidate(event.tenant);
    if (event.status !== 'active') pool.evict(event.tenant, event.change === 'deleted' ? 'deleted' : 'suspended');
  });

  const cursors = new Cursors(ctx.sealer.derive('cursors'));
  // Resolution, registry check (404 unknown, 403 suspended), `_ops` and `/platform/*`.
  const frontDoor = new TenantFrontDoor({ ctx, pool, cursors });
  const actorFor = (req: HttpRequest) => frontDoor.actorFor(req);

  const management = new ManagementApi(
    { ctx, actorFor, peekActor: (tenant) => pool.peek(tenant), platformActor: () => pool.get(PLATFORM_TENANT), limiter: ctx.redis ? new RedisRateLimiter(config, ctx.redis.client, config.redis.key_prefix) : new MemoryRateLimiter(config), cursors },
    allOperations,
  );

  await ensurePlatformTenant(ctx);
  // The home tenant (`default`, or `_platforms` in multi-tenant mode) is warmed before anything is
  // written under SVC_ENCRYPTION_KEY: its stored keys must decrypt, or start-up stops (a wrong key
  // would otherwise re-hash the bootstrap client's secret under it and serve 500s and 401s). In
  // single-tenant mode the first request also does not pay for key generation, and the discovery
  // document is rendered now: building the provider reads the tenant's resources and custom
  // claims, so one built later could not be served while storage is down.
  await (await pool.get(config.multi_tenancy.enabled ? PLATFORM_TENANT : 'default')).discovery();
  await ensureBootstrapClient(ctx);
  await ensureBootstrapAdmin(ctx);

  const oidcPath = config.oidc.path;
  // Only multi-tenant mode has special tenants (`_ops`, `/platform/*`): single-tenant requests skip that hop.
  const multiTenant = config.multi_tenancy.enabled;
  const metricsPath = config.features.metrics.enabled ? config.features.metrics.path : null;
  const metricsAccess = metricsAccessCheck(config, (req) => ctx.resolver.subdomainOf(req));
  let ready = false;
  let openapiBody: string | undefined;

  async function route(req: HttpRequest): Promise<HttpResponse> {
    // The base stylesheet without a tenant: the error pages of requests no tenant could answer.
    // Not on `_ops`, which serves no page (its 404 is problem+json, below).
    if (req.path === GLOBAL_STYLESHEET_PATH && (req.method === 'GET' || req.method === 'HEAD') && !frontDoor.isOps(req)) {
      return { status: 200, headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=86400', etag: STYLESHEET_ETAG, 'x-content-type-options': 'nosniff' }, body: STYLESHEET };
    }
    // Any other body coding is refused before parsing (http/content-encoding.ts).
    const coding = refusedContentEncoding(req);
    if (coding !== undefined) {
      const detail = `Request bodies with Content-Encoding ${coding} are not accepted; send them uncoded`;
      if (req.path === oidcPath || req.path.startsWith(`${oidcPath}/`)) throw new OAuthError(415, 'invalid_request', detail);
      throw new ProblemError(415, 'unsupported-media-type', detail);
    }
    if ((req.path === '/healthz' || req.path === '/readyz') && req.method !== 'GET' && req.method !== 'HEAD') {
      throw new ProblemError(405, 'method-not-allowed', `${req.method} is not allowed on ${req.path}`, { headers: { allow: 'GET, HEAD' } });
    }
    if (req.path === '/healthz') return json(200, { status: 'ok' }, { 'cache-control': 'no-store' });
    if (req.path === '/readyz') {
      const checks: Record<string, string> = {};
      try {
        await ctx.storage.ping();
        checks.database = 'ok';
      } catch {
        checks.database = 'unavailable';
      }
      if (ctx.redis) {
        try {
          await ctx.redis.ping();
          checks.redis = 'ok';
        } catch {
          checks.redis = 'unavailable';
        }
      }
      const ok = ready && server.accepting && Object.values(checks).every((c) => c === 'ok');
      return json(ok ? 200 : 503, { status: ok ? 'ready' : 'not_ready', checks }, { 'cache-control': 'no-store' });
    }
    if (metricsPath && req.path === metricsPath) {
      const access = metricsAccess(req);
      if (access === 'unauthorized') throw new ProblemError(401, 'unauthorized', 'Metrics need the configured bearer token', { headers: { 'www-authenticate': 'Bearer' } });
      if (access === 'not-found') throw notFound(`No route for ${req.method} ${req.path}`);
      // A scrape reads: a POST or DELETE gets the probes' 405, not the scrape.
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        throw new ProblemError(405, 'method-not-allowed', `${req.method} is not allowed on ${req.path}`, { headers: { allow: 'GET, HEAD' } });
      }
      metrics.poolSize.set(pool.size);
      return { status: 200, headers: { 'content-type': metrics.registry.contentType }, body: await metrics.registry.metrics() };
    }
    if (req.path === '/api/v1/openapi.json' && (req.method === 'GET' || req.method === 'HEAD')) {
      openapiBody ??= JSON.stringify(buildOpenApi(allOperations, config));
      return { status: 200, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'public, max-age=300', 'access-control-allow-origin': '*' }, body: openapiBody };
    }
    // Multi-tenant mode: `_ops` and `/platform/*` (everything above needs no tenant).
    const special = frontDoor.special(req);
    if (special) return special;
    if (req.path === oidcPath || req.path.startsWith(`${oidcPath}/`)) {
      const target = frontDoor.liveTarget(req) ?? (await actorFor(req));
      return target.actor.handleOidc(target.req);
    }
    if (req.path.startsWith('/api/v1/')) return management.handle(req);
    // The tenant's self-service pages (password reset, e-mail verification, the account page).
    if (req.path === '/account' || req.path.startsWith('/account/')) {
      const target = await actorFor(req);
      return target.actor.handleAccount(target.req);
    }
    // The administration console (issue 16): static files on the tenant's origin.
    if (req.path === CONSOLE_PATH || req.path.startsWith(`${CONSOLE_PATH}/`)) return serveConsole(req);
    throw notFound(`No route for ${req.method} ${req.path}`);
  }

  const adminConsole = new StaticConsole(join(PROJECT_ROOT, 'dist', 'admin'));
  async function serveConsole(req: HttpRequest): Promise<HttpResponse> {
    const { tenant } = frontDoor.resolve(req);
    if (tenant === OPS_TENANT) throw notFound(`No route for ${req.method} ${req.path} on ${OPS_TENANT}`);
    await ctx.registry.require(tenant);
    return adminConsole.handle(req, { tenant, issuer: ctx.resolver.issuerOf(tenant), platform: multiTenant && tenant === PLATFORM_TENANT, multiTenant });
  }

  /** Route labels of the /account pages (anything else folds into one label). */
  const ACCOUNT_ROUTE_LABELS = new Set(['/account', '/account/callback', '/account/password/forgot', '/account/password/reset', '/account/verify']);
  function routeLabel(req: Pick<HttpRequest, 'method' | 'path'>): string {
    if (req.path.startsWith(oidcPath)) return oidcRouteLabel(req.path.slice(oidcPath.length));
    if (req.path.startsWith('/api/v1/')) {
      const m = management.router.match(req.method, req.path);
      return m && m !== 'method' ? m.pattern : 'api:unmatched';
    }
    if (req.path.startsWith('/platform/')) return 'platform';
    if (req.path === '/account' || req.path.startsWith('/account/')) return ACCOUNT_ROUTE_LABELS.has(req.path) ? req.path : 'account:other';
    if (req.path === CONSOLE_PATH || req.path.startsWith(`${CONSOLE_PATH}/`)) return req.path.startsWith(`${CONSOLE_PATH}/assets/`) ? 'admin/assets' : 'admin';
    return req.path === '/healthz' || req.path === '/readyz' || req.path === metricsPath ? req.path : 'other';
  }

  // Each series bound once (metrics/request-series.ts): a request adds to plain numbers. Found by
  // route label, then method and status, each a map of its own: a key string joined per request
  // (and hashed afresh each time) was half of this function's cost on the JWKS path (issue 17).
  type Series = { request: () => void; duration: (seconds: number) => void };
  const series = new Map<string, Map<string, Map<number, Series>>>();
  // Issue 17: at most one line per request, and only when security.logging.access_log asks for it.
  const accessLine = accessLogger(config, log, {
    quietPaths: ['/healthz', '/readyz', '/favicon.ico', GLOBAL_STYLESHEET_PATH, ...(metricsPath ? [metricsPath] : [])],
    // The tenant's own copies under the OIDC path (sign-in stylesheet, passkey script) are static assets too.
    assetPrefixes: ['/assets/', `${CONSOLE_PATH}/assets/`, `${oidcPath}/assets/`],
  });
  function record(req: Pick<HttpRequest, 'id' | 'method' | 'path'>, label: string, res: HttpResponse, t0: number, ip: () => string, reason?: string): void {
    const seconds = (performance.now() - t0) / 1000;
    let byMethod = series.get(label);
    if (!byMethod) series.set(label, (byMethod = new Map()));
    let byStatus = byMethod.get(req.method);
    if (!byStatus) byMethod.set(req.method, (byStatus = new Map()));
    let s = byStatus.get(res.status);
    if (!s) {
      s = { request: metrics.httpRequests.series({ route: label, method: req.method, status: String(res.status) }), duration: metrics.httpDuration.bind({ route: label, method: req.method }) };
      byStatus.set(res.status, s);
    }
    s.request();
    s.duration(seconds);
    accessLine?.({ req_id: req.id, method: req.method, path: req.path, status: res.status, ms: Math.round(seconds * 10000) / 10, ip, reason });
  }

  /** The front door's synchronous path: a live tenant's JWKS or rendered discovery document. */
  // Each with its route label, found once here instead of per request.
  const publicPaths = new Map([`${oidcPath}/jwks`, `${oidcPath}/.well-known/openid-configuration`].map((path) => [path, routeLabel({ method: 'GET', path })]));
  function fast(head: RequestHead): HttpResponse | undefined {
    const label = head.method === 'GET' || head.method === 'HEAD' ? publicPaths.get(head.path) : undefined;
    if (label === undefined) return undefined;
    const t0 = performance.now();
    let tenant: string;
    try {
      const resolution = ctx.resolver.resolve(head);
      // The fallback warning, `_ops` and everything uncached take the full path.
      if (resolution.via === 'fallback' || resolution.tenant === OPS_TENANT) return undefined;
      tenant = resolution.tenant;
    } catch {
      return undefined;
    }
    if (!ctx.registry.activeNow(tenant)) return undefined;
    const res = pool.getLive(tenant)?.publicDocumentNow(head);
    if (res) record(head, label, res, t0, head.ip);
    return res;
  }

  /** The one place errors become responses. */
  function errorResponse(err: unknown, req: HttpRequest): HttpResponse {
    const problem = toProblem(err);
    // A person navigating to a page gets a page (ui/error-page.ts); API clients get problem+json.
    // `_ops` answers JSON only (spec 1.5), a browser's Accept notwithstanding: it has no pages.
    const asPage = problem !== undefined && wantsErrorPage(req, oidcPath) && !frontDoor.isOps(req);
    if (problem && problem.status < 500 && asPage) return problemPage(req, problem.status, problem.code);
    if (problem && problem.status === 503 && asPage) {
      const page = problemPage(req, 503, 'unavailable');
      return { ...page, headers: { ...page.headers, ...(problem.extra.headers ?? {}) } };
    }
    if (problem) return problemResponse(problem, req.path, req.id);
    if (err instanceof OAuthError) return oauthResponse(err);
    log.error({ err, req_id: req.id, method: req.method, path: req.path }, 'request failed');
    return internalProblem(req.path, req.id);
  }

  async function handle(req: HttpRequest): Promise<HttpResponse> {
    const t0 = performance.now();
    let res: HttpResponse;
    let reason: string | undefined;
    try {
      res = await route(req);
    } catch (err) {
      res = errorResponse(err, req);
      // The reason rides on the request's access line (one line per request); a refusal is not
      // worth a line of its own at info: a scanner or a browser's favicon would write one each.
      if (res.status < 500) reason = toProblem(err)?.detail ?? (err instanceof OAuthError ? err.description : undefined);
      if (reason !== undefined && log.isLevelEnabled('debug')) log.debug({ req_id: req.id, status: res.status, reason }, 'request refused');
    }
    if (req.path.startsWith('/api/v1/')) res = managementHeaders(res);
    record(req, routeLabel(req), res, t0, () => req.ip, reason);
    return res;
  }

  const server = new HttpServer({
    host: config.host,
    port: config.port,
    reusePort: config.http.reuse_port,
    log,
    handle,
    clientIp: clientIpResolver(config.http.trusted_proxies),
    fast,
    onTooLarge: (req) => {
      const err = new ProblemError(413, 'payload-too-large', 'Request bodies are limited to 1 MiB');
      log.info({ req_id: req.id, path: req.path, status: 413 }, 'request refused: body too large');
      if (req.path.startsWith(oidcPath)) return oauthResponse(new OAuthError(413, 'invalid_request', 'request body too large'));
      const res = problemResponse(err, req.path, req.id);
      return req.path.startsWith('/api/v1/') ? managementHeaders(res) : res;
    },
  });

  /** Everything below the front door, in the order close() releases it. */
  async function release(): Promise<void> {
    await pool.close();
    // Work after the last answers (its audit entries and mail), then the audit entries of the last
    // requests (some are written after their answer went out).
    await afterAnswerSettled();
    await ctx.audit.drain();
    await ctx.usage.close();
    stopEvents();
    await ctx.events.close();
    await ctx.mailer.close();
    await ctx.passwords.close();
    await ctx.storage.close();
    await ctx.redis?.close();
  }

  let port = 0;
  if (opts.listen !== false) {
    try {
      port = await server.listen();
    } catch (err) {
      // The caller gets the error and no app: leave no worker, connection or timer behind (a test
      // that retries on another port, an embedding that reports and goes on). The listen error is
      // the one the caller needs, so a failure while releasing is only logged.
      await server.close();
      await release().catch((closeErr: unknown) => log.warn({ err: closeErr }, 'releasing after a failed listen failed'));
      throw err;
    }
    log.info(startLine(config, { port, transport: uwsTransport(), storage: ctx.storage.kind, redis: ctx.redis !== undefined, issuerOf: (t) => ctx.resolver.issuerOf(t), startupMs: Math.round(performance.now() - started), openssl: opensslStartNote() }), 'listening');
    const opensslProblem = opensslWarning();
    if (opensslProblem) log.warn({ setting: 'OPENSSL_ia32cap' }, opensslProblem);
  }
  ready = true;
  const keyScheduler = new RotationScheduler(ctx, () => pool.tenants());
  keyScheduler.start();
  // A rotation between checks, on any instance, brings the next check forward to its window's end.
  const stopKeyEvents = ctx.events.subscribePattern(channelPattern(config.redis.key_prefix, 'jwks:rotated'), (_channel, payload) => {
    const tenant = (payload as { tenant?: unknown } | null)?.tenant;
    if (typeof tenant !== 'string') return;
    keyScheduler.keysChanged(tenant).catch((err: unknown) => log.warn({ err, tenant }, 'the next key check could not be brought forward'));
  });
  // Expired rows in SQL are hidden at once but take space until swept. Redis expires its own OIDC
  // artefacts; account tokens are always in SQL, so the sweeper always runs.
  const sweeper = new ExpirySweeper(ctx.redis ? undefined : ctx.storage.oidc, log, undefined, ctx.storage.accountTokens);
  sweeper.start();

  let closing: Promise<void> | undefined;
  return {
    ctx,
    pool,
    server,
    management,
    port,
    localUrl: `http://127.0.0.1:${port}`,
    close() {
      closing ??= (async () => {
        ready = false;
        stopKeyEvents();
        await keyScheduler.stop();
        await sweeper.stop();
        await server.close();
        await release();
        log.info('stopped');
        log.flush?.();
      })();
      return closing;
    },
  };
}

