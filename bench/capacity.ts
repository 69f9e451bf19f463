/**
 * Capacity tuning (issue 7 item 4): `npm run bench:capacity [-- options]`, `--help` for the flags.
 *
 * How many live tenant actors (MULTI_TENANCY_PROVIDER_POOL_MAX_SIZE) and how long an idle one
 * stays (MULTI_TENANCY_PROVIDER_POOL_IDLE_TTL_MS) a deployment needs: N tenants with a Zipf(s)
 * traffic profile are driven against every combination of the pool sizes and idle TTLs given, and
 * each setting is compared with a single-tenant run (all requests to one tenant, everything else
 * the same) measured in the same command.
 *
 * 1. One fresh PostgreSQL database (migrated) and one Redis key prefix for the whole command.
 * 2. Seeding, in this process, through the product's own storage layer (PgStorage, as svc_app):
 *    the tenant records, their signing keys and one confidential client_credentials client each.
 *    Bench-only shortcut: the key pairs come from a small pool generated once (RSA-2048 takes
 *    ~100 ms to generate) and are shared between tenants, each copy sealed for its own tenant with
 *    the product's Sealer (AAD `<tenant>:<kid>`) under the SVC_ENCRYPTION_KEY the product gets. The
 *    cost measured on a cold start is reading, unsealing and importing keys, not generating them.
 * 3. Per setting: the product (`node dist/src/main.js`, NODE_ENV=production, multi-tenant) is
 *    started as a child process with the setting, warmed up, then autocannon drives
 *    client_credentials token requests (Basic auth, `resource`, `scope`), the tenant of each
 *    request drawn from the Zipf distribution and named by the x-tenant-id header. A sample of the
 *    answers is decoded: `iss` must be the tenant's issuer and `client_id` its client.
 * 4. Readings per measured window: req/s and latency (client), CPU per request (/proc/<pid>/stat),
 *    RSS (VmRSS sampled, VmHWM), event-loop delay, and from /metrics the pool's hits, misses and
 *    evictions and the svc_tenant_actor_create_seconds histogram (server-side cold-start latency,
 *    the difference of two scrapes); a client-side cold latency too (requests to a tenant not among
 *    the P most recently requested, P = pool size).
 * 5. A table, the issue's goal row when a pool-50 setting ran, a recommendation, and
 *    bench/results/capacity-<timestamp>.json and .html. Exit 1 when any request failed or any answer
 *    was wrong.
 */
import autocannon from 'autocannon';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/index.js';
import { Sealer } from '../src/keys/sealer.js';
import { PgStorage } from '../src/storage/postgresql/index.js';
import { seed, type FleetTenant, type SeedReport } from './capacity-seed.js';
import type { Latency, Options, Setting, SettingResult, WindowStats } from './capacity-types.js';
import { OTHER_CPU_WARNING, failureCount, coldCell, goals, mb, recommend, renderDetails, renderGoals, renderHtml, renderResults, renderTables, table, ttlLabel } from './capacity-report.js';
import { machineBusyMicros, processCpuMicros, selfCpuMicros } from './cpu.js';
import { EVENT_LOOP_RESOLUTION_MS, memoryOf } from './probes.js';
import { killAllChildren, removeDir, startServer, type ServerProcess } from './processes.js';
import { PRODUCT_BENCH_SETTINGS, PRODUCT_ENV_PREFIX } from './targets.js';
import {
  FLEET_RESOURCE,
  FLEET_SCOPE,
  HOST,
  REDIS_URL,
  RecentTenants,
  TOKEN_PATH,
  claimsOf,
  backendPids,
  closeHttpAgent,
  cpuOfPids,
  createFleetDatabase,
  databaseActivity,
  tableActivity,
  tableDelta,
  histogramDelta,
  histogramOf,
  histogramQuantileMs,
  metric,
  multiTenantEnv,
  newRedisPrefix,
  poolCountersOf,
  poolDelta,
  purgeRedisPrefix,
  scrapeMetrics,
  send,
  shuffledOrder,
  stringField,
  tenantIssuer,
  zipf,
  zipfTopShare,
  type FleetDatabase,
  type TableActivity,
  type HistogramSnapshot,
} from './tenant-fleet.js';

const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ACTOR_CREATE_HISTOGRAM = 'svc_tenant_actor_create_seconds';

// ---------------------------------------------------------------------------------------------
// Options.


const USAGE = `usage: node dist/bench/capacity.js [options]        (npm run bench:capacity -- [options])
  --tenants <n>             tenants seeded (default 10000; smoke 50)
  --pool <a,b,...>          MULTI_TENANCY_PROVIDER_POOL_MAX_SIZE values (default 50,200,1000; smoke 10)
  --idle-ttl <ms,...>       MULTI_TENANCY_PROVIDER_POOL_IDLE_TTL_MS values (default 1800000)
  --cleanup-interval <ms>   MULTI_TENANCY_PROVIDER_POOL_CLEANUP_INTERVAL_MS (default 60000)
                            every pool x idle-ttl combination is one setting
  --seconds <s>             measured seconds per setting (default 20; smoke 2)
  --warmup <s>              load before each measured window, discarded (default 5; smoke 1)
  --connections <n>         concurrent keep-alive connections (default 50; smoke 10)
  --zipf <s>                Zipf exponent of the traffic over the tenants (default 1.1)
  --rss-budget-mb <mb>      memory budget of the recommendation (default 600)
  --check-every <n>         decode and check one answer in n (iss, client_id; default 10)
  --seed-concurrency <n>    parallel seeding transactions (default 16)
  --no-prime                skip the priming pass: by default every tenant is requested once
                            before the warm-up, so the window measures the steady state of an
                            instance that has served every tenant before (its tenant state cache
                            warm, MULTI_TENANCY_TENANT_CACHE_*); the pass's own rate is reported
                            (first requests of tenants after a restart)
  --smoke                   quick check: 50 tenants, pool 10, 2 s (explicit flags still win)
  --keep-db                 keep the PostgreSQL database (its name is printed)
  --results <dir>           where capacity-<timestamp>.json and .html go (default bench/results)
  --help
A single-tenant run (all requests to one tenant, the first pool and idle TTL) runs first and again
last: the mean of the two is the baseline of the "% of single" columns. Product settings can be added as for npm run
bench: BENCH_PRODUCT_STORAGE_POSTGRESQL_POOL_MAX=20 starts the product with STORAGE_POSTGRESQL_POOL_MAX=20.
example: node dist/bench/capacity.js --tenants 10000 --pool 50,200,1000 --idle-ttl 1800000 --seconds 20`;

function numberOpt(name: string, raw: string | undefined, fallback: number, { integer = true, min = 1 } = {}): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) throw new Error(`--${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got "${raw}"`);
  return n;
}

function listOpt(name: string, raw: string | undefined, fallback: number[]): number[] {
  if (raw === undefined || raw === '') return fallback;
  const values = raw.split(',').map((s) => numberOpt(name, s.trim(), NaN));
  return [...new Set(values)].sort((a, b) => a - b);
}

function parseOptions(argv: string[]): Options | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      tenants: { type: 'string' },
      pool: { type: 'string' },
      'idle-ttl': { type: 'string' },
      'cleanup-interval': { type: 'string' },
      seconds: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      zipf: { type: 'string' },
      'rss-budget-mb': { type: 'string' },
      'check-every': { type: 'string' },
      'seed-concurrency': { type: 'string' },
      'no-prime': { type: 'boolean', default: false },
      smoke: { type: 'boolean', default: false },
      'keep-db': { type: 'boolean', default: false },
      results: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) return 'help';
  const smoke = values.smoke === true;
  return {
    tenants: numberOpt('tenants', values.tenants, smoke ? 50 : 10_000),
    pools: listOpt('pool', values.pool, smoke ? [10] : [50, 200, 1000]),
    idleTtls: listOpt('idle-ttl', values['idle-ttl'], [1_800_000]),
    cleanupIntervalMs: numberOpt('cleanup-interval', values['cleanup-interval'], 60_000),
    seconds: numberOpt('seconds', values.seconds, smoke ? 2 : 20, { integer: false, min: 0.5 }),
    warmup: numberOpt('warmup', values.warmup, smoke ? 1 : 5, { integer: false, min: 0 }),
    connections: numberOpt('connections', values.connections, smoke ? 10 : 50),
    zipfS: numberOpt('zipf', values.zipf, 1.1, { integer: false, min: 0 }),
    rssBudgetMb: numberOpt('rss-budget-mb', values['rss-budget-mb'], 600),
    checkEvery: numberOpt('check-every', values['check-every'], 10),
    seedConcurrency: numberOpt('seed-concurrency', values['seed-concurrency'], 16),
    prime: values['no-prime'] !== true,
    smoke,
    keepDb: values['keep-db'] === true,
    resultsDir: values.results ?? join(PROJECT_ROOT, 'bench', 'results'),
  };
}

// ---------------------------------------------------------------------------------------------
// One load window.



const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

class Samples {
  private data = new Float64Array(1 << 16);
  n = 0;

  push(v: number): void {
    if (this.n === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.n++] = v;
  }

  sorted(): Float64Array {
    return this.data.slice(0, this.n).sort();
  }
}

const quantile = (sorted: Float64Array, q: number) => (sorted.length ? round(sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!) : 0);

interface DriveOptions {
  port: number;
  pid: number;
  tenants: readonly FleetTenant[];
  /** The index (into tenants) of the next request's tenant. */
  pick: () => number;
  /** Client-side LRU mirror (shared by warm-up and measured window). */
  recent: RecentTenants;
  connections: number;
  seconds: number;
  checkEvery: number;
}

function checkAnswer(body: string, tenant: FleetTenant, port: number): string | undefined {
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

/**
 * autocannon with one request whose tenant changes per request (setupRequest). autocannon calls
 * onResponse (with the context of the request just answered) and then emits 'response' (with its
 * latency) synchronously for the same answer, before the connection's next setupRequest: the
 * tenant and cold flag handed from one to the other belong to the same request.
 */
async function drive(o: DriveOptions): Promise<WindowStats> {
  const all = new Samples();
  const cold = new Samples();
  const statusCodes: Record<string, number> = {};
  const wrongExamples: string[] = [];
  const touched = new Uint8Array(o.tenants.length);
  let requests = 0;
  let unexpected = 0;
  let errors = 0;
  let checked = 0;
  let wrong = 0;
  let answered = 0;
  let lastCold = false;
  const form = new URLSearchParams({ grant_type: 'client_credentials', resource: FLEET_RESOURCE, scope: FLEET_SCOPE }).toString();
  const request: autocannon.Request = {
    method: 'POST',
    path: TOKEN_PATH,
    headers: { host: `localhost:${o.port}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: form,
    setupRequest: (req, context) => {
      const index = o.pick();
      const t = o.tenants[index]!;
      context.tenant = index;
      context.cold = o.recent.touch(index);
      req.headers = { ...req.headers, 'x-tenant-id': t.slug, authorization: t.authorization };
      return req;
    },
    onResponse: (status, body, context) => {
      const index = typeof context.tenant === 'number' ? context.tenant : -1;
      lastCold = context.cold === true;
      if (index >= 0) touched[index] = 1;
      if (status !== 200 || ++answered % o.checkEvery !== 0) return;
      checked++;
      const t = o.tenants[index];
      const problem = t ? checkAnswer(body, t, o.port) : 'answer without a tenant';
      if (problem) {
        wrong++;
        if (wrongExamples.length < 5) wrongExamples.push(problem);
      }
    },
  };
  const rssSamples: number[] = [];
  const sampler = setInterval(() => {
    const m = memoryOf(o.pid);
    if (m) rssSamples.push(m.rss);
  }, 250);
  const machineBefore = machineBusyMicros();
  const serverBefore = processCpuMicros(o.pid);
  const selfBefore = selfCpuMicros();
  const started = performance.now();
  let instance: autocannon.Instance | undefined;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon(
      { url: `http://${HOST}:${o.port}`, connections: o.connections, duration: o.seconds, requests: [request] },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
    instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      requests++;
      statusCodes[status] = (statusCodes[status] ?? 0) + 1;
      if (status !== 200) {
        unexpected++;
        return;
      }
      all.push(ms);
      if (lastCold) cold.push(ms);
    });
    instance.on('reqError', () => errors++);
  });
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const serverCpu = processCpuMicros(o.pid) - serverBefore;
  const selfCpu = selfCpuMicros() - selfBefore;
  const otherCpu = Math.max(0, machineBusyMicros() - machineBefore - serverCpu - selfCpu);
  const sorted = all.sorted();
  let sum = 0;
  for (const v of sorted) sum += v;
  const coldSorted = cold.sorted();
  return {
    requests,
    seconds: round(seconds, 3),
    rps: round(requests / seconds, 1),
    latency: { mean: sorted.length ? round(sum / sorted.length) : 0, p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), p999: quantile(sorted, 0.999), max: sorted.length ? round(sorted[sorted.length - 1]!) : 0 },
    coldClient: { requests: coldSorted.length, p50: coldSorted.length ? quantile(coldSorted, 0.5) : null, p99: coldSorted.length ? quantile(coldSorted, 0.99) : null },
    errors: Math.max(result.errors, errors),
    timeouts: result.timeouts,
    unexpected,
    statusCodes,
    checked,
    wrong,
    wrongExamples,
    tenantsTouched: touched.reduce((a, b) => a + b, 0),
    serverCpuMicros: Math.round(serverCpu),
    loadgenCpuMicros: Math.round(selfCpu),
    otherCpuMicros: Math.round(otherCpu),
    maxRssBytes: rssSamples.length ? Math.max(...rssSamples) : null,
  };
}

// ---------------------------------------------------------------------------------------------
// One setting: a product process, warm-up, measured window, readings.




function productOverrides(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (name.startsWith(PRODUCT_ENV_PREFIX) && value !== undefined) out[name.slice(PRODUCT_ENV_PREFIX.length)] = value;
  return out;
}

interface RunContext {
  db: FleetDatabase;
  redisPrefix: string;
  encryptionKey: string;
  overrides: Record<string, string>;
  tenants: FleetTenant[];
  /** Zipf rank -> tenant index. */
  order: number[];
  opts: Options;
}

function eventLoopP99(text: string): number | null {
  const v = metric(text, 'svc_nodejs_eventloop_lag_p99_seconds');
  return v > 0 ? round(Math.max(0, v * 1000 - EVENT_LOOP_RESOLUTION_MS)) : null;
}

async function runSetting(ctx: RunContext, s: Setting): Promise<SettingResult> {
  const { opts } = ctx;
  const server: ServerProcess = await startServer(
    {
      name: 'product',
      script: fileURLToPath(new URL('../src/main.js', import.meta.url)),
      readyPath: '/readyz',
      env: (port) => ({
        ...multiTenantEnv({ port, nodeEnv: 'production', databaseUrl: ctx.db.url, redisPrefix: ctx.redisPrefix, encryptionKey: ctx.encryptionKey, poolMaxSize: s.pool }),
        ...PRODUCT_BENCH_SETTINGS,
        ...ctx.overrides,
        MULTI_TENANCY_PROVIDER_POOL_MAX_SIZE: String(s.pool),
        MULTI_TENANCY_PROVIDER_POOL_IDLE_TTL_MS: String(s.idleTtlMs),
        MULTI_TENANCY_PROVIDER_POOL_CLEANUP_INTERVAL_MS: String(s.cleanupIntervalMs),
      }),
    },
    60_000,
  );
  try {
    const port = Number(new URL(server.baseUrl).port);
    const idle = memoryOf(server.pid);
    const first = ctx.tenants[ctx.order[0]!]!;
    // One checked request before the load, so a setting that measures nothing but errors is flagged.
    const probe = await send(port, 'POST', TOKEN_PATH, { tenant: first.slug, auth: first.authorization, form: { grant_type: 'client_credentials', resource: FLEET_RESOURCE, scope: FLEET_SCOPE } });
    const preCheck = probe.status === 200 ? (checkAnswer(probe.text, first, port) ?? null) : `HTTP ${probe.status}: ${probe.text.slice(0, 200)}`;

    const rank = s.single ? () => 0 : zipf(ctx.tenants.length, opts.zipfS);
    const pick = () => ctx.order[rank()]!;
    const recent = new RecentTenants(s.pool);
    const base = { port, pid: server.pid, tenants: ctx.tenants, pick, recent, connections: opts.connections, checkEvery: opts.checkEvery };
    let warmupFailures = 0;
    let prime: SettingResult['prime'] = null;
    if (opts.prime && !s.single) {
      const t0 = performance.now();
      let next = 0;
      const worker = async () => {
        for (let i = next++; i < ctx.tenants.length; i = next++) {
          const t = ctx.tenants[i]!;
          const r = await send(port, 'POST', TOKEN_PATH, { tenant: t.slug, auth: t.authorization, form: { grant_type: 'client_credentials', resource: FLEET_RESOURCE, scope: FLEET_SCOPE } }).catch(() => undefined);
          if (r?.status !== 200) warmupFailures++;
        }
      };
      await Promise.all(Array.from({ length: opts.connections }, worker));
      const seconds = (performance.now() - t0) / 1000;
      prime = { tenants: ctx.tenants.length, seconds: round(seconds, 2), rps: round(ctx.tenants.length / seconds, 1) };
    }
    if (opts.warmup > 0) {
      const w = await drive({ ...base, seconds: opts.warmup });
      warmupFailures = w.errors + w.unexpected + w.wrong;
    }
    const before = await scrapeMetrics(port);
    const pgBefore = cpuOfPids(await backendPids(ctx.db.name), processCpuMicros);
    const activityBefore = await databaseActivity(ctx.db.name);
    const tablesBefore = await tableActivity(ctx.db.url);
    const m = await drive({ ...base, seconds: opts.seconds });
    const pgAfter = cpuOfPids(await backendPids(ctx.db.name), processCpuMicros);
    const activityAfter = await databaseActivity(ctx.db.name);
    const tablesAfter = await tableActivity(ctx.db.url);
    const after = await scrapeMetrics(port);
    let pgCpu = 0;
    for (const [pid, micros] of pgAfter) pgCpu += micros - (pgBefore.get(pid) ?? 0);
    const end = memoryOf(server.pid);

    const counters = poolDelta(poolCountersOf(before), poolCountersOf(after));
    const created = histogramDelta(histogramOf(before, ACTOR_CREATE_HISTOGRAM), histogramOf(after, ACTOR_CREATE_HISTOGRAM));
    const q50 = histogramQuantileMs(created, 0.5);
    const q99 = histogramQuantileMs(created, 0.99);
    const served = m.requests;
    const logs = server.logs();
    const result: SettingResult = {
      ...s,
      readyMs: server.readyMs,
      requests: m.requests,
      seconds: m.seconds,
      rps: m.rps,
      percentOfSingle: null,
      percentOfSingleCpu: null,
      latency: m.latency,
      pool_: {
        hits: counters.hits,
        misses: counters.misses,
        hitRate: counters.hits + counters.misses > 0 ? round((counters.hits / (counters.hits + counters.misses)) * 100, 2) : null,
        // A request that finds its tenant's actor being created waits for it: neither hit nor miss.
        joinedInFlight: Math.max(0, served - counters.hits - counters.misses),
        evictions: counters.evictions,
        sizeAtEnd: counters.sizeAtEnd,
      },
      coldServer: {
        creations: created.count,
        meanMs: created.count > 0 ? round((created.sum / created.count) * 1000) : null,
        p50Ms: q50 ? round(q50.ms) : null,
        p99Ms: q99 ? round(q99.ms) : null,
        p50Over: q50?.over ?? false,
        p99Over: q99?.over ?? false,
        p50Below: q50?.firstBucketMs ?? null,
        p99Below: q99?.firstBucketMs ?? null,
        buckets: created.buckets,
      },
      coldClient: m.coldClient,
      cpuMicrosPerRequest: served > 0 ? round(m.serverCpuMicros / served, 1) : null,
      loadgenCpuMicrosPerRequest: served > 0 ? round(m.loadgenCpuMicros / served, 1) : null,
      pgCpuMicrosPerRequest: served > 0 ? round(pgCpu / served, 1) : null,
      pg: {
        xactsPerRequest: served > 0 ? round((activityAfter.xacts - activityBefore.xacts) / served, 3) : null,
        updatedPerSecond: round((activityAfter.updated - activityBefore.updated) / m.seconds, 1),
        insertedPerSecond: round((activityAfter.inserted - activityBefore.inserted) / m.seconds, 1),
        perRequestByTable: tableDelta(tablesBefore, tablesAfter, served),
      },
      otherCpuPercentOfCore: round((Math.max(0, m.otherCpuMicros - pgCpu) / (m.seconds * 1e6)) * 100, 1),
      eventLoopP99Ms: eventLoopP99(after),
      rss: { idleBytes: idle?.rss ?? null, windowMaxBytes: m.maxRssBytes, peakBytes: end?.peak ?? null, endBytes: end?.rss ?? null },
      tenantsTouched: m.tenantsTouched,
      prime,
      failures: {
        connectionErrors: m.errors,
        timeouts: m.timeouts,
        unexpectedStatus: m.unexpected,
        wrongAnswers: m.wrong,
        checkedAnswers: m.checked,
        warmup: warmupFailures,
        preCheck,
        serverErrorLines: logs.errorLines,
      },
      statusCodes: m.statusCodes,
      wrongExamples: m.wrongExamples,
    };
    if (failureCount(result) > 0 || logs.errorLines > 0) result.serverLogTail = logs.tail.slice(-15);
    return result;
  } finally {
    await server.stop();
    await removeDir(server.dir);
    // The next server may get the same port: a kept-alive socket to this one would hang up.
    closeHttpAgent();
  }
}

function gitInfo(): { commit?: string; dirty?: boolean } {
  const git = (...args: string[]): string | undefined => {
    try {
      return execFileSync('git', args, { cwd: PROJECT_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return undefined;
    }
  };
  const status = git('status', '--porcelain');
  return { commit: git('rev-parse', 'HEAD'), dirty: status === undefined ? undefined : status.length > 0 };
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  let parsed: Options | 'help';
  try {
    parsed = parseOptions(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${USAGE}\n`);
    return 2;
  }
  if (parsed === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const opts = parsed;
  const startedAt = new Date();
  const settings: Setting[] = [];
  for (const pool of opts.pools) for (const idleTtlMs of opts.idleTtls) settings.push({ label: `pool ${pool}${opts.idleTtls.length > 1 ? `, TTL ${ttlLabel(idleTtlMs)}` : ''}`, single: false, pool, idleTtlMs, cleanupIntervalMs: opts.cleanupIntervalMs });
  const single = (when: string): Setting => ({ label: `single tenant (${when})`, single: true, pool: opts.pools[0]!, idleTtlMs: opts.idleTtls[0]!, cleanupIntervalMs: opts.cleanupIntervalMs });
  const perSetting = opts.warmup + opts.seconds + 3;
  const headline =
    `capacity: ${opts.tenants.toLocaleString('en-US')} tenants, Zipf s=${opts.zipfS} (top 50 tenants get ${(zipfTopShare(opts.tenants, opts.zipfS, 50) * 100).toFixed(0)}% of requests), ` +
    `${settings.length} setting(s) between two single-tenant baseline runs, ${opts.connections} connections, ${opts.warmup} s warm-up + ${opts.seconds} s measured each (~${Math.ceil(((settings.length + 2) * perSetting) / 60)} min of load after seeding)`;
  process.stdout.write(`${headline}\n`);

  const encryptionKey = randomBytes(32).toString('base64');
  const redisPrefix = newRedisPrefix('cap');
  const db = await createFleetDatabase('svc_capacity');
  process.stdout.write(`database ${db.name} (migrated), Redis prefix ${redisPrefix}\n`);
  let cleaned: Promise<void> | undefined;
  cleanup = () =>
    (cleaned ??= (async () => {
      closeHttpAgent();
      if (opts.keepDb) process.stdout.write(`kept database ${db.name} (drop it with: psql -h 127.0.0.1 -U postgres -c 'DROP DATABASE "${db.name}"')\n`);
      else await db.drop().catch((err: unknown) => process.stderr.write(`could not drop ${db.name}: ${String(err)}\n`));
      await purgeRedisPrefix(redisPrefix).catch((err: unknown) => process.stderr.write(`could not delete Redis keys ${redisPrefix}:*: ${String(err)}\n`));
    })());
  let code = 1;
  try {
    // The product's configuration as the product will see it (key algorithms, client rules).
    const overrides = productOverrides();
    const baseEnv = { ...multiTenantEnv({ port: 3000, nodeEnv: 'production', databaseUrl: db.url, redisPrefix, encryptionKey, poolMaxSize: opts.pools[0]! }), ...overrides };
    const config = loadConfig(baseEnv);
    const sealer = new Sealer(Buffer.from(encryptionKey, 'base64'));
    const storage = await PgStorage.open({ url: db.url, pool_max: opts.seedConcurrency, statement_timeout_ms: 60_000, slow_query_ms: 0 });
    let seeded: SeedReport;
    try {
      seeded = await seed(storage, config, sealer, opts.tenants, opts.seedConcurrency);
    } finally {
      await storage.close();
    }
    const seedLine =
      `seeded ${opts.tenants.toLocaleString('en-US')} tenants (record, ${config.security.key_store.algorithms.join('+')} keys, one client_credentials client each) in ${seeded.seconds.toFixed(1)} s ` +
      `through the product's PostgreSQL storage; key pairs: a pool of ${seeded.keyPool} triples generated in ${seeded.keyPoolSeconds.toFixed(1)} s and shared between tenants, sealed per tenant (bench shortcut: cold starts load and import keys, they never generate them)`;
    process.stdout.write(`${seedLine}\n`);

    const ctx: RunContext = { db, redisPrefix, encryptionKey, overrides, tenants: seeded.tenants, order: shuffledOrder(opts.tenants), opts };
    const results: SettingResult[] = [];
    for (const s of [single('before'), ...settings, single('after')]) {
      process.stdout.write(`${s.label}: pool ${s.pool}, idle TTL ${s.idleTtlMs} ms ... `);
      const r = await runSetting(ctx, s);
      results.push(r);
      process.stdout.write(`${Math.round(r.rps)} req/s, hit rate ${r.pool_.hitRate?.toFixed(1) ?? '-'}%, cold p50 ${coldCell(r, 'p50')} ms, RSS peak ${mb(r.rss.peakBytes)} MB, failures ${failureCount(r)}\n`);
      if (r.failures.preCheck) process.stdout.write(`  check before the load failed: ${r.failures.preCheck}\n`);
    }
    const singles = results.filter((r) => r.single);
    const baseRps = singles.reduce((a, r) => a + r.rps, 0) / singles.length;
    const cpuSingles = singles.map((r) => r.cpuMicrosPerRequest).filter((v): v is number => v !== null);
    const baseCpu = cpuSingles.length ? cpuSingles.reduce((a, b) => a + b, 0) / cpuSingles.length : null;
    for (const r of results) {
      if (r.single) continue;
      r.percentOfSingle = baseRps > 0 ? round((r.rps / baseRps) * 100, 1) : null;
      r.percentOfSingleCpu = baseCpu !== null && r.cpuMicrosPerRequest ? round((baseCpu / r.cpuMicrosPerRequest) * 100, 1) : null;
    }

    const g = goals(results, opts);
    const rec = recommend(results, opts);
    const failed = results.filter((r) => failureCount(r) > 0);
    const busy = results.filter((r) => r.otherCpuPercentOfCore > OTHER_CPU_WARNING);
    const out: string[] = [
      '',
      renderResults(results),
      '',
      renderDetails(results),
      '',
      renderTables(results),
      '',
      'cold p50/p99 (srv): svc_tenant_actor_create_seconds over the measured window (actor build on a pool miss, bucket-interpolated; ">" = beyond the last bucket); cold (cli): latency of requests to a tenant not among the last P requested (P = pool size), queueing included.',
      'hit rate: svc_tenant_pool_hits_total / (hits + misses); requests that joined an actor creation in flight count as neither. % of single: token req/s / the mean of the two single-tenant runs; (CPU): their mean CPU µs/req / this setting\'s (how much of the single-tenant capacity remains when the server is CPU-bound; steadier than req/s on shared cores). RSS peak: VmHWM of the product process (warm-up included); CPU: all the product\'s threads per completed request.',
      `keys: ${seeded.keyPool} key triples shared between tenants, each copy sealed for its tenant (bench shortcut, see bench/README.md).`,
    ];
    if (busy.length) out.push(`WARNING: other processes used more than ${OTHER_CPU_WARNING}% of a core during ${busy.map((r) => `${r.label} (${r.otherCpuPercentOfCore.toFixed(0)}%)`).join(', ')}: req/s and latency of those rows are suspect.`);
    out.push('', g ? renderGoals(g) : 'issue 7 target row (10,000 tenants, pool 50, Zipf s=1.1: token req/s >= 60% of single-tenant; RSS < 600 MB; cold actor p50 < 20 ms): not evaluated, the run has no pool-50 setting.');
    out.push('', 'recommendation:', ...rec.lines.map((l) => `- ${l}`));
    for (const r of failed) {
      out.push('', `FAILURES in ${r.label}: ${JSON.stringify(r.failures)} status codes ${JSON.stringify(r.statusCodes)}`);
      for (const w of r.wrongExamples) out.push(`  wrong answer: ${w}`);
      for (const l of r.serverLogTail ?? []) out.push(`  ${l}`);
    }

    const report = {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      ok: failed.length === 0,
      options: opts,
      environment: {
        node: process.version,
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model,
        loadAverageAtEnd: loadavg(),
        git: gitInfo(),
        database: db.name,
        redis: { url: REDIS_URL, prefix: redisPrefix },
        productOverrides: overrides,
        productBenchSettings: PRODUCT_BENCH_SETTINGS,
        seeding: { tenants: opts.tenants, seconds: round(seeded.seconds), keyPoolTriples: seeded.keyPool, keyPoolSeconds: round(seeded.keyPoolSeconds), registrySeconds: round(seeded.registrySeconds), algorithms: config.security.key_store.algorithms },
      },
      results,
      goals: g,
      recommendation: rec,
    };
    await mkdir(opts.resultsDir, { recursive: true });
    const file = join(opts.resultsDir, `capacity-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
    await writeFile(file, `${JSON.stringify(report, (_key, value: unknown) => (value === Infinity ? '+Inf' : value), 2)}\n`);
    const html = file.replace(/\.json$/, '.html');
    const title = `svc bench:capacity ${startedAt.toISOString()}: ${opts.tenants.toLocaleString('en-US')} tenants, Zipf s=${opts.zipfS}`;
    await writeFile(html, renderHtml(title, [headline, seedLine, ...out].join('\n'), results));
    out.push('', `results: ${file}`, `         ${html}`);
    process.stdout.write(`${out.join('\n')}\n`);
    code = failed.length === 0 ? 0 : 1;
  } finally {
    await cleanup();
  }
  return code;
}

/** Drops the database and the Redis keys (once), also on Ctrl-C. */
let cleanup: (() => Promise<void>) | undefined;

process.on('SIGINT', () => {
  killAllChildren();
  void (cleanup?.() ?? Promise.resolve()).finally(() => process.exit(130));
});

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    killAllChildren();
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(2);
  },
);
