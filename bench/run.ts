/**
 * `npm run bench`: the product and a stock oidc-provider baseline, each a child process in a fresh
 * temp dir, driven by autocannon scenario by scenario (product, then baseline, so slow drifts of
 * the machine hit both alike), with server CPU time per request, memory and event-loop delay read
 * from the servers. Prints the tables and the goals, saves the results as JSON and a
 * self-contained HTML report, and exits non-zero when any request failed, so `npm run bench:smoke`
 * in CI catches breakage. See bench/README.md.
 */
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { opensslWarning } from '../src/keys/openssl-dispatch.js';
import { opensslOfProcess } from './openssl-of-process.js';
import { clockTicksPerSecond } from './cpu.js';
import { argon2Ceiling } from './argon2-ceiling.js';
import { rsaCeiling } from './rsa-ceiling.js';
import { openBackend, type ProductBackend } from './backend.js';
import { evaluateGoals } from './goals.js';
import { send } from './http.js';
import { failures, measure, startBackground, stopBackground, type CompanionProbe, type RunningLoadHandle } from './load.js';
import { parseOptions, type BenchOptions } from './options.js';
import { gitState, round } from './report.js';
import { memoryOf } from './probes.js';
import { killAllChildren, removeDir, startServer, type ServerProcess, type ServerSpec } from './processes.js';
import { renderBackend, renderGoals, renderNotes, renderResources, renderServers, renderTable, saveRunReport, sideFailed, type RunReport, type ScenarioResult, type ServerSummary, type SideResult } from './run-report.js';
import { SCENARIO_NAMES, TARGETS, buildScenarios, type RequestSpec, type Scenario, type Target } from './scenarios.js';
import { PRODUCT_BENCH_SETTINGS, baselineTarget, prepareBaseline, prepareProduct, productTarget } from './targets.js';

const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Sign-in forms posted concurrently in the password login scenarios (Argon2 runs on the cores anyway). */
const LOGIN_CONNECTIONS = 16;
/** How long a server idles after start before its memory is read. */
const IDLE_SETTLE_MS = 2000;

const progress = (msg: string) => process.stderr.write(msg + '\n');

/** The one-off check of a scenario's request, outside the load window (feeds supply and see it too). */
async function checkOnce(server: ServerProcess, spec: RequestSpec): Promise<string | undefined> {
  try {
    // A feed of several steps (silent re-authentication) runs one whole iteration; the last answer is checked.
    const context: Record<string, unknown> = {};
    const steps = spec.feed?.steps ?? 1;
    let res: Awaited<ReturnType<typeof send>> | undefined;
    for (let i = 0; i < steps; i++) {
      const fed = spec.feed?.next(context, i) ?? {};
      const init: { method: string; headers: Record<string, string>; body?: string } = { method: fed.method ?? spec.method, headers: { ...spec.headers, ...fed.headers } };
      const body = fed.body ?? spec.body;
      if (body !== undefined) init.body = body;
      res = await send(server.baseUrl + (fed.path ?? spec.path), init);
      spec.feed?.onResponse?.(res.status, res.body, context, res.location ? { location: res.location } : {}, i);
    }
    return spec.check(res!);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

async function runSide(server: ServerProcess, scenario: Scenario, spec: RequestSpec, target: Target, opts: BenchOptions, companions?: CompanionProbe): Promise<SideResult> {
  const connections = Math.min(scenario.connections ?? opts.connections, opts.connections);
  const checkProblems: string[] = [];
  let background: { label: string; load: RunningLoadHandle } | undefined;
  if (scenario.background) {
    const bg = scenario.background;
    const bgConnections = Math.min(bg.connections, opts.connections);
    await bg.spec.feed?.prepare(bgConnections);
    // Runs through the warm-up and the measured window; stopped right after.
    background = { label: bg.label, load: startBackground(server, bg.spec, { connections: bgConnections, duration: opts.warmup + opts.duration + 30, title: `${scenario.name} background` }) };
  }
  try {
    await spec.feed?.prepare(connections);
    const before = await checkOnce(server, spec);
    if (before) checkProblems.push(`before load: ${before}`);
    const window = { connections, ...(scenario.rate ? { rate: scenario.rate } : {}), ...(background ? { background } : {}) };
    let warmup: SideResult['warmup'];
    if (opts.warmup > 0) {
      await spec.feed?.prepare(connections);
      const w = await measure(server, spec, { ...window, duration: opts.warmup, title: `${scenario.name} ${target} warm-up` });
      warmup = { requests: w.requests, errors: w.errors, unexpected: w.unexpected, starved: w.starved };
    }
    await spec.feed?.prepare(connections);
    const measured = await measure(server, spec, { ...window, duration: opts.duration, title: `${scenario.name} ${target}`, ...(companions ? { companions } : {}) });
    const after = await checkOnce(server, spec);
    if (after) checkProblems.push(`after load: ${after}`);
    const side: SideResult = { measured, checkProblems };
    if (warmup) side.warmup = warmup;
    return side;
  } finally {
    if (background) await stopBackground(background.load);
  }
}

function describeEnvironment(): Record<string, unknown> {
  const version = (pkg: string): string | undefined => {
    try {
      const parsed: unknown = JSON.parse(readFileSync(`${PROJECT_ROOT}node_modules/${pkg}/package.json`, 'utf8'));
      return parsed && typeof parsed === 'object' && 'version' in parsed && typeof parsed.version === 'string' ? parsed.version : undefined;
    } catch {
      return undefined;
    }
  };
  const git = gitState(PROJECT_ROOT);
  return {
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    loadavgAtStart: loadavg(),
    clockTicksPerSecond: clockTicksPerSecond(),
    oidcProvider: version('oidc-provider'),
    autocannon: version('autocannon'),
    gitCommit: git.commit,
    gitDirty: git.dirty,
    productBenchSettings: PRODUCT_BENCH_SETTINGS,
  };
}

/** An upper bound for the whole run; past it the bench kills its children and fails. */
function budgetMs(opts: BenchOptions, windows: number): number {
  const perWindow = opts.warmup + opts.duration + 20; // + checks, preparation, autocannon start/stop, slack
  return (240 + windows * perWindow) * 1000;
}

/**
 * The product twice: a first start on an empty directory (database created, keys generated), then
 * a restart on it, the instance measured. Returns it with both start-up times.
 */
async function startProduct(spec: ServerSpec): Promise<{ server: ServerProcess; coldReadyMs: number }> {
  const cold = await startServer(spec);
  await cold.stop();
  const server = await startServer(spec, 30_000, cold.dir);
  return { server, coldReadyMs: cold.readyMs };
}

async function idleRss(server: ServerProcess): Promise<number | null> {
  await sleep(IDLE_SETTLE_MS);
  return memoryOf(server.pid)?.rss ?? null;
}

/** The product's backend while it is open: closed (scratch database dropped, Redis keys deleted) on every way out. */
let backend: ProductBackend | undefined;

/** Kills the servers, removes the backend's database and keys, exits. */
function abort(code: number): void {
  killAllChildren();
  void (backend?.close() ?? Promise.resolve()).finally(() => process.exit(code));
}

async function main(): Promise<number> {
  const parsed = parseOptions(process.argv.slice(2), process.env, `${PROJECT_ROOT}bench/results`);
  if (typeof parsed === 'number') return parsed;
  const opts = parsed;
  const scenarioCount = opts.only.length || SCENARIO_NAMES.length;

  const watchdog = setTimeout(() => {
    progress(`bench: exceeded its time budget (${budgetMs(opts, scenarioCount * TARGETS.length) / 1000} s); stopping`);
    abort(2);
  }, budgetMs(opts, scenarioCount * TARGETS.length));
  watchdog.unref();

  const startedAt = new Date().toISOString();
  const environment = describeEnvironment();
  const storage = (backend = await openBackend(opts.backend));
  environment.productBackend = storage.info;
  progress(`bench: product storage: ${storage.info.description}`);
  const productDef = productTarget(process.env, storage);
  const baselineDef = baselineTarget();
  if (Object.keys(productDef.overrides).length) environment.productOverrides = productDef.overrides;
  // OpenSSL's RSA routine (README, Tuning): the product sets OPENSSL_ia32cap itself where it helps
  // (AMD Zen 3) unless BENCH_PRODUCT_OPENSSL_ia32cap gives it one; the baseline runs with OpenSSL's
  // default. What the product ran with is read off its process once it is up.
  let productOpenssl = 'default';
  // An empty BENCH_PRODUCT_OPENSSL_ia32cap is not "unset": it turns OpenSSL's CPU extensions off.
  const opensslProblem = opensslWarning({ OPENSSL_ia32cap: productDef.overrides.OPENSSL_ia32cap });
  if (opensslProblem) progress(`bench: WARNING, the product's ${opensslProblem}`);

  const servers: Partial<Record<Target, ServerProcess>> = {};
  try {
    progress('bench: starting the product (first start, then restart) and the baseline');
    const { server: product, coldReadyMs } = await startProduct(productDef.spec);
    servers.product = product;
    productOpenssl = opensslOfProcess(product.pid) ?? 'default';
    environment.productOpenssl = productOpenssl;
    const productIdle = await idleRss(product);
    const baseline = await startServer(baselineDef.spec);
    servers.baseline = baseline;
    const baselineIdle = await idleRss(baseline);
    const byTarget: Record<Target, ServerProcess> = { product, baseline };

    progress('bench: preparing clients, users, sign-in sessions and refresh tokens');
    const loginConnections = Math.min(LOGIN_CONNECTIONS, opts.connections);
    // One signed-in session per connection for silent re-authentication (issue 17's setup).
    const prepared = await prepareProduct(product, productDef, loginConnections, opts.connections);
    const creds = { product: prepared.credentials, baseline: await prepareBaseline(baseline, baselineDef, opts.connections) };
    const scenarios = buildScenarios(creds, prepared.extras).filter((s) => opts.only.length === 0 || opts.only.includes(s.name));

    progress(`bench: ${scenarios.length} scenarios, ${opts.connections} connections, ${opts.warmup ? `${opts.warmup} s warm-up + ` : ''}${opts.duration} s measured each`);
    const results: ScenarioResult[] = [];
    for (const scenario of scenarios) {
      const sides: Partial<Record<Target, SideResult>> = {};
      for (const target of TARGETS) {
        const spec = scenario.request[target];
        if (!spec) continue;
        const side = await runSide(byTarget[target], scenario, spec, target, opts, target === 'product' ? storage.companions : undefined);
        sides[target] = side;
        const m = side.measured;
        const failed = failures(m) + side.checkProblems.length;
        progress(
          `  ${scenario.label.padEnd(40)} ${target.padEnd(8)} ${Math.round(m.rps).toString().padStart(6)} req/s  p99 ${m.latency.p99} ms  ` +
            `${m.cpuMicrosPerRequest ?? '-'} µs/req  other CPU ${m.otherCpuPercentOfCore}%${failed > 0 ? `  FAILURES ${failed}` : ''}`,
        );
        await sleep(250); // let sockets close before the next window
      }
      const p = sides.product!;
      const b = sides.baseline;
      const r: ScenarioResult = {
        name: scenario.name,
        label: scenario.label,
        connections: Math.min(scenario.connections ?? opts.connections, opts.connections),
        product: p,
        ratio: b && b.measured.rps > 0 ? round(p.measured.rps / b.measured.rps) : null,
        cpuRatio: b && p.measured.cpuMicrosPerRequest && b.measured.cpuMicrosPerRequest ? round(b.measured.cpuMicrosPerRequest / p.measured.cpuMicrosPerRequest) : null,
      };
      if (b) r.baseline = b;
      if (scenario.rate) r.rate = scenario.rate;
      if (scenario.note) r.note = scenario.note;
      results.push(r);
    }

    // Logins are ~85-90% Argon2, and this VM's Argon2 speed moves during a day: the ceiling measured
    // now (servers idle) is what the login figure is read against.
    if (results.some((r) => r.name === 'password-login')) {
      progress('bench: measuring the Argon2id ceiling (Argon2 alone, servers idle)');
      environment.argon2Ceiling = await argon2Ceiling(opts.smoke ? 1 : 3);
    }
    // Both servers sign once per request on these rows: the signature's own cost bounds their ratio.
    if (results.some((r) => r.name === 'cc-rs256' || r.name === 'refresh')) {
      progress('bench: measuring the RSA-2048 signature alone (servers idle)');
      environment.rsaCeiling = rsaCeiling(opts.smoke ? 0.2 : 1);
    }
    environment.loadavgAtEnd = loadavg();
    const ok = results.every((r) => !sideFailed(r.product) && (!r.baseline || !sideFailed(r.baseline)));
    const summary = (s: ServerProcess, idle: number | null): ServerSummary => ({ pid: s.pid, url: s.baseUrl, readyMs: s.readyMs, idleRssBytes: idle, logs: s.logs() });
    const partial: Omit<RunReport, 'goals'> = {
      startedAt,
      finishedAt: new Date().toISOString(),
      ok,
      options: { duration: opts.duration, warmup: opts.warmup, connections: opts.connections, smoke: opts.smoke, only: opts.only, backend: opts.backend },
      environment,
      servers: { product: { ...summary(product, productIdle), coldReadyMs }, baseline: summary(baseline, baselineIdle) },
      scenarios: results,
    };
    const report: RunReport = { ...partial, goals: evaluateGoals(partial) };
    const { json: file, html } = await saveRunReport(opts.resultsDir, report);

    process.stdout.write(
      `\n${renderBackend(storage.info)}\n\n${renderTable(results)}\n\n${renderResources(results)}\n\n${renderServers(report.servers)}\n\n${renderGoals(report.goals)}\n\n` +
        `${opts.connections} connections (password logins ${loginConnections}), ${opts.duration} s measured after ${opts.warmup} s warm-up; ` +
        `${cpus().length} CPUs, Node ${process.version}, load average ${loadavg().map((n) => n.toFixed(2)).join(' ')}; product OpenSSL RSA: ${productOpenssl}; ` +
        `latency of the expected answers (2xx; 303 for the sign-in form); CPU µs/req = server user+system CPU (all threads) / completed requests; ` +
        `ratio = product/baseline req/s; CPU ratio = baseline/product CPU µs/req; errors = failed requests (connection errors + unexpected statuses + failed checks), product/baseline.\n`,
    );
    const notes = renderNotes(report);
    if (notes) process.stdout.write(notes + '\n');
    process.stdout.write(`results: ${file}\nreport:  ${html}\n${ok ? 'bench: OK' : 'bench: FAILED (see errors above)'}\n`);
    return ok ? 0 : 1;
  } finally {
    for (const target of TARGETS) {
      const server = servers[target];
      if (!server) continue;
      await server.stop();
      if (!opts.keep) await removeDir(server.dir);
      else progress(`bench: kept ${target} directory ${server.dir}`);
    }
    // Also with --keep: the scratch database and keys live only as long as the run.
    await storage.close();
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => abort(130));
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    progress(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    abort(1);
  },
);
