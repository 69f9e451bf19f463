/**
 * `npm run bench:signing`: where should JWT signing run, off the event loop? Compares, in one
 * process and without HTTP, N concurrent signers (default 50, like the load runs' connections):
 *   - libuv:   crypto.sign with a callback, which runs on libuv's threadpool (what src/keys/jwt.ts does);
 *   - batched: the product's ES256/EdDSA path (src/keys/batch-signer.ts): the signatures of one
 *              event-loop turn sent together to two worker threads, one message each way;
 *   - piscina: a Piscina pool (os.availableParallelism() threads) signing synchronously in workers;
 *   - jose:    jose 6's CompactSign (WebCrypto, also on the libuv threadpool), what oidc-provider uses;
 *   - inline:  synchronous crypto.sign on the event loop (the reference that blocks it; each
 *              signature in its own setImmediate, as requests would be).
 * For each it reports signatures/s, latency p50/p99 per signature, process CPU µs per signature
 * (all threads, process.cpuUsage) and the event-loop delay p99 meanwhile. `--work <µs>` adds that
 * much busy event-loop work before each signature, as a request would (a client_credentials token
 * spends ~35-40 µs there): with the event loop busy, libuv's threads go idle between jobs and each
 * job pays a wake-up, which an idle loop of signatures alone does not show.
 *   node dist/bench/signing.js [--duration 3] [--concurrency 50] [--algs RS256,ES256,EdDSA] [--work 35] [--json file]   (--help)
 */
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { CompactSign } from 'jose';
import { Piscina } from 'piscina';
import { commandLine, defineCommand } from './cli.js';
import { round, table } from './report.js';
import type { SignTask } from './signing-worker.js';
import { BatchSigner, SIGNER_WORKER_FILE } from '../src/keys/batch-signer.js';

type Alg = SignTask['alg'];
type Route = 'libuv' | 'batched' | 'piscina' | 'jose' | 'inline';
type Signer = (input: Buffer) => Promise<unknown>;

interface Row {
  alg: Alg;
  route: Route;
  signaturesPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  cpuMicrosPerSignature: number;
  eventLoopP99Ms: number;
}

const ELD_RESOLUTION_MS = 10;

function keyFor(alg: Alg): KeyObject {
  if (alg === 'RS256') return generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  if (alg === 'ES256') return generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  return generateKeyPairSync('ed25519').privateKey;
}

const hashOf = (alg: Alg) => (alg === 'EdDSA' ? null : 'sha256');

/** A JWS signing input of the size of the product's access tokens. */
function signingInput(): Buffer {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  return Buffer.from(`${b64({ alg: 'RS256', typ: 'at+jwt', kid: 'k'.repeat(43) })}.${b64({ iss: 'http://localhost:3000/oidc/v1', sub: 'c'.repeat(22), aud: 'urn:svc:api:v1', iat: now, exp: now + 3600, jti: 'j'.repeat(22), client_id: 'c'.repeat(22), scope: 'svc:clients:read' })}`);
}

/** `concurrency` loops signing back to back for `seconds`; latency, CPU and event-loop delay recorded. */
async function drive(signer: Signer, seconds: number, concurrency: number, workMicros: number): Promise<Omit<Row, 'alg' | 'route'>> {
  const input = signingInput();
  const latencies: number[] = [];
  const eld = monitorEventLoopDelay({ resolution: ELD_RESOLUTION_MS });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  eld.enable();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const s = performance.now();
        for (const until = s + workMicros / 1000; performance.now() < until; );
        await signer(input);
        latencies.push(performance.now() - s);
      }
    }),
  );
  eld.disable();
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)] ?? 0;
  return {
    signaturesPerSecond: Math.round(latencies.length / elapsed),
    p50Ms: round(at(0.5)),
    p99Ms: round(at(0.99)),
    cpuMicrosPerSignature: round((cpu.user + cpu.system) / latencies.length, 1),
    // Node 20's histogram records whole timer intervals, period included (see probes.ts).
    eventLoopP99Ms: round(Math.max(0, eld.percentile(99) / 1e6 - ELD_RESOLUTION_MS)),
  };
}

const ALGS: readonly Alg[] = ['RS256', 'ES256', 'EdDSA'];

const COMMAND = defineCommand({
  usage: 'usage: node dist/bench/signing.js [options]        (npm run bench:signing -- [options])',
  flags: {
    duration: { kind: 'number', help: 'measured seconds per algorithm and route (after a warm-up of at most 0.5 s)', meta: '<s>', default: 3, min: 0.1, integer: false },
    concurrency: { kind: 'number', help: 'concurrent signers', default: 50 },
    work: { kind: 'number', help: 'busy event-loop µs before each signature (a request around it)', meta: '<µs>', default: 0 },
    algs: { kind: 'names', help: 'algorithms', default: ALGS, choices: ALGS },
    json: { kind: 'string', help: 'also write the rows and the environment to this JSON file', meta: '<file>', default: '' },
  },
});

const isAlg = (a: string): a is Alg => (ALGS as readonly string[]).includes(a);

async function main(): Promise<number> {
  const values = commandLine(COMMAND, process.argv.slice(2));
  if (typeof values === 'number') return values;
  const seconds = values.duration;
  const concurrency = values.concurrency;
  const workMicros = values.work;
  const batcher = new BatchSigner(SIGNER_WORKER_FILE, 2);
  const algs = values.algs.filter(isAlg);
  const keys = new Map(algs.map((alg) => [alg, keyFor(alg)] as const));
  const threads = availableParallelism();
  const pool = new Piscina({
    filename: fileURLToPath(new URL('./signing-worker.js', import.meta.url)),
    minThreads: threads,
    maxThreads: threads,
    workerData: { keys: Object.fromEntries([...keys].map(([alg, k]) => [alg, k.export({ format: 'pem', type: 'pkcs8' }).toString()])) },
  });
  const rows: Row[] = [];
  try {
    for (const alg of algs) {
      const key = keys.get(alg)!;
      const jose = alg === 'EdDSA' ? 'Ed25519' : alg;
      const signers: Record<Route, Signer> = {
        libuv: (input) => new Promise((resolve, reject) => sign(hashOf(alg), input, { key, dsaEncoding: 'ieee-p1363' }, (err, sig) => (err ? reject(err) : resolve(sig)))),
        batched: (input) => batcher.sign(hashOf(alg), input.toString('latin1'), key),
        piscina: (input) => pool.run({ alg, input } satisfies SignTask),
        jose: (input) => new CompactSign(input).setProtectedHeader({ alg: jose }).sign(key),
        // Yields to the event loop between signatures, so its delay probe can see the blocking.
        inline: (input) => new Promise((resolve) => setImmediate(() => resolve(sign(hashOf(alg), input, { key, dsaEncoding: 'ieee-p1363' })))),
      };
      for (const route of Object.keys(signers) as Route[]) {
        await drive(signers[route], Math.min(0.5, seconds), concurrency, workMicros); // warm-up (JIT, threads, pool)
        const r = { alg, route, ...(await drive(signers[route], seconds, concurrency, workMicros)) };
        rows.push(r);
        process.stderr.write(`  ${alg.padEnd(6)} ${route.padEnd(8)} ${String(r.signaturesPerSecond).padStart(7)}/s  p50 ${r.p50Ms} ms  p99 ${r.p99Ms} ms  ${r.cpuMicrosPerSignature} µs CPU  event loop p99 ${r.eventLoopP99Ms} ms\n`);
      }
    }
  } finally {
    await pool.destroy();
  }
  const rendered = table(
    ['alg', 'route', 'signatures/s', 'p50 ms', 'p99 ms', 'CPU µs/signature', 'event-loop p99 ms'],
    rows.map((r) => [r.alg, r.route, r.signaturesPerSecond.toLocaleString('en-US'), String(r.p50Ms), String(r.p99Ms), String(r.cpuMicrosPerSignature), String(r.eventLoopP99Ms)]),
    2,
  );
  const env = { node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model, piscinaThreads: threads, concurrency, seconds, workMicros, loadavg: loadavg().map((n) => round(n)) };
  process.stdout.write(`${rendered}\n\n${concurrency} concurrent signers, ${seconds} s each, ${workMicros} µs of event-loop work before each; ${env.cpus} CPUs, Node ${env.node}, Piscina ${threads} threads, libuv threadpool ${process.env.UV_THREADPOOL_SIZE ?? 4} threads; load average ${env.loadavg.join(' ')}\n`);
  if (values.json) await writeFile(values.json, JSON.stringify({ environment: env, rows }, null, 2) + '\n');
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench:signing: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
