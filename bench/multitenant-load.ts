/**
 * Multi-tenant load (issue 6, "Prove isolation"): `npm run bench:tenants [-- --tenants N --seconds S
 * --concurrency C --pool P]`.
 *
 * Starts the product (dist/src/main.js, a child process of its own, so /proc/<pid>/status measures
 * the server alone) in multi-tenant mode on a fresh migrated PostgreSQL database (127.0.0.1:5432,
 * dropped afterwards) and Redis under a key prefix of its own (deleted afterwards), with
 * MULTI_TENANCY_PROVIDER_POOL_MAX_SIZE=P (50) and the metrics endpoint on. Then:
 *
 * 1. creates N (1,000) tenants through the tenants API with a `_platforms` token, in parallel
 *    batches, and in each a client_credentials client (POST /api/v1/clients addressed to the tenant
 *    with a cross-tenant `_platforms` token);
 * 2. drives client_credentials token requests for S (30) seconds from C concurrent loops, the tenant
 *    of each request drawn from a Zipf distribution (s = 1.1) over the N tenants, alternately
 *    addressed by header (x-tenant-id) and by subdomain (Host: <t>.localhost:<port>);
 * 3. checks EVERY token: its `iss` must be the tenant's issuer and its `client_id` the tenant's
 *    client, otherwise it counts as a cross-tenant answer (must be 0);
 * 4. samples the server's RSS every second and reads the pool counters from /metrics before and
 *    after the load phase.
 *
 * "Cold-actor latency" is the latency of requests to a tenant that is not among the P tenants most
 * recently requested by this client (a client-side mirror of the server's LRU: with one client the
 * two agree up to in-flight reordering).
 *
 * Exit code 1 when any token was wrong or any request failed. The database, Redis prefix, product
 * environment and helpers are shared with `npm run bench:capacity` (tenant-fleet.ts).
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { basicAuth } from './http.js';
import { memoryOf } from './probes.js';
import { removeDir, startServer, type ServerProcess } from './processes.js';
import {
  FLEET_RESOURCE as RESOURCE,
  FLEET_SCOPE as SCOPE,
  RecentTenants,
  claimsOf,
  closeHttpAgent,
  createFleetDatabase,
  multiTenantEnv,
  newRedisPrefix,
  pct,
  poolCounters,
  poolDelta,
  purgeRedisPrefix,
  send,
  shuffledOrder,
  stringField,
  tenantIssuer,
  zipf,
  type Res,
} from './tenant-fleet.js';

const BOOTSTRAP_ID = 'bench-bootstrap';
const BOOTSTRAP_SECRET = randomBytes(24).toString('base64url');

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

const TENANTS = arg('tenants', 1000);
const SECONDS = arg('seconds', 30);
const CONCURRENCY = arg('concurrency', 32);
const POOL = arg('pool', 50);
const BATCH = arg('batch', 20);
const ZIPF_S = 1.1;

const basic = (client_id: string, client_secret: string) => basicAuth({ client_id, client_secret });
/** VmRSS in KiB (NaN when unreadable). */
const rssKiB = (pid: number) => (memoryOf(pid)?.rss ?? NaN) / 1024;

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const started = Date.now();
  const db = await createFleetDatabase('svc_bench_mt');
  const prefix = newRedisPrefix('mt');
  let server: ServerProcess | undefined;
  try {
    server = await startServer(
      {
        name: 'product',
        script: fileURLToPath(new URL('../src/main.js', import.meta.url)),
        readyPath: '/healthz',
        env: (port) => ({
          ...multiTenantEnv({
            port,
            nodeEnv: 'development',
            databaseUrl: db.url,
            redisPrefix: prefix,
            encryptionKey: randomBytes(32).toString('base64'),
            poolMaxSize: POOL,
            bootstrap: { client_id: BOOTSTRAP_ID, client_secret: BOOTSTRAP_SECRET },
          }),
          // Setup makes 2N Management calls through the `_platforms` bucket.
          SECURITY_RATE_LIMIT_READ: '1000000',
          SECURITY_RATE_LIMIT_WRITE: '1000000',
        }),
      },
      60_000,
    );
    const pid = server.pid;
    const port = Number(new URL(server.baseUrl).port);
    const rssIdle = rssKiB(pid);

    // 1. Tenants and their clients.
    const platform = async (scope: string) => {
      const r = await send(port, 'POST', '/oidc/v1/token', { tenant: '_platforms', auth: basic(BOOTSTRAP_ID, BOOTSTRAP_SECRET), form: { grant_type: 'client_credentials', resource: RESOURCE, scope } });
      const token = stringField(r.json, 'access_token');
      if (r.status !== 200 || !token) throw new Error(`platform token: ${r.status} ${r.text}`);
      return token;
    };
    const tenantsToken = await platform('svc:tenants:write');
    const clientsToken = await platform('svc:cross-tenant:write svc:clients:write');
    const run = randomBytes(2).toString('hex');
    const tenants = Array.from({ length: TENANTS }, (_, i) => ({ slug: `t${i}-${run}`, id: '', secret: '', issuer: tenantIssuer(`t${i}-${run}`, port) }));
    const setupStart = Date.now();
    for (let i = 0; i < tenants.length; i += BATCH) {
      await Promise.all(
        tenants.slice(i, i + BATCH).map(async (t) => {
          const created = await send(port, 'POST', '/api/v1/tenants', { token: tenantsToken, body: { slug: t.slug, display_name: `Bench ${t.slug}` } });
          if (created.status !== 201) throw new Error(`tenant ${t.slug}: ${created.status} ${created.text}`);
          const client = await send(port, 'POST', '/api/v1/clients', { tenant: t.slug, token: clientsToken, body: { client_name: 'bench cc', grant_types: ['client_credentials'], scope: SCOPE } });
          const id = stringField(client.json, 'data', 'client_id');
          const secret = stringField(client.json, 'data', 'client_secret');
          if (client.status !== 201 || !id || !secret) throw new Error(`client in ${t.slug}: ${client.status} ${client.text}`);
          t.id = id;
          t.secret = secret;
        }),
      );
    }
    const setupSeconds = (Date.now() - setupStart) / 1000;
    // The issuer formula, checked once against discovery.
    const disco = await send(port, 'GET', '/oidc/v1/.well-known/openid-configuration', { tenant: tenants[0]!.slug });
    const discoIssuer = stringField(disco.json, 'issuer');
    if (discoIssuer !== tenants[0]!.issuer) throw new Error(`issuer formula wrong: ${discoIssuer} != ${tenants[0]!.issuer}`);
    const rssAfterSetup = rssKiB(pid);

    // 2. Load.
    const before = await poolCounters(port);
    const pick = zipf(TENANTS, ZIPF_S);
    // Zipf ranks map to a shuffled tenant order, so the hot tenants are not just the first created.
    const order = shuffledOrder(TENANTS);
    const recent = new RecentTenants(POOL);
    const latencies: number[] = [];
    const coldLatencies: number[] = [];
    const errors: Record<string, number> = {};
    let crossTenant = 0;
    let ok = 0;
    const perTenant = new Uint32Array(TENANTS);
    const rss: number[] = [];
    const sampler = setInterval(() => rss.push(rssKiB(pid)), 1000);
    rss.push(rssKiB(pid));
    const loadStart = performance.now();
    const stopAt = loadStart + SECONDS * 1000;
    let seq = 0;
    const loop = async () => {
      while (performance.now() < stopAt) {
        const idx = order[pick()]!;
        const t = tenants[idx]!;
        const cold = recent.touch(idx);
        const bySub = seq++ % 2 === 1;
        const t0 = performance.now();
        let r: Res;
        try {
          r = await send(port, 'POST', '/oidc/v1/token', { ...(bySub ? { sub: t.slug } : { tenant: t.slug }), auth: basic(t.id, t.secret), form: { grant_type: 'client_credentials', resource: RESOURCE, scope: SCOPE } });
        } catch (err) {
          const k = `network: ${(err as Error).message}`;
          errors[k] = (errors[k] ?? 0) + 1;
          continue;
        }
        const ms = performance.now() - t0;
        const token = stringField(r.json, 'access_token');
        if (r.status !== 200 || token === undefined) {
          const k = `${r.status} ${stringField(r.json, 'error') ?? stringField(r.json, 'type') ?? r.text.slice(0, 60)}`;
          errors[k] = (errors[k] ?? 0) + 1;
          continue;
        }
        const claims = claimsOf(token);
        if (claims.iss !== t.issuer || claims.client_id !== t.id) crossTenant++;
        else ok++;
        perTenant[idx]!++;
        latencies.push(ms);
        if (cold) coldLatencies.push(ms);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, loop));
    const elapsed = (performance.now() - loadStart) / 1000;
    clearInterval(sampler);
    rss.push(rssKiB(pid));
    const after = await poolCounters(port);

    latencies.sort((a, b) => a - b);
    coldLatencies.sort((a, b) => a - b);
    const { hits, misses, evictions } = poolDelta(before, after);
    const errorCount = Object.values(errors).reduce((a, b) => a + b, 0);
    const touched = perTenant.filter((n) => n > 0).length;
    const top = [...perTenant].sort((a, b) => b - a);
    const mib = (kib: number) => (kib / 1024).toFixed(1);
    const errorLines = server.logs().errorLines;
    const lines = [
      `multi-tenant load: ${TENANTS} tenants, pool max ${POOL}, Zipf s=${ZIPF_S}, ${CONCURRENCY} concurrent loops, ${SECONDS} s (header and subdomain alternately)`,
      `setup: ${TENANTS} tenants + ${TENANTS} clients in ${setupSeconds.toFixed(1)} s (batches of ${BATCH})`,
      `tokens: ${ok + crossTenant} in ${elapsed.toFixed(1)} s = ${((ok + crossTenant) / elapsed).toFixed(0)} tokens/s; latency p50 ${pct(latencies, 50).toFixed(1)} ms, p99 ${pct(latencies, 99).toFixed(1)} ms, max ${(latencies.at(-1) ?? NaN).toFixed(1)} ms`,
      `tenants hit: ${touched}/${TENANTS}; busiest tenant ${top[0]} requests (${(((top[0] ?? 0) / Math.max(1, ok + crossTenant)) * 100).toFixed(1)} %), top 50 tenants ${(((top.slice(0, 50).reduce((a, b) => a + b, 0)) / Math.max(1, ok + crossTenant)) * 100).toFixed(1)} %`,
      `cold actor (tenant not among the ${POOL} most recently requested): ${coldLatencies.length} requests, p50 ${pct(coldLatencies, 50).toFixed(1)} ms, p99 ${pct(coldLatencies, 99).toFixed(1)} ms`,
      // A request that finds its tenant's actor still being created waits for it and counts as
      // neither hit nor miss (src/tenancy/pool.ts); every request resolves its tenant once.
      `pool during load: hits ${hits}, misses ${misses}, joined an in-flight creation ~${Math.max(0, ok + crossTenant + errorCount - hits - misses)}, hit rate ${((hits / Math.max(1, hits + misses)) * 100).toFixed(1)} % of hits+misses, evictions ${JSON.stringify(evictions)}, size at end ${after.size}`,
      `server RSS: idle ${mib(rssIdle)} MiB, after setup ${mib(rssAfterSetup)} MiB; during load min ${mib(Math.min(...rss))} MiB, max ${mib(Math.max(...rss))} MiB, last ${mib(rss.at(-1) ?? NaN)} MiB (${rss.length} samples)`,
      `errors: ${errorCount}${errorCount ? ` ${JSON.stringify(errors)}` : ''}; server error log lines: ${errorLines}`,
      `cross-tenant answers (iss or client_id not the tenant's): ${crossTenant}`,
      `total run time ${((Date.now() - started) / 1000).toFixed(0)} s`,
    ];
    if (errorLines) lines.push('last server log lines:', ...server.logs().tail.slice(-10));
    process.stdout.write(`${lines.join('\n')}\n`);
    return crossTenant === 0 && errorCount === 0 ? 0 : 1;
  } finally {
    await server?.stop();
    if (server) await removeDir(server.dir);
    closeHttpAgent();
    await db.drop().catch(() => undefined);
    await purgeRedisPrefix(prefix);
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(2);
  },
);
