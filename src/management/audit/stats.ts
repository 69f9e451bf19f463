/**
 * Dashboard overview and health (spec 4.7). Each overview section and each health check is
 * computed on its own, under a time limit: one failing or hanging dependency shows up as that
 * section's `error` (or that check's `unhealthy`) while the rest still answer.
 */
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import type { TenantHandle } from '../../tenancy/handle.js';
import type { EffectiveConfig } from '../../tenancy/config/merge.js';
import { op, type Operation } from '../operation.js';
import { sendJson } from '../respond.js';
import { countGrants, findSessions, sessionTtl } from '../../sessions/store.js';

const SECTION_TIMEOUT_MS = 5_000;
const CHECK_TIMEOUT_MS = 2_000;

export type CheckStatus = 'healthy' | 'unhealthy' | 'unknown';

/** Midnight UTC of the current day, the start of `todayCount`. */
export function utcDayStart(now = new Date()): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())).toISOString();
}

function withTimeout<T>(work: () => Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  // The async wrapper turns a synchronous throw into a rejection too.
  return Promise.race([(async () => work())(), timeout]).finally(() => clearTimeout(timer));
}

type Sections = Record<string, () => Promise<Record<string, unknown>>>;

/**
 * Runs every section; a failed one becomes `{error}`. The message is generic on purpose: the
 * underlying error may carry SQL or internals (CONTRACT.md); the log has the detail.
 */
async function computeSections(ctx: AppContext, tenant: string, reqId: string, sections: Sections): Promise<Record<string, unknown>> {
  const names = Object.keys(sections);
  const results = await Promise.allSettled(names.map((name) => withTimeout(sections[name]!, SECTION_TIMEOUT_MS)));
  const out: Record<string, unknown> = {};
  results.forEach((r, i) => {
    const name = names[i]!;
    if (r.status === 'fulfilled') out[name] = r.value;
    else {
      ctx.log.warn({ err: r.reason, tenant, req_id: reqId, section: name }, 'statistics section failed');
      out[name] = { error: `${name} statistics are unavailable` };
    }
  });
  return out;
}

function overviewSections(ctx: AppContext, tenant: string, config: EffectiveConfig): Sections {
  const { storage } = ctx;
  return {
    users: async () => ({ total: await storage.users.count(tenant) }),
    clients: async () => ({ total: await storage.clients.count(tenant) }),
    // Same source and rules as GET /api/v1/sessions, so the totals equal its total_count.
    sessions: async () => {
      const sessions = await findSessions(storage.oidc, tenant, {}, sessionTtl(config));
      return { total: sessions.length, active: sessions.filter((s) => s.active).length };
    },
    grants: async () => ({ total: await countGrants(storage.oidc, tenant) }),
    activity: async () => ({ ...(await storage.audit.stats(tenant, utcDayStart())) }),
  };
}

async function check(run: () => Promise<CheckStatus>): Promise<{ status: CheckStatus }> {
  try {
    return { status: await withTimeout(run, CHECK_TIMEOUT_MS) };
  } catch {
    return { status: 'unhealthy' };
  }
}

/** Health of what this tenant's requests depend on. */
export async function healthChecks(ctx: AppContext, actor: TenantHandle) {
  const [database, oidc, config, redis] = await Promise.all([
    check(async () => {
      await ctx.storage.ping();
      return 'healthy';
    }),
    // The provider can sign with every configured algorithm and publishes a key set.
    check(async () => {
      const algs = ctx.config.security.key_store.algorithms;
      return algs.every((alg) => actor.keys.signing.has(alg)) && actor.keys.verifying.size > 0 ? 'healthy' : 'unhealthy';
    }),
    // Configuration is validated once at start and immutable afterwards: if we run, it is valid.
    check(async () => (ctx.config.security.key_store.algorithms.length ? 'healthy' : 'unhealthy')),
    // Only with REDIS_URL: the command connection and both event-bus connections answer.
    ctx.redis ? check(async () => (await ctx.redis!.ping(), 'healthy')) : undefined,
  ]);
  const checks = { database, oidc, config, ...(redis ? { redis } : {}) };
  const statuses = Object.values(checks).map((c) => c.status);
  const status = statuses.includes('unhealthy') ? 'degraded' : statuses.every((s) => s === 'healthy') ? 'healthy' : 'unknown';
  return { status, checks, timestamp: new Date().toISOString() };
}

/** A section is its figures, or `{error}` when it could not be computed. */
const section = <T extends z.ZodRawShape>(shape: T) => z.union([z.object(shape), z.object({ error: z.string() })]);
const overviewResponse = z.object({
  data: z.object({
    users: section({ total: z.number() }),
    clients: section({ total: z.number() }),
    sessions: section({ total: z.number(), active: z.number() }),
    grants: section({ total: z.number() }),
    activity: section({ totalActivities: z.number(), uniqueUsers: z.number(), todayCount: z.number(), successfulLogins: z.number(), failedLogins: z.number() }),
  }),
});
const checkStatus = z.object({ status: z.enum(['healthy', 'unhealthy', 'unknown']) });
const healthResponse = z.object({
  data: z.object({
    status: z.enum(['healthy', 'degraded', 'unknown']),
    checks: z.object({ database: checkStatus, oidc: checkStatus, config: checkStatus, redis: checkStatus.optional() }),
    timestamp: z.string(),
  }),
});

export const statsOperations: Operation[] = [
  op({
    method: 'GET', path: '/api/v1/stats', scope: 'svc:stats:read', rateClass: 'read', tag: 'stats', summary: 'Dashboard overview; a failing section carries {error} while the others answer',
    success: { status: 200, schema: overviewResponse },
    handler: async (call) => {
      const data = await computeSections(call.ctx, call.tenant, call.req.id, overviewSections(call.ctx, call.tenant, call.actor.config));
      return sendJson(200, JSON.stringify({ data }));
    },
  }),
  op({
    method: 'GET', path: '/api/v1/stats/health', scope: 'svc:stats:read', rateClass: 'read', rateLimitFailOpen: true, tag: 'stats', summary: 'Health checks; 503 when any check is unhealthy',
    success: { status: 200, schema: healthResponse, description: 'Healthy (the same body with 503 when degraded)' },
    errors: [503],
    handler: async (call) => {
      const data = await healthChecks(call.ctx, call.actor);
      return sendJson(data.status === 'degraded' ? 503 : 200, JSON.stringify({ data }));
    },
  }),
];
