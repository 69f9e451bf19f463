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
 * Exit code 1 when any token was wrong or any request failed.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { migratePostgres } from '../src/storage/postgresql/migrate.js';

const HOST = '127.0.0.1';
const PG_SERVER = process.env.BENCH_PG_SERVER ?? 'postgres://postgres@127.0.0.1:5432';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const BOOTSTRAP_ID = 'bench-bootstrap';
const BOOTSTRAP_SECRET = randomBytes(24).toString('base64url');
const RESOURCE = 'urn:svc:api:v1';
const SCOPE = 'svc:stats:read';

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

// ---------------------------------------------------------------------------------------------

interface Res {
  status: number;
  text: string;
  json: any;
}

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

function send(port: number, method: string, path: string, o: { tenant?: string; sub?: string; token?: string; auth?: string; body?: unknown; form?: Record<string, string> } = {}): Promise<Res> {
  const headers: Record<string, string> = { host: o.sub ? `${o.sub}.localhost:${port}` : `localhost:${port}` };
  if (o.tenant) headers['x-tenant-id'] = o.tenant;
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.auth) headers.authorization = o.auth;
  let payload: string | undefined;
  if (o.form) {
    payload = new URLSearchParams(o.form).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  } else if (o.body !== undefined) {
    payload = JSON.stringify(o.body);
    headers['content-type'] = 'application/json';
  }
  if (payload !== undefined) headers['content-length'] = String(Buffer.byteLength(payload));
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: HOST, port, method, path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, text, json });
      });
    });
    req.setTimeout(30_000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(payload);
  });
}

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => (port ? resolve(port) : reject(new Error('no port'))));
    });
  });
}

function rssKiB(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

/** Zipf(s) over ranks 1..n: a cumulative table and binary search. */
function zipf(n: number, s: number): () => number {
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

const pct = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN);

function metric(text: string, name: string): number {
  const re = new RegExp(`^${name.replace(/[{}"]/g, (c) => `\\${c}`)} (\\S+)$`, 'm');
  return Number(re.exec(text)?.[1] ?? 0);
}

interface PoolCounters {
  size: number;
  hits: number;
  misses: number;
  evictions: Record<string, number>;
}

async function poolCounters(port: number): Promise<PoolCounters> {
  const text = (await send(port, 'GET', '/metrics')).text;
  const evictions: Record<string, number> = {};
  for (const reason of ['lru', 'idle', 'suspended', 'deleted', 'shutdown']) evictions[reason] = metric(text, `svc_tenant_pool_evictions_total{reason="${reason}"}`);
  return { size: metric(text, 'svc_tenant_pool_size'), hits: metric(text, 'svc_tenant_pool_hits_total'), misses: metric(text, 'svc_tenant_pool_misses_total'), evictions };
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const started = Date.now();
  const dbName = `svc_bench_mt_${randomBytes(5).toString('hex')}`;
  const prefix = `svcbench-mt-${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(dbName)}`);
  await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(dbName)} SET synchronous_commit = off`);
  const dbUrl = `${PG_SERVER}/${dbName}`;
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-mt-'));
  const port = await freePort();
  const script = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'main.js');
  let child: ReturnType<typeof spawn> | undefined;
  const tail: string[] = [];
  let errorLines = 0;
  try {
    await migratePostgres(dbUrl);
    child = spawn(process.execPath, [script], {
      cwd: dir,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? dir,
        NODE_ENV: 'development',
        HOST,
        PORT: String(port),
        MULTI_TENANCY_ENABLED: 'true',
        MULTI_TENANCY_PROVIDER_POOL_MAX_SIZE: String(POOL),
        STORAGE_ADAPTER: 'postgresql',
        STORAGE_POSTGRESQL_URL: dbUrl,
        REDIS_URL,
        REDIS_KEY_PREFIX: prefix,
        FEATURES_METRICS_ENABLED: 'true',
        SVC_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        SVC_BOOTSTRAP_CLIENT_ID: BOOTSTRAP_ID,
        SVC_BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP_SECRET,
        SECURITY_LOGGING_LEVEL: 'warn',
        SECURITY_LOGGING_PRETTY_PRINT: 'false',
        SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false',
        // Setup makes 2N Management calls through the `_platforms` bucket.
        SECURITY_RATE_LIMIT_READ: '1000000',
        SECURITY_RATE_LIMIT_WRITE: '1000000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (d: Buffer) => {
      for (const line of d.toString().split('\n')) {
        if (!line.trim()) continue;
        if (/"level":(5|6)\d/.test(line)) errorLines++;
        tail.push(line);
        if (tail.length > 30) tail.shift();
      }
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    const pid = child.pid!;
    for (let end = Date.now() + 60_000; ; ) {
      if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}:\n${tail.join('\n')}`);
      const ok = await send(port, 'GET', '/healthz').then((r) => r.status === 200, () => false);
      if (ok) break;
      if (Date.now() > end) throw new Error('server not ready in 60 s');
      await sleep(50);
    }
    const rssIdle = rssKiB(pid);

    // 1. Tenants and their clients.
    const platform = async (scope: string) => {
      const r = await send(port, 'POST', '/oidc/v1/token', { tenant: '_platforms', auth: basic(BOOTSTRAP_ID, BOOTSTRAP_SECRET), form: { grant_type: 'client_credentials', resource: RESOURCE, scope } });
      if (r.status !== 200) throw new Error(`platform token: ${r.status} ${r.text}`);
      return r.json.access_token as string;
    };
    const tenantsToken = await platform('svc:tenants:write');
    const clientsToken = await platform('svc:cross-tenant:write svc:clients:write');
    const run = randomBytes(2).toString('hex');
    const tenants = Array.from({ length: TENANTS }, (_, i) => ({ slug: `t${i}-${run}`, id: '', secret: '', issuer: `http://t${i}-${run}.localhost:${port}/oidc/v1` }));
    const setupStart = Date.now();
    for (let i = 0; i < tenants.length; i += BATCH) {
      await Promise.all(
        tenants.slice(i, i + BATCH).map(async (t) => {
          const created = await send(port, 'POST', '/api/v1/tenants', { token: tenantsToken, body: { slug: t.slug, display_name: `Bench ${t.slug}` } });
          if (created.status !== 201) throw new Error(`tenant ${t.slug}: ${created.status} ${created.text}`);
          const client = await send(port, 'POST', '/api/v1/clients', { tenant: t.slug, token: clientsToken, body: { client_name: 'bench cc', grant_types: ['client_credentials'], scope: SCOPE } });
          if (client.status !== 201) throw new Error(`client in ${t.slug}: ${client.status} ${client.text}`);
          t.id = client.json.data.client_id;
          t.secret = client.json.data.client_secret;
        }),
      );
    }
    const setupSeconds = (Date.now() - setupStart) / 1000;
    // The issuer formula, checked once against discovery.
    const disco = await send(port, 'GET', '/oidc/v1/.well-known/openid-configuration', { tenant: tenants[0]!.slug });
    if (disco.json?.issuer !== tenants[0]!.issuer) throw new Error(`issuer formula wrong: ${disco.json?.issuer} != ${tenants[0]!.issuer}`);
    const rssAfterSetup = rssKiB(pid);

    // 2. Load.
    const before = await poolCounters(port);
    const pick = zipf(TENANTS, ZIPF_S);
    // Zipf ranks map to a shuffled tenant order, so the hot tenants are not just the first created.
    const order = tenants.map((_, i) => i).sort(() => Math.random() - 0.5);
    const lru = new Map<number, true>();
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
        const cold = !lru.has(idx);
        lru.delete(idx);
        lru.set(idx, true);
        if (lru.size > POOL) lru.delete(lru.keys().next().value!);
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
        if (r.status !== 200 || typeof r.json?.access_token !== 'string') {
          const k = `${r.status} ${r.json?.error ?? r.json?.type ?? r.text.slice(0, 60)}`;
          errors[k] = (errors[k] ?? 0) + 1;
          continue;
        }
        const claims = claimsOf(r.json.access_token);
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
    const hits = after.hits - before.hits;
    const misses = after.misses - before.misses;
    const evictions = Object.fromEntries(Object.entries(after.evictions).map(([k, v]) => [k, v - (before.evictions[k] ?? 0)]).filter(([, v]) => (v as number) > 0));
    const errorCount = Object.values(errors).reduce((a, b) => a + b, 0);
    const touched = perTenant.filter((n) => n > 0).length;
    const top = [...perTenant].sort((a, b) => b - a);
    const mib = (kib: number) => (kib / 1024).toFixed(1);
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
    process.stdout.write(`${lines.join('\n')}\n`);
    return crossTenant === 0 && errorCount === 0 ? 0 : 1;
  } finally {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000)]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    agent.destroy();
    await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(dbName)} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
    const r = new Redis(REDIS_URL);
    try {
      let cursor = '0';
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length) await r.unlink(...keys);
      } while (cursor !== '0');
    } finally {
      r.disconnect();
    }
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(2);
  },
);
