/**
 * What the in-process A/B benches share (token-path-ab.ts, refresh-path-ab.ts, login-path-ab.ts):
 * a build's app started inside this process on its own SQLite file, its request handler called
 * directly (no uWS, no network), the main thread's CPU time read from /proc, and batches of two
 * builds alternated so a busy moment of the shared machine hits both.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePort } from './processes.js';

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}
export type Handle = (req: Record<string, unknown>) => Promise<Answer>;

export const BOOTSTRAP = { client_id: 'bench-admin', client_secret: randomBytes(24).toString('base64url') };

/** The main thread's CPU time so far, µs (the RSA signature on libuv's pool is not in it). */
export const mainThreadMicros = (): number => Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

let seq = 0;
/** A form POST to the token endpoint as HttpServer hands it to the app's handler. */
export function tokenRequest(authorization: string, form: string): Record<string, unknown> {
  return {
    id: `ab-${seq++}`,
    method: 'POST',
    path: '/oidc/v1/token',
    rawQuery: '',
    headers: { host: 'localhost:3000', authorization, 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(form.length) },
    ip: '127.0.0.1',
    body: Buffer.from(form),
    params: {},
  };
}

/** The apps' data directories, removed when runMain ends (a refresh run's database grows to ~200 MB). */
const dirs: string[] = [];

export interface InProcessApp {
  handle: Handle;
  /** The app's base URL when started with `listen` (to prepare credentials over HTTP). */
  baseUrl: string;
}

/**
 * The app of the build at `root` (a checkout with its `dist/` built), production defaults as the
 * bench starts the product, on a new SQLite file; `listen` binds a free loopback port too.
 */
export async function startInProcess(root: string, { listen = false, env = {} }: { listen?: boolean; env?: Record<string, string> } = {}): Promise<InProcessApp> {
  const dir = mkdtempSync(join(tmpdir(), 'path-ab-'));
  dirs.push(dir);
  // With `listen`, a known port: the issuer the sign-in pages redirect to carries the configured one.
  const port = listen ? await freePort() : 0;
  Object.assign(process.env, {
    NODE_ENV: 'production',
    STORAGE_SQLITE_PATH: join(dir, 'svc.db'),
    SECURITY_LOGGING_FILE_LOGGING_DIRECTORY: join(dir, 'logs'),
    SECURITY_LOGGING_LEVEL: 'warn',
    SVC_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    SVC_BOOTSTRAP_CLIENT_ID: BOOTSTRAP.client_id,
    SVC_BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP.client_secret,
    FEATURES_METRICS_ENABLED: 'true',
    PORT: String(port),
    HOST: '127.0.0.1',
    ...env,
  });
  const dist = (path: string) => pathToFileURL(resolve(root, 'dist', path)).href;
  const { startApp } = (await import(dist('src/app.js'))) as { startApp(config: unknown, opts: { listen: boolean }): Promise<{ server: unknown }> };
  const { loadConfig } = (await import(dist('src/config/index.js'))) as { loadConfig(): unknown };
  const app = await startApp(loadConfig(), { listen });
  // HttpServer keeps the handler it was built with; nothing else reaches it without a socket.
  const server = app.server as { boundPort: number; opts: { handle: Handle } };
  return { handle: server.opts.handle, baseUrl: `http://127.0.0.1:${server.boundPort}` };
}

/**
 * Warms both up, then alternates `rounds` batches of `size` (`batch` returns main-thread µs per
 * request) and prints each build's median and the median per-round ratio B/A.
 */
export async function alternate<T>(labels: [string, string], a: T, b: T, batch: (x: T, count: number) => Promise<number>, rounds: number, size: number, unit = 'request'): Promise<void> {
  await batch(a, 2000); // warm-up: JIT, caches, the libuv pool
  await batch(b, 2000);
  const perA: number[] = [];
  const perB: number[] = [];
  for (let r = 0; r < rounds; r++) {
    perA.push(await batch(a, size));
    perB.push(await batch(b, size));
  }
  const f = (x: number) => x.toFixed(1);
  console.log(`A ${labels[0]}: main-thread µs/${unit} median ${f(median(perA))}, min ${f(Math.min(...perA))}`);
  console.log(`B ${labels[1]}: main-thread µs/${unit} median ${f(median(perB))}, min ${f(Math.min(...perB))}`);
  console.log(`B/A, median of ${rounds} rounds of ${size}: ${median(perB.map((x, i) => x / perA[i]!)).toFixed(3)}`);
}

/**
 * `measure` (one batch; returns main-thread µs per request) under V8's profiler (100 µs sampling),
 * started after preparation and warm-up so the profile holds the requests alone; prints the
 * figure and the profile's path (`<name>-<time>.cpuprofile` in the temp directory).
 */
export async function profileBatch(name: string, unit: [one: string, many: string], count: number, measure: () => Promise<number>): Promise<void> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  const perRequest = await measure();
  const { profile } = await session.post('Profiler.stop');
  const out = join(tmpdir(), `${name}-${Date.now()}.cpuprofile`);
  writeFileSync(out, JSON.stringify(profile));
  console.log(`main-thread µs/${unit[0]} ${perRequest.toFixed(1)} (profiler on), ${count} ${unit[1]}; profile: ${out}`);
}

/** What an in-process A/B bench supplies to abMain. */
export interface AbBench<B> {
  /** The script's name, for its usage line. */
  script: string;
  /** The request's name, singular and plural, as the figures print it. */
  unit: [one: string, many: string];
  /** Rounds and batch size when the command line gives none. */
  rounds: number;
  size: number;
  /** Requests before the profiler starts (CPU_PROF_ROOT). */
  warmup: number;
  /** One build, prepared. */
  buildOf(root: string): Promise<B>;
  /** `count` requests; main-thread µs per request. */
  batch(build: B, count: number): Promise<number>;
}

/**
 * The command line of an in-process A/B bench: `<rootA> <rootB> [rounds] [batch]` alternates two
 * builds (one build once when both roots are the same); `CPU_PROF_ROOT=<root>` profiles that build
 * alone, rounds x batch requests.
 */
export function abMain<B>(bench: AbBench<B>): void {
  runMain(async () => {
    const [rootA, rootB, rounds = String(bench.rounds), size = String(bench.size)] = process.argv.slice(2);
    const profileRoot = process.env.CPU_PROF_ROOT;
    if (profileRoot) {
      const count = Number(rounds) * Number(size);
      const build = await bench.buildOf(profileRoot);
      await bench.batch(build, bench.warmup);
      return profileBatch(bench.script.replace(/-ab$/, ''), bench.unit, count, () => bench.batch(build, count));
    }
    if (!rootA || !rootB) throw new Error(`usage: node dist/bench/${bench.script}.js <rootA> <rootB> [rounds] [batch]`);
    const a = await bench.buildOf(rootA);
    const b = resolve(rootB) === resolve(rootA) ? a : await bench.buildOf(rootB);
    await alternate([rootA, rootB], a, b, bench.batch, Number(rounds), Number(size), bench.unit[0]);
  });
}

/** `count` calls of `start`, `inFlight` at a time; resolves once all have finished, rejects on the first failure. */
export function inFlight(count: number, parallel: number, start: (slot: number) => Promise<void>): Promise<void> {
  return new Promise<void>((done, fail) => {
    let started = 0;
    let finished = 0;
    const next = (slot: number): void => {
      started++;
      start(slot).then(() => {
        if (++finished === count) done();
        else if (started < count) next(slot);
      }, fail);
    };
    for (let i = 0; i < Math.min(parallel, count); i++) next(i);
  });
}

/** Exits 0 when `main` resolves, 1 with the error printed when it rejects; the apps' directories go either way. */
export function runMain(main: () => Promise<void>): void {
  const exit = (code: number) => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    process.exit(code);
  };
  main().then(
    () => exit(0),
    (err: unknown) => {
      console.error(err);
      exit(1);
    },
  );
}
