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
 * 2. Seeding (seed.ts), in this process, through the product's own storage layer (PgStorage, as svc_app):
 *    the tenant records, their signing keys and one confidential client_credentials client each.
 *    Bench-only shortcut: the key pairs come from a small pool generated once (RSA-2048 takes
 *    ~100 ms to generate) and are shared between tenants, each copy sealed for its own tenant with
 *    the product's Sealer (AAD `<tenant>:<kid>`) under the SVC_ENCRYPTION_KEY the product gets. The
 *    cost measured on a cold start is reading, unsealing and importing keys, not generating them.
 * 3. Per setting: the product (`node dist/src/main.js`, NODE_ENV=production, multi-tenant) is
 *    started as a child process with the setting, warmed up, then the load driver (load.ts) drives
 *    client_credentials token requests (Basic auth, `resource`, `scope`), the tenant of each
 *    request drawn from the Zipf distribution and named by the x-tenant-id header (tenant-fleet.ts
 *    FleetTraffic). A sample of the
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
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { commandLine, defineCommand } from './cli.js';
import type { Options, Setting, SettingResult } from './capacity-types.js';
import { OTHER_CPU_WARNING, failureCount, coldCell, goals, recommend, renderDetails, renderGoals, renderHtml, renderResults, renderTables, ttlLabel } from './capacity-report.js';
import { processCpuMicros } from './cpu.js';
import { measure, type Measurement } from './load.js';
import { EVENT_LOOP_RESOLUTION_MS, memoryOf } from './probes.js';
import { killAllChildren, removeDir, startServer, type ServerProcess } from './processes.js';
import { gitState, mb, round, saveResults, stamp } from './report.js';
import { seedFleet, type SeedReport } from './seed.js';
import { createMigratedDatabase, purgeRedisPrefix, type ScratchDatabase } from './services.js';
import { PRODUCT_BENCH_SETTINGS, productNodeArgs, productOverrides } from './targets.js';
import {
  FLEET_TOKEN_FORM,
  FleetTraffic,
  PG_SERVER,
  REDIS_URL,
  RecentTenants,
  TOKEN_PATH,
  backendPids,
  checkTokenAnswer,
  closeHttpAgent,
  cpuOfPids,
  databaseActivity,
  histogramDelta,
  histogramOf,
  histogramQuantileMs,
  metric,
  multiTenantEnv,
  newRedisPrefix,
  poolCountersOf,
  poolDelta,
  scrapeMetrics,
  send,
  shuffledOrder,
  tableActivity,
  tableDelta,
  zipf,
  zipfTopShare,
  type FleetTenant,
} from './tenant-fleet.js';

const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ACTOR_CREATE_HISTOGRAM = 'svc_tenant_actor_create_seconds';

// ---------------------------------------------------------------------------------------------
// Options (bench/cli.ts).

const COMMAND = defineCommand({
  usage: 'usage: node dist/bench/capacity.js [options]        (npm run bench:capacity -- [options])',
  flags: {
    tenants: { kind: 'number', help: 'tenants seeded', default: 10_000, smoke: 50 },
    pool: { kind: 'numbers', help: 'MULTI_TENANCY_PROVIDER_POOL_MAX_SIZE values', default: [50, 200, 1000], smoke: [10] },
    'idle-ttl': { kind: 'numbers', help: 'MULTI_TENANCY_PROVIDER_POOL_IDLE_TTL_MS values; every pool x idle-ttl combination is one setting', meta: '<ms,...>', default: [1_800_000] },
    'cleanup-interval': { kind: 'number', help: 'MULTI_TENANCY_PROVIDER_POOL_CLEANUP_INTERVAL_MS', meta: '<ms>', default: 60_000 },
    seconds: { kind: 'number', help: 'measured seconds per setting', meta: '<s>', default: 20, smoke: 2, min: 0.5, integer: false },
    warmup: { kind: 'number', help: 'load before each measured window, discarded', meta: '<s>', default: 5, smoke: 1, min: 0, integer: false },
    connections: { kind: 'number', help: 'concurrent keep-alive connections', default: 50, smoke: 10 },
    zipf: { kind: 'number', help: 'Zipf exponent of the traffic over the tenants', meta: '<s>', default: 1.1, min: 0, integer: false },
    'rss-budget-mb': { kind: 'number', help: 'memory budget of the recommendation', meta: '<mb>', default: 600 },
    'check-every': { kind: 'number', help: 'decode and check one answer in n (iss, client_id)', default: 10 },
    'seed-concurrency': { kind: 'number', help: 'parallel seeding transactions', default: 16 },
    'no-prime': {
      kind: 'boolean',
      help: "skip the priming pass: by default every tenant is requested once before the warm-up, so the window measures the steady state of an instance that has served every tenant before (its tenant state cache warm, MULTI_TENANCY_TENANT_CACHE_*); the pass's own rate is reported (first requests of tenants after a restart)",
    },
    'keep-db': { kind: 'boolean', help: 'keep the PostgreSQL database (its name is printed)' },
    results: { kind: 'string', help: 'where capacity-<timestamp>.json and .html go', meta: '<dir>', default: join(PROJECT_ROOT, 'bench', 'results') },
  },
  smoke: 'quick check: 50 tenants, pool 10, 2 s (explicit flags still win)',
  notes: `A single-tenant run (all requests to one tenant, the first pool and idle TTL) runs first and again
last: the mean of the two is the baseline of the "% of single" columns. Product settings can be added as for npm run
bench: BENCH_PRODUCT_STORAGE_POSTGRESQL_POOL_MAX=20 starts the product with STORAGE_POSTGRESQL_POOL_MAX=20.
example: node dist/bench/capacity.js --tenants 10000 --pool 50,200,1000 --idle-ttl 1800000 --seconds 20`,
});

function parseOptions(argv: string[]): Options | number {
  const v = commandLine(COMMAND, argv);
  if (typeof v === 'number') return v;
  return {
    tenants: v.tenants,
    pools: v.pool,
    idleTtls: v['idle-ttl'],
    cleanupIntervalMs: v['cleanup-interval'],
    seconds: v.seconds,
    warmup: v.warmup,
    connections: v.connections,
    zipfS: v.zipf,
    rssBudgetMb: v['rss-budget-mb'],
    checkEvery: v['check-every'],
    seedConcurrency: v['seed-concurrency'],
    prime: !v['no-prime'],
    smoke: v.smoke,
    keepDb: v['keep-db'],
    resultsDir: v.results,
  };
}

// ---------------------------------------------------------------------------------------------
// One load window: load.ts drives, FleetTraffic (tenant-fleet.ts) picks the tenant of every request.

interface DriveOptions {
  server: ServerProcess;
  traffic: FleetTraffic;
  connections: number;
  seconds: number;
  title: string;
}

function drive(o: DriveOptions): Promise<Measurement> {
  o.traffic.reset();
  return measure(o.server, o.traffic.spec(), { connections: o.connections, duration: o.seconds, title: o.title, rssSampleMs: 250 });
}

// ---------------------------------------------------------------------------------------------
// One setting: a product process, warm-up, measured window, readings.

interface RunContext {
  db: ScratchDatabase;
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
      nodeArgs: productNodeArgs(process.env),
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
    const probe = await send(port, 'POST', TOKEN_PATH, { tenant: first.slug, auth: first.authorization, form: { ...FLEET_TOKEN_FORM } });
    const preCheck = probe.status === 200 ? (checkTokenAnswer(probe.text, first, port) ?? null) : `HTTP ${probe.status}: ${probe.text.slice(0, 200)}`;

    const rank = s.single ? () => 0 : zipf(ctx.tenants.length, opts.zipfS);
    const pick = () => ctx.order[rank()]!;
    // The client-side LRU mirror is shared by the warm-up and the measured window.
    const traffic = new FleetTraffic({ port, tenants: ctx.tenants, pick, recent: new RecentTenants(s.pool), checkEvery: opts.checkEvery, addressing: 'header' });
    const base = { server, traffic, connections: opts.connections };
    let warmupFailures = 0;
    let prime: SettingResult['prime'] = null;
    if (opts.prime && !s.single) {
      const t0 = performance.now();
      let next = 0;
      const worker = async () => {
        for (let i = next++; i < ctx.tenants.length; i = next++) {
          const t = ctx.tenants[i]!;
          const r = await send(port, 'POST', TOKEN_PATH, { tenant: t.slug, auth: t.authorization, form: { ...FLEET_TOKEN_FORM } }).catch(() => undefined);
          if (r?.status !== 200) warmupFailures++;
        }
      };
      await Promise.all(Array.from({ length: opts.connections }, worker));
      const seconds = (performance.now() - t0) / 1000;
      prime = { tenants: ctx.tenants.length, seconds: round(seconds, 2), rps: round(ctx.tenants.length / seconds, 1) };
    }
    if (opts.warmup > 0) {
      const w = await drive({ ...base, seconds: opts.warmup, title: `${s.label} warm-up` });
      warmupFailures += w.errors + w.unexpected + traffic.wrong;
    }
    const before = await scrapeMetrics(port);
    const pgBefore = cpuOfPids(await backendPids(ctx.db.name), processCpuMicros);
    const activityBefore = await databaseActivity(ctx.db.name);
    const tablesBefore = await tableActivity(ctx.db.url);
    const m = await drive({ ...base, seconds: opts.seconds, title: s.label });
    const cold = m.tagged?.cold;
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
      coldClient: { requests: cold?.requests ?? 0, p50: cold ? cold.latency.p50 : null, p99: cold ? cold.latency.p99 : null },
      cpuMicrosPerRequest: m.cpuMicrosPerRequest,
      loadgenCpuMicrosPerRequest: m.loadgenCpuMicrosPerRequest,
      pgCpuMicrosPerRequest: served > 0 ? round(pgCpu / served, 1) : null,
      pg: {
        xactsPerRequest: served > 0 ? round((activityAfter.xacts - activityBefore.xacts) / served, 3) : null,
        updatedPerSecond: round((activityAfter.updated - activityBefore.updated) / m.seconds, 1),
        insertedPerSecond: round((activityAfter.inserted - activityBefore.inserted) / m.seconds, 1),
        perRequestByTable: tableDelta(tablesBefore, tablesAfter, served),
      },
      otherCpuPercentOfCore: round((Math.max(0, m.otherCpuMicros - pgCpu) / (m.seconds * 1e6)) * 100, 1),
      eventLoopP99Ms: eventLoopP99(after),
      rss: { idleBytes: idle?.rss ?? null, windowMaxBytes: m.rssWindow?.max ?? null, peakBytes: end?.peak ?? null, endBytes: end?.rss ?? null },
      tenantsTouched: traffic.touched(),
      prime,
      failures: {
        connectionErrors: m.errors,
        timeouts: m.timeouts,
        unexpectedStatus: m.unexpected,
        wrongAnswers: traffic.wrong,
        checkedAnswers: traffic.checked,
        warmup: warmupFailures,
        preCheck,
        serverErrorLines: logs.errorLines,
      },
      statusCodes: m.statusCodes,
      wrongExamples: [...traffic.wrongExamples],
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

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const parsed = parseOptions(process.argv.slice(2));
  if (typeof parsed === 'number') return parsed;
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
  const db = await createMigratedDatabase('svc_capacity', PG_SERVER);
  process.stdout.write(`database ${db.name} (migrated), Redis prefix ${redisPrefix}\n`);
  let cleaned: Promise<void> | undefined;
  cleanup = () =>
    (cleaned ??= (async () => {
      closeHttpAgent();
      if (opts.keepDb) process.stdout.write(`kept database ${db.name} (drop it with: psql -h 127.0.0.1 -U postgres -c 'DROP DATABASE "${db.name}"')\n`);
      else await db.drop().catch((err: unknown) => process.stderr.write(`could not drop ${db.name}: ${String(err)}\n`));
      await purgeRedisPrefix(REDIS_URL, redisPrefix).catch((err: unknown) => process.stderr.write(`could not delete Redis keys ${redisPrefix}:*: ${String(err)}\n`));
    })());
  let code = 1;
  try {
    // The product's configuration as the product will see it (key algorithms, client rules).
    const overrides = productOverrides(process.env);
    const baseEnv = { ...multiTenantEnv({ port: 3000, nodeEnv: 'production', databaseUrl: db.url, redisPrefix, encryptionKey, poolMaxSize: opts.pools[0]! }), ...overrides };
    const seeded: SeedReport & { algorithms: string[] } = await seedFleet({ databaseUrl: db.url, productEnv: baseEnv, encryptionKey, tenants: opts.tenants, concurrency: opts.seedConcurrency });
    const seedLine =
      `seeded ${opts.tenants.toLocaleString('en-US')} tenants (record, ${seeded.algorithms.join('+')} keys, one client_credentials client each) in ${seeded.seconds.toFixed(1)} s ` +
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
        git: gitState(PROJECT_ROOT),
        database: db.name,
        redis: { url: REDIS_URL, prefix: redisPrefix },
        productOverrides: overrides,
        productBenchSettings: PRODUCT_BENCH_SETTINGS,
        seeding: { tenants: opts.tenants, seconds: round(seeded.seconds), keyPoolTriples: seeded.keyPool, keyPoolSeconds: round(seeded.keyPoolSeconds), registrySeconds: round(seeded.registrySeconds), algorithms: seeded.algorithms },
      },
      results,
      goals: g,
      recommendation: rec,
    };
    const title = `svc bench:capacity ${startedAt.toISOString()}: ${opts.tenants.toLocaleString('en-US')} tenants, Zipf s=${opts.zipfS}`;
    const saved = await saveResults(opts.resultsDir, `capacity-${stamp(startedAt.toISOString())}`, report, renderHtml(title, [headline, seedLine, ...out].join('\n'), results));
    const file = saved.json;
    const html = saved.html;
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
