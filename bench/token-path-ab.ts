/**
 * The event loop's CPU per client_credentials request, two builds side by side in one process
 * (issue 17): `node dist/bench/token-path-ab.js <rootA> <rootB> [rounds] [batch]`, each root a
 * checkout with its `dist/` built (a copy of dist/ with node_modules linked next to it will do).
 *
 * Why not the load bench: on the shared 2-core machine the req/s and even the CPU µs/req of a
 * 10-second window swing by ±30% with other processes, more than the change being judged. Here
 * each build's app is started without listening and its request handler is called directly (the
 * token path from tenant resolution to the signed answer, without uWS and the network), 50
 * requests in flight, and only the main thread's CPU time is read (/proc/self/task/<pid>/schedstat,
 * nanoseconds): the RSA signature itself runs on libuv's pool and is not counted. Batches of A
 * and B alternate, so a busy moment of the machine hits both; the per-round ratio B/A is the
 * figure to read (swap the roots to check the order does not matter).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

interface Answer {
  status: number;
  body?: unknown;
}
type Handle = (req: Record<string, unknown>) => Promise<Answer>;

const CLIENT_ID = 'bench-admin';
const CLIENT_SECRET = randomBytes(24).toString('base64url');
const FORM = 'grant_type=client_credentials&resource=urn%3Asvc%3Aapi%3Av1&scope=svc%3Aclients%3Aread';
const IN_FLIGHT = 50;

const mainThreadMicros = (): number => Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;

/** The app of one build, started on its own SQLite file, as the bench starts the product. */
async function handlerOf(root: string): Promise<Handle> {
  const dir = mkdtempSync(join(tmpdir(), 'token-ab-'));
  Object.assign(process.env, {
    NODE_ENV: 'production',
    STORAGE_SQLITE_PATH: join(dir, 'svc.db'),
    SECURITY_LOGGING_FILE_LOGGING_DIRECTORY: join(dir, 'logs'),
    SECURITY_LOGGING_LEVEL: 'warn',
    SVC_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    SVC_BOOTSTRAP_CLIENT_ID: CLIENT_ID,
    SVC_BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
    FEATURES_METRICS_ENABLED: 'true',
    PORT: '0',
    HOST: '127.0.0.1',
  });
  const dist = (path: string) => pathToFileURL(resolve(root, 'dist', path)).href;
  const { startApp } = (await import(dist('src/app.js'))) as { startApp(config: unknown, opts: { listen: boolean }): Promise<{ server: unknown }> };
  const { loadConfig } = (await import(dist('src/config/index.js'))) as { loadConfig(): unknown };
  const app = await startApp(loadConfig(), { listen: false });
  // HttpServer keeps the handler it was built with; nothing else reaches it without a socket.
  return (app.server as { opts: { handle: Handle } }).opts.handle;
}

let seq = 0;
const authorization = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`;
function tokenRequest(): Record<string, unknown> {
  return {
    id: `ab-${seq++}`,
    method: 'POST',
    path: '/oidc/v1/token',
    rawQuery: '',
    headers: { host: 'localhost:3000', authorization, 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(FORM.length) },
    ip: '127.0.0.1',
    body: Buffer.from(FORM),
    params: {},
  };
}

/** Main-thread µs per request over `count` requests, IN_FLIGHT at a time; throws on a non-200. */
async function batch(handle: Handle, count: number): Promise<number> {
  const t0 = mainThreadMicros();
  await new Promise<void>((done, fail) => {
    let started = 0;
    let finished = 0;
    const next = (): void => {
      started++;
      handle(tokenRequest()).then((res) => {
        if (res.status !== 200) return fail(new Error(`token request answered ${res.status}: ${String(res.body)}`));
        if (++finished === count) done();
        else if (started < count) next();
      }, fail);
    };
    for (let i = 0; i < Math.min(IN_FLIGHT, count); i++) next();
  });
  return (mainThreadMicros() - t0) / count;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const [rootA, rootB, rounds = '30', size = '500'] = process.argv.slice(2);
  if (!rootA || !rootB) throw new Error('usage: node dist/bench/token-path-ab.js <rootA> <rootB> [rounds] [batch]');
  const a = await handlerOf(rootA);
  const b = resolve(rootB) === resolve(rootA) ? a : await handlerOf(rootB);
  await batch(a, 2000); // warm-up: JIT, caches, the libuv pool
  await batch(b, 2000);
  const perA: number[] = [];
  const perB: number[] = [];
  for (let r = 0; r < Number(rounds); r++) {
    perA.push(await batch(a, Number(size)));
    perB.push(await batch(b, Number(size)));
  }
  const f = (x: number) => x.toFixed(1);
  console.log(`A ${rootA}: main-thread µs/request median ${f(median(perA))}, min ${f(Math.min(...perA))}`);
  console.log(`B ${rootB}: main-thread µs/request median ${f(median(perB))}, min ${f(Math.min(...perB))}`);
  console.log(`B/A, median of ${rounds} rounds of ${size}: ${median(perB.map((x, i) => x / perA[i]!)).toFixed(3)}`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
