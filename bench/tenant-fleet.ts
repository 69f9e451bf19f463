/**
 * What the multi-tenant benches share (`npm run bench:tenants`, multitenant-load.ts, and
 * `npm run bench:capacity`, capacity.ts): a fresh PostgreSQL database and a Redis key prefix per
 * run, the product's multi-tenant environment, a keep-alive HTTP client for one-off calls, Zipf
 * sampling over the tenants, a client-side mirror of the actor pool's LRU, and readings from the
 * product's /metrics (pool counters, the actor-creation histogram).
 *
 * PostgreSQL at 127.0.0.1:5432 as `postgres` (trust auth; BENCH_PG_SERVER to change), Redis at
 * redis://127.0.0.1:6379 (BENCH_REDIS_URL), as the test suite uses them.
 */
import { Agent } from 'node:http';
import pg from 'pg';
import { claimsOf, stringField, tenantRequest, type TenantRequest, type TenantResponse } from './http.js';
import type { FedRequest, RequestFeed, RequestSpec } from './load.js';
import { HOST } from './processes.js';
import { DEFAULT_PG_SERVER, DEFAULT_REDIS_URL, onPgServer, uniqueRedisPrefix } from './services.js';

export { HOST } from './processes.js';
export { claimsOf, stringField } from './http.js';

export const PG_SERVER = process.env.BENCH_PG_SERVER ?? DEFAULT_PG_SERVER;
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? DEFAULT_REDIS_URL;
/** The Management API resource indicator: client_credentials tokens for it are JWTs. */
export const FLEET_RESOURCE = 'urn:svc:api:v1';
/** A scope any tenant's client may be allowed (the Management API's read-only stats). */
export const FLEET_SCOPE = 'svc:stats:read';
export const TOKEN_PATH = '/oidc/v1/token';
/** The client_credentials form every fleet request posts. */
export const FLEET_TOKEN_FORM: Readonly<Record<string, string>> = { grant_type: 'client_credentials', resource: FLEET_RESOURCE, scope: FLEET_SCOPE };

// ---------------------------------------------------------------------------------------------
// One-off HTTP calls (setup, checks, /metrics): bench/http.ts tenantRequest over a keep-alive agent.

export type Res = TenantResponse;

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

/** Closes the kept-alive sockets (between two servers on a reused port, and at the end so the process can exit); the agent stays usable. */
export function closeHttpAgent(): void {
  agent.destroy();
}

export function send(port: number, method: string, path: string, o: Omit<TenantRequest, 'agent' | 'timeoutMs'> = {}): Promise<Res> {
  return tenantRequest(port, method, path, { ...o, agent, timeoutMs: 30_000 });
}

/** Issuer of tenant `slug` on a product started with the default BASE_URL (http://localhost:<port>). */
export const tenantIssuer = (slug: string, port: number) => `http://${slug}.localhost:${port}/oidc/v1`;

// ---------------------------------------------------------------------------------------------
// Traffic shape.

/** Zipf(s) over ranks 0..n-1 (rank 0 the most frequent): a cumulative table and binary search. */
export function zipf(n: number, s: number): () => number {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 1; k <= n; k++) cdf[k - 1] = sum += 1 / k ** s;
  for (let k = 0; k < n; k++) cdf[k]! /= sum;
  return () => {
    const u = Math.random();
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

/** Share of the requests that go to the `top` most frequent of n tenants under Zipf(s). */
export function zipfTopShare(n: number, s: number, top: number): number {
  let all = 0;
  let head = 0;
  for (let k = 1; k <= n; k++) {
    const w = 1 / k ** s;
    all += w;
    if (k <= top) head += w;
  }
  return head / all;
}

/** A random permutation of 0..n-1 (Fisher-Yates), so the hot tenants are not the first created. */
export function shuffledOrder(n: number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

/**
 * The client's mirror of the server's actor pool: the `size` tenants most recently requested.
 * `touch` answers whether the tenant was outside them ("cold" from the client's point of view);
 * with one load generator the two agree up to in-flight reordering (idle TTL not modelled).
 */
export class RecentTenants {
  private readonly recent = new Map<number, true>();

  constructor(private readonly size: number) {}

  touch(tenant: number): boolean {
    const cold = !this.recent.has(tenant);
    this.recent.delete(tenant);
    this.recent.set(tenant, true);
    if (this.recent.size > this.size) this.recent.delete(this.recent.keys().next().value!);
    return cold;
  }
}


// ---------------------------------------------------------------------------------------------
// The product's /metrics.

/** Value of one sample line (`name{labels} value`); 0 when absent. */
export function metric(text: string, name: string): number {
  const re = new RegExp(`^${name.replace(/[{}"+.]/g, (c) => `\\${c}`)} (\\S+)$`, 'm');
  return Number(re.exec(text)?.[1] ?? 0);
}

export const EVICTION_REASONS = ['lru', 'idle', 'suspended', 'deleted', 'shutdown'] as const;

export interface PoolCounters {
  size: number;
  hits: number;
  misses: number;
  evictions: Record<string, number>;
}

export function poolCountersOf(text: string): PoolCounters {
  const evictions: Record<string, number> = {};
  for (const reason of EVICTION_REASONS) evictions[reason] = metric(text, `svc_tenant_pool_evictions_total{reason="${reason}"}`);
  return { size: metric(text, 'svc_tenant_pool_size'), hits: metric(text, 'svc_tenant_pool_hits_total'), misses: metric(text, 'svc_tenant_pool_misses_total'), evictions };
}

/**
 * GET /metrics on the `_ops` host: a multi-tenant product outside development serves its metrics
 * only there (src/metrics/access.ts); in development any host would do.
 */
export async function scrapeMetrics(port: number): Promise<string> {
  const r = await send(port, 'GET', '/metrics', { sub: '_ops' });
  if (r.status !== 200) throw new Error(`GET /metrics: HTTP ${r.status}`);
  return r.text;
}

export async function poolCounters(port: number): Promise<PoolCounters> {
  return poolCountersOf(await scrapeMetrics(port));
}

/** The counters' change between two scrapes (evictions: only the reasons that moved). */
export function poolDelta(before: PoolCounters, after: PoolCounters): { hits: number; misses: number; evictions: Record<string, number>; sizeAtEnd: number } {
  const evictions: Record<string, number> = {};
  for (const [k, v] of Object.entries(after.evictions)) {
    const d = v - (before.evictions[k] ?? 0);
    if (d > 0) evictions[k] = d;
  }
  return { hits: after.hits - before.hits, misses: after.misses - before.misses, evictions, sizeAtEnd: after.size };
}

/** Cumulative bucket counts of a prom-client histogram (le in seconds, +Inf last), and its count. */
export interface HistogramSnapshot {
  buckets: Array<{ le: number; count: number }>;
  count: number;
  sum: number;
}

export function histogramOf(text: string, name: string): HistogramSnapshot {
  const buckets: Array<{ le: number; count: number }> = [];
  const re = new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)$`, 'gm');
  for (let m = re.exec(text); m; m = re.exec(text)) buckets.push({ le: m[1] === '+Inf' ? Infinity : Number(m[1]), count: Number(m[2]) });
  buckets.sort((a, b) => a.le - b.le);
  return { buckets, count: metric(text, `${name}_count`), sum: metric(text, `${name}_sum`) };
}

/** What was observed between two scrapes. */
export function histogramDelta(before: HistogramSnapshot, after: HistogramSnapshot): HistogramSnapshot {
  return {
    buckets: after.buckets.map((b) => ({ le: b.le, count: b.count - (before.buckets.find((x) => x.le === b.le)?.count ?? 0) })),
    count: after.count - before.count,
    sum: after.sum - before.sum,
  };
}

/**
 * Quantile q (0..1) of a histogram in milliseconds, interpolated linearly inside its bucket (the
 * Prometheus histogram_quantile estimate). null when nothing was observed; when it falls in the
 * +Inf bucket, the highest finite bound with `over: true`.
 */
export function histogramQuantileMs(h: HistogramSnapshot, q: number): { ms: number; over: boolean; firstBucketMs?: number } | null {
  if (h.count <= 0 || !h.buckets.length) return null;
  const rank = q * h.count;
  let lower = 0;
  let below = 0;
  for (const [i, b] of h.buckets.entries()) {
    if (b.count >= rank && b.count > below) {
      if (b.le === Infinity) return { ms: lower * 1000, over: true };
      const within = (rank - below) / (b.count - below);
      const ms = (lower + (b.le - lower) * Math.max(0, Math.min(1, within))) * 1000;
      // In the first bucket the estimate says no more than "below its bound".
      return i === 0 ? { ms, over: false, firstBucketMs: b.le * 1000 } : { ms, over: false };
    }
    if (b.le !== Infinity) lower = b.le;
    below = b.count;
  }
  return { ms: lower * 1000, over: true };
}

// ---------------------------------------------------------------------------------------------
// Storage for a run: one PostgreSQL database (bench/services.ts) and one Redis key prefix.

/** A Redis key prefix of the run's own. */
export const newRedisPrefix = (label: string) => uniqueRedisPrefix(`svcbench-${label}`);

// ---------------------------------------------------------------------------------------------
// The product in multi-tenant mode.

export interface FleetProductSettings {
  port: number;
  nodeEnv: 'development' | 'production';
  databaseUrl: string;
  redisPrefix: string;
  encryptionKey: string;
  poolMaxSize: number;
  idleTtlMs?: number;
  cleanupIntervalMs?: number;
  bootstrap?: { client_id: string; client_secret: string };
}

/** The product's environment for a multi-tenant run on PostgreSQL + Redis, warn-level JSON logs on stdout. */
export function multiTenantEnv(s: FleetProductSettings): Record<string, string> {
  const env: Record<string, string> = {
    NODE_ENV: s.nodeEnv,
    HOST,
    PORT: String(s.port),
    MULTI_TENANCY_ENABLED: 'true',
    MULTI_TENANCY_PROVIDER_POOL_MAX_SIZE: String(s.poolMaxSize),
    STORAGE_ADAPTER: 'postgresql',
    STORAGE_POSTGRESQL_URL: s.databaseUrl,
    REDIS_URL,
    REDIS_KEY_PREFIX: s.redisPrefix,
    FEATURES_METRICS_ENABLED: 'true',
    SVC_ENCRYPTION_KEY: s.encryptionKey,
    SECURITY_LOGGING_LEVEL: 'warn',
    SECURITY_LOGGING_PRETTY_PRINT: 'false',
    SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false',
  };
  if (s.idleTtlMs !== undefined) env.MULTI_TENANCY_PROVIDER_POOL_IDLE_TTL_MS = String(s.idleTtlMs);
  if (s.cleanupIntervalMs !== undefined) env.MULTI_TENANCY_PROVIDER_POOL_CLEANUP_INTERVAL_MS = String(s.cleanupIntervalMs);
  if (s.bootstrap) {
    env.SVC_BOOTSTRAP_CLIENT_ID = s.bootstrap.client_id;
    env.SVC_BOOTSTRAP_CLIENT_SECRET = s.bootstrap.client_secret;
  }
  return env;
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL's share: the CPU of the server backends connected to the run's database.

/** Pids of the PostgreSQL backends connected to `database` (the product's pool connections). */
export async function backendPids(database: string): Promise<number[]> {
  return onPgServer(PG_SERVER, async (c) => {
    const { rows } = await c.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
    return rows.map((r) => Number(r.pid));
  });
}

/** CPU (µs) of each pid that can still be read. */
export function cpuOfPids(pids: readonly number[], read: (pid: number) => number): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of pids) {
    try {
      out.set(pid, read(pid));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** Transactions and rows written so far in `database` (pg_stat_database; flushed by backends within ~1 s). */
export async function databaseActivity(database: string): Promise<{ xacts: number; inserted: number; updated: number; fetched: number }> {
  return onPgServer(PG_SERVER, async (c) => {
    const { rows } = await c.query<{ xacts: string; inserted: string; updated: string; fetched: string }>(
      'SELECT xact_commit + xact_rollback AS xacts, tup_inserted AS inserted, tup_updated AS updated, tup_fetched AS fetched FROM pg_stat_database WHERE datname = $1',
      [database],
    );
    const r = rows[0];
    return { xacts: Number(r?.xacts ?? 0), inserted: Number(r?.inserted ?? 0), updated: Number(r?.updated ?? 0), fetched: Number(r?.fetched ?? 0) };
  });
}

export interface TableActivity {
  /** Sequential + index scans started. */
  scans: number;
  inserted: number;
  updated: number;
  deleted: number;
}

/** pg_stat_user_tables of the database at `url`: which tables the product reads and writes. */
export async function tableActivity(url: string): Promise<Record<string, TableActivity>> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query<{ name: string; scans: string; inserted: string; updated: string; deleted: string }>(
      'SELECT relname AS name, coalesce(seq_scan, 0) + coalesce(idx_scan, 0) AS scans, n_tup_ins AS inserted, n_tup_upd AS updated, n_tup_del AS deleted FROM pg_stat_user_tables',
    );
    return Object.fromEntries(rows.map((r) => [r.name, { scans: Number(r.scans), inserted: Number(r.inserted), updated: Number(r.updated), deleted: Number(r.deleted) }]));
  } finally {
    await c.end();
  }
}

/** after - before per table, per `per` (e.g. requests), only tables that moved. */
export function tableDelta(before: Record<string, TableActivity>, after: Record<string, TableActivity>, per: number): Record<string, TableActivity> {
  const out: Record<string, TableActivity> = {};
  const r = (n: number) => Math.round((n / Math.max(1, per)) * 1000) / 1000;
  for (const [name, a] of Object.entries(after)) {
    const b = before[name] ?? { scans: 0, inserted: 0, updated: 0, deleted: 0 };
    const d = { scans: r(a.scans - b.scans), inserted: r(a.inserted - b.inserted), updated: r(a.updated - b.updated), deleted: r(a.deleted - b.deleted) };
    if (d.scans || d.inserted || d.updated || d.deleted) out[name] = d;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The traffic: client_credentials token requests over the fleet, for the load driver (load.ts).

/** A seeded tenant (seed.ts): its slug, its client and that client's Basic header. */
export interface FleetTenant {
  slug: string;
  clientId: string;
  /** The whole Authorization header (client_secret_basic). */
  authorization: string;
}

/** What is wrong with a token answer of `tenant` (iss must be its issuer, client_id its client), or undefined. */
export function checkTokenAnswer(body: string, tenant: FleetTenant, port: number): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return `not JSON: ${body.slice(0, 120)}`;
  }
  const token = stringField(parsed, 'access_token');
  if (!token) return `no access_token: ${body.slice(0, 120)}`;
  const claims = claimsOf(token);
  const issuer = tenantIssuer(tenant.slug, port);
  if (claims.iss !== issuer) return `tenant ${tenant.slug}: iss ${String(claims.iss)}, expected ${issuer}`;
  if (claims.client_id !== tenant.clientId) return `tenant ${tenant.slug}: client_id ${String(claims.client_id)}, expected ${tenant.clientId}`;
  return undefined;
}

export interface FleetTrafficOptions {
  port: number;
  tenants: readonly FleetTenant[];
  /** The index (into tenants) of the next request's tenant. */
  pick: () => number;
  /** Client-side LRU mirror: an answer for a tenant outside it is tagged 'cold'. */
  recent: RecentTenants;
  /** Decode and check one 200 answer in this many (1 = every answer). */
  checkEvery: number;
  /** How the tenant is named: the x-tenant-id header, or header and subdomain (Host) alternately. */
  addressing: 'header' | 'alternate';
}

/**
 * client_credentials requests whose tenant changes per request (setupRequest), as a feed of the
 * load driver: answers of tenants the client-side LRU mirror had not seen recently are tagged
 * 'cold', one answer in `checkEvery` is checked, and per tenant the answers are counted.
 */
export class FleetTraffic implements RequestFeed {
  /** Checked answers, wrong ones among them, and the first few problems. */
  checked = 0;
  wrong = 0;
  readonly wrongExamples: string[] = [];
  /** Answers other than 200, by status and error code ("400 invalid_client"). */
  readonly failuresByKind: Record<string, number> = {};
  /** Answers per tenant (index into tenants). */
  perTenant: Uint32Array;
  private answered = 0;
  private seq = 0;

  constructor(private readonly o: FleetTrafficOptions) {
    this.perTenant = new Uint32Array(o.tenants.length);
  }

  /** The request every iteration starts from (load.ts RequestSpec). */
  spec(): RequestSpec {
    return {
      method: 'POST',
      path: TOKEN_PATH,
      headers: { host: `localhost:${this.o.port}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(FLEET_TOKEN_FORM).toString(),
      okStatus: 200,
      feed: this,
      check: (res) => (res.status === 200 ? undefined : `HTTP ${res.status}`),
    };
  }

  /** Starts counting afresh (the measured window after a warm-up). */
  reset(): void {
    this.checked = this.wrong = this.answered = 0;
    this.wrongExamples.length = 0;
    for (const k of Object.keys(this.failuresByKind)) delete this.failuresByKind[k];
    this.perTenant = new Uint32Array(this.o.tenants.length);
  }

  prepare(): Promise<void> {
    return Promise.resolve();
  }

  next(context: Record<string, unknown> = {}): FedRequest {
    const index = this.o.pick();
    const t = this.o.tenants[index]!;
    context.tenant = index;
    context.cold = this.o.recent.touch(index);
    const bySub = this.o.addressing === 'alternate' && this.seq++ % 2 === 1;
    return { headers: bySub ? { host: `${t.slug}.localhost:${this.o.port}`, authorization: t.authorization } : { 'x-tenant-id': t.slug, authorization: t.authorization } };
  }

  onResponse(status: number, body: string, context: Record<string, unknown> = {}): string | undefined {
    const index = typeof context.tenant === 'number' ? context.tenant : -1;
    if (status !== 200) {
      let code: string | undefined;
      try {
        code = stringField(JSON.parse(body), 'error') ?? stringField(JSON.parse(body), 'type');
      } catch {
        code = body.slice(0, 60);
      }
      const kind = `${status} ${code ?? ''}`.trim();
      this.failuresByKind[kind] = (this.failuresByKind[kind] ?? 0) + 1;
      return undefined;
    }
    if (index >= 0) this.perTenant[index]!++;
    if (++this.answered % this.o.checkEvery === 0) {
      this.checked++;
      const t = this.o.tenants[index];
      const problem = t ? checkTokenAnswer(body, t, this.o.port) : 'answer without a tenant';
      if (problem) {
        this.wrong++;
        if (this.wrongExamples.length < 5) this.wrongExamples.push(problem);
      }
    }
    return context.cold === true ? 'cold' : undefined;
  }

  starved(): number {
    return 0;
  }

  /** Tenants that got at least one answer. */
  touched(): number {
    return this.perTenant.reduce((n, c) => n + (c > 0 ? 1 : 0), 0);
  }
}
