/**
 * Multi-tenant load (issue 6, "Prove isolation"): `npm run bench:tenants [-- --tenants N --seconds S
 * --concurrency C --pool P]`, `--help` for the flags, `--smoke` for a quick check.
 *
 * Seeds N (1,000) tenants, each with its keys and a client_credentials client, into a fresh
 * migrated PostgreSQL database (127.0.0.1:5432, dropped afterwards) through the product's storage
 * layer (seed.ts, shared with bench:capacity), then starts the product (dist/src/main.js, a child
 * process of its own, so /proc/<pid>/status measures the server alone) in multi-tenant mode on it,
 * with Redis under a key prefix of its own (deleted afterwards),
 * MULTI_TENANCY_PROVIDER_POOL_MAX_SIZE=P (50) and the metrics endpoint on. Then:
 *
 * 1. checks the issuer formula once against a tenant's discovery document;
 * 2. drives client_credentials token requests for S (30) seconds over C (32) connections with the
 *    load driver (load.ts), the tenant of each request drawn from a Zipf distribution (s = 1.1)
 *    over the N tenants, alternately addressed by header (x-tenant-id) and by subdomain
 *    (Host: <t>.localhost:<port>) (tenant-fleet.ts FleetTraffic);
 * 3. checks EVERY token: its `iss` must be the tenant's issuer and its `client_id` the tenant's
 *    client, otherwise it counts as a cross-tenant answer (must be 0);
 * 4. samples the server's RSS every second and reads the pool counters from /metrics before and
 *    after the load phase.
 *
 * "Cold-actor latency" is the latency of requests to a tenant that is not among the P tenants most
 * recently requested by this client (a client-side mirror of the server's LRU: with one client the
 * two agree up to in-flight reordering).
 *
 * Prints the figures, writes bench/results/tenants-<timestamp>.json and .html (report.ts). Exit
 * code 1 when any token was wrong or any request failed, 2 when the bench itself failed.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { commandLine, defineCommand } from './cli.js';
import { measure } from './load.js';
import { memoryOf } from './probes.js';
import { killAllChildren, removeDir, startServer, type ServerProcess } from './processes.js';
import { esc, htmlPage, pre, saveResults, stamp } from './report.js';
import { seedFleet } from './seed.js';
import { createMigratedDatabase, purgeRedisPrefix } from './services.js';
import { FleetTraffic, PG_SERVER, REDIS_URL, RecentTenants, closeHttpAgent, multiTenantEnv, newRedisPrefix, poolCounters, poolDelta, send, shuffledOrder, stringField, tenantIssuer, zipf } from './tenant-fleet.js';

const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ZIPF_S = 1.1;

const COMMAND = defineCommand({
  usage: 'usage: node dist/bench/multitenant-load.js [options]        (npm run bench:tenants -- [options])',
  flags: {
    tenants: { kind: 'number', help: 'tenants seeded, each with its keys and one client_credentials client', default: 1000, smoke: 50 },
    seconds: { kind: 'number', help: 'seconds of load', meta: '<s>', default: 30, smoke: 2, min: 0.5, integer: false },
    concurrency: { kind: 'number', help: 'concurrent keep-alive connections', default: 32, smoke: 8 },
    pool: { kind: 'number', help: 'MULTI_TENANCY_PROVIDER_POOL_MAX_SIZE', default: 50, smoke: 10 },
    batch: { kind: 'number', help: 'parallel seeding transactions', default: 20 },
    results: { kind: 'string', help: 'where tenants-<timestamp>.json and .html go', meta: '<dir>', default: join(PROJECT_ROOT, 'bench', 'results') },
  },
  smoke: 'quick check: 50 tenants, pool 10, 8 connections, 2 s (explicit flags still win)',
});

const mib = (bytes: number) => (bytes / 1048576).toFixed(1);
const rssOf = (pid: number) => memoryOf(pid)?.rss ?? NaN;

async function main(): Promise<number> {
  const opts = commandLine(COMMAND, process.argv.slice(2));
  if (typeof opts === 'number') return opts;
  const { tenants: TENANTS, seconds: SECONDS, concurrency: CONCURRENCY, pool: POOL, batch: BATCH } = opts;
  const started = new Date();
  const db = await createMigratedDatabase('svc_bench_mt', PG_SERVER);
  const prefix = newRedisPrefix('mt');
  const encryptionKey = randomBytes(32).toString('base64');
  let server: ServerProcess | undefined;
  try {
    const env = (port: number) => multiTenantEnv({ port, nodeEnv: 'development', databaseUrl: db.url, redisPrefix: prefix, encryptionKey, poolMaxSize: POOL });
    // 1. Tenants and their clients, through the product's storage layer (seed.ts).
    const run = randomBytes(2).toString('hex');
    const seeded = await seedFleet({ databaseUrl: db.url, productEnv: env(3000), encryptionKey, tenants: TENANTS, concurrency: BATCH, slugPrefix: `t${run}-` });
    server = await startServer({ name: 'product', script: fileURLToPath(new URL('../src/main.js', import.meta.url)), readyPath: '/healthz', env }, 60_000);
    const pid = server.pid;
    const port = Number(new URL(server.baseUrl).port);
    const rssIdle = rssOf(pid);
    const tenants = seeded.tenants;
    // The issuer formula, checked once against discovery.
    const first = tenants[0]!;
    const disco = await send(port, 'GET', '/oidc/v1/.well-known/openid-configuration', { tenant: first.slug });
    const discoIssuer = stringField(disco.json, 'issuer');
    if (discoIssuer !== tenantIssuer(first.slug, port)) throw new Error(`issuer formula wrong: ${discoIssuer} != ${tenantIssuer(first.slug, port)}`);
    const rssAfterSetup = rssOf(pid);

    // 2. Load: every answer checked, header and subdomain addressing alternately.
    const before = await poolCounters(port);
    const rank = zipf(TENANTS, ZIPF_S);
    // Zipf ranks map to a shuffled tenant order, so the hot tenants are not just the first created.
    const order = shuffledOrder(TENANTS);
    const traffic = new FleetTraffic({ port, tenants, pick: () => order[rank()]!, recent: new RecentTenants(POOL), checkEvery: 1, addressing: 'alternate' });
    const m = await measure(server, traffic.spec(), { connections: CONCURRENCY, duration: SECONDS, title: 'bench:tenants', rssSampleMs: 1000 });
    const after = await poolCounters(port);

    const answered = m.statusCodes['200'] ?? 0;
    const crossTenant = traffic.wrong;
    const errors: Record<string, number> = { ...traffic.failuresByKind };
    if (m.errors > 0) errors[`network (${m.timeouts} timeouts)`] = m.errors;
    const errorCount = m.errors + m.unexpected;
    const { hits, misses, evictions } = poolDelta(before, after);
    const top = [...traffic.perTenant].sort((a, b) => b - a);
    const cold = m.tagged?.cold;
    const rssEnd = m.rssBytes ?? NaN;
    const rssMin = Math.min(m.rssWindow?.min ?? rssEnd, rssEnd);
    const rssMax = Math.max(m.rssWindow?.max ?? rssEnd, rssEnd);
    const errorLines = server.logs().errorLines;
    const lines = [
      `multi-tenant load: ${TENANTS} tenants, pool max ${POOL}, Zipf s=${ZIPF_S}, ${CONCURRENCY} connections, ${SECONDS} s (header and subdomain alternately)`,
      `setup: ${TENANTS} tenants + ${TENANTS} clients seeded in ${seeded.seconds.toFixed(1)} s through the product's storage layer (${BATCH} in parallel; key pairs: a pool of ${seeded.keyPool} triples shared between tenants, sealed per tenant)`,
      `tokens: ${answered} in ${m.seconds.toFixed(1)} s = ${(answered / m.seconds).toFixed(0)} tokens/s; latency p50 ${m.latency.p50.toFixed(1)} ms, p99 ${m.latency.p99.toFixed(1)} ms, max ${m.latency.max.toFixed(1)} ms`,
      `tenants hit: ${traffic.touched()}/${TENANTS}; busiest tenant ${top[0]} requests (${(((top[0] ?? 0) / Math.max(1, answered)) * 100).toFixed(1)} %), top 50 tenants ${((top.slice(0, 50).reduce((a, b) => a + b, 0) / Math.max(1, answered)) * 100).toFixed(1)} %`,
      `cold actor (tenant not among the ${POOL} most recently requested): ${cold?.requests ?? 0} requests, p50 ${(cold?.latency.p50 ?? NaN).toFixed(1)} ms, p99 ${(cold?.latency.p99 ?? NaN).toFixed(1)} ms`,
      // A request that finds its tenant's actor still being created waits for it and counts as
      // neither hit nor miss (src/tenancy/pool.ts); every request resolves its tenant once.
      `pool during load: hits ${hits}, misses ${misses}, joined an in-flight creation ~${Math.max(0, m.requests + m.errors - hits - misses)}, hit rate ${((hits / Math.max(1, hits + misses)) * 100).toFixed(1)} % of hits+misses, evictions ${JSON.stringify(evictions)}, size at end ${after.size}`,
      `server RSS: idle ${mib(rssIdle)} MiB, after setup ${mib(rssAfterSetup)} MiB; during load min ${mib(rssMin)} MiB, max ${mib(rssMax)} MiB, last ${mib(rssEnd)} MiB (${(m.rssWindow?.samples ?? 0) + 1} samples)`,
      `server CPU: ${m.cpuMicrosPerRequest ?? '-'} µs/req (all threads); other processes ${m.otherCpuPercentOfCore}% of a core`,
      `errors: ${errorCount}${errorCount ? ` ${JSON.stringify(errors)}` : ''}; server error log lines: ${errorLines}`,
      `cross-tenant answers (iss or client_id not the tenant's): ${crossTenant} of ${traffic.checked} checked`,
      `total run time ${((Date.now() - started.getTime()) / 1000).toFixed(0)} s`,
    ];
    if (crossTenant) lines.push(...traffic.wrongExamples.map((w) => `  wrong answer: ${w}`));
    if (errorLines) lines.push('last server log lines:', ...server.logs().tail.slice(-10));
    const ok = crossTenant === 0 && errorCount === 0;
    const report = { startedAt: started.toISOString(), finishedAt: new Date().toISOString(), ok, options: opts, seeding: { seconds: seeded.seconds, keyPool: seeded.keyPool }, rss: { idleBytes: rssIdle, afterSetupBytes: rssAfterSetup }, pool: { hits, misses, evictions, sizeAtEnd: after.size }, crossTenant, errors, measurement: m };
    const title = `svc bench:tenants ${report.startedAt}: ${TENANTS} tenants, pool ${POOL}`;
    const saved = await saveResults(opts.results, `tenants-${stamp(report.startedAt)}`, report, htmlPage(title, `<h1>${esc(title)}</h1>\n${pre(lines.join('\n'))}`));
    lines.push(`results: ${saved.json}`, `         ${saved.html}`);
    process.stdout.write(`${lines.join('\n')}\n`);
    return ok ? 0 : 1;
  } finally {
    await server?.stop();
    if (server) await removeDir(server.dir);
    closeHttpAgent();
    await db.drop().catch(() => undefined);
    await purgeRedisPrefix(REDIS_URL, prefix).catch(() => undefined);
  }
}

process.once('SIGINT', () => {
  killAllChildren();
  process.exit(130);
});

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    killAllChildren();
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(2);
  },
);
