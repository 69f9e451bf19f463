/**
 * `npm run bench`: the product and a stock oidc-provider baseline, each a child process in a fresh
 * temp dir, driven by autocannon scenario by scenario (product, then baseline, so slow drifts of
 * the machine hit both alike), with server CPU time per request read from /proc. Prints a
 * side-by-side table, saves the full results as JSON, and exits non-zero when any request failed,
 * so `npm run bench:smoke` in CI catches breakage. See bench/README.md.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { clockTicksPerSecond } from './cpu.js';
import { send } from './http.js';
import { failures, measure } from './load.js';
import { USAGE, parseOptions, type BenchOptions } from './options.js';
import { killAllChildren, removeDir, startServer, type ServerProcess } from './processes.js';
import { renderNotes, renderTable, saveReport, sideFailed, type RunReport, type ScenarioResult, type SideResult } from './report.js';
import { SCENARIO_NAMES, buildScenarios, type RequestSpec, type Scenario, type Target } from './scenarios.js';
import { baselineTarget, prepareBaseline, prepareProduct, productTarget } from './targets.js';

const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TARGETS: readonly Target[] = ['product', 'baseline'];

const round2 = (n: number) => Math.round(n * 100) / 100;
const progress = (msg: string) => process.stderr.write(msg + '\n');

/** The one-off check of a scenario's request, outside the load window. */
async function checkOnce(server: ServerProcess, spec: RequestSpec): Promise<string | undefined> {
  try {
    const init: { method: string; headers: Record<string, string>; body?: string } = { method: spec.method, headers: spec.headers };
    if (spec.body !== undefined) init.body = spec.body;
    return spec.check(await send(server.baseUrl + spec.path, init));
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

async function runSide(server: ServerProcess, scenario: Scenario, target: Target, opts: BenchOptions): Promise<SideResult> {
  const spec = scenario.request[target];
  const checkProblems: string[] = [];
  const before = await checkOnce(server, spec);
  if (before) checkProblems.push(`before load: ${before}`);
  let warmup: SideResult['warmup'];
  if (opts.warmup > 0) {
    const w = await measure(server, spec, { connections: opts.connections, duration: opts.warmup, title: `${scenario.name} ${target} warm-up` });
    warmup = { requests: w.requests, errors: w.errors, non2xx: w.non2xx };
  }
  const measured = await measure(server, spec, { connections: opts.connections, duration: opts.duration, title: `${scenario.name} ${target}` });
  const after = await checkOnce(server, spec);
  if (after) checkProblems.push(`after load: ${after}`);
  const side: SideResult = { measured, checkProblems };
  if (warmup) side.warmup = warmup;
  return side;
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
  const git = (...args: string[]): string | undefined => {
    try {
      // Read-only queries: which commit was measured, and whether the tree had local changes.
      return execFileSync('git', args, { cwd: PROJECT_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return undefined;
    }
  };
  const status = git('status', '--porcelain');
  return {
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    loadavgAtStart: loadavg(),
    clockTicksPerSecond: clockTicksPerSecond(),
    oidcProvider: version('oidc-provider'),
    autocannon: version('autocannon'),
    gitCommit: git('rev-parse', 'HEAD'),
    gitDirty: status === undefined ? undefined : status.length > 0,
  };
}

/** An upper bound for the whole run; past it the bench kills its children and fails. */
function budgetMs(opts: BenchOptions, scenarios: number): number {
  const perWindow = opts.warmup + opts.duration + 15; // + checks, autocannon start/stop, slack
  return (120 + scenarios * TARGETS.length * perWindow) * 1000;
}

async function main(): Promise<number> {
  const parsed = parseOptions(process.argv.slice(2), process.env, `${PROJECT_ROOT}bench/results`);
  if (parsed === 'help') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const opts = parsed;
  const unknown = opts.only.filter((n) => !(SCENARIO_NAMES as readonly string[]).includes(n));
  if (unknown.length) throw new Error(`unknown scenario(s) ${unknown.join(', ')}; known: ${SCENARIO_NAMES.join(', ')}`);
  const scenarioCount = opts.only.length || SCENARIO_NAMES.length;

  const watchdog = setTimeout(() => {
    progress(`bench: exceeded its time budget (${budgetMs(opts, scenarioCount) / 1000} s); stopping`);
    killAllChildren();
    process.exit(2);
  }, budgetMs(opts, scenarioCount));
  watchdog.unref();

  const startedAt = new Date().toISOString();
  const environment = describeEnvironment();
  const productDef = productTarget(process.env);
  const baselineDef = baselineTarget();
  if (Object.keys(productDef.overrides).length) environment.productOverrides = productDef.overrides;

  const servers: Partial<Record<Target, ServerProcess>> = {};
  try {
    progress('bench: starting product and baseline');
    servers.product = await startServer(productDef.spec);
    servers.baseline = await startServer(baselineDef.spec);
    const product = servers.product;
    const baseline = servers.baseline;
    const byTarget: Record<Target, ServerProcess> = { product, baseline };

    const creds = { product: await prepareProduct(product, productDef), baseline: await prepareBaseline(baseline, baselineDef) };
    const scenarios = buildScenarios(creds).filter((s) => opts.only.length === 0 || opts.only.includes(s.name));

    progress(
      `bench: ${scenarios.length} scenarios x ${TARGETS.length} servers, ${opts.connections} connections, ` +
        `${opts.warmup ? `${opts.warmup} s warm-up + ` : ''}${opts.duration} s measured each`,
    );
    const results: ScenarioResult[] = [];
    for (const scenario of scenarios) {
      const sides: Partial<Record<Target, SideResult>> = {};
      for (const target of TARGETS) {
        const side = await runSide(byTarget[target], scenario, target, opts);
        sides[target] = side;
        const m = side.measured;
        progress(
          `  ${scenario.label.padEnd(26)} ${target.padEnd(8)} ${Math.round(m.rps).toString().padStart(6)} req/s  ` +
            `p99 ${m.latency.p99} ms  ${m.cpuMicrosPerRequest ?? '-'} µs/req` +
            (failures(m) + side.checkProblems.length > 0 ? `  FAILURES ${failures(m) + side.checkProblems.length}` : ''),
        );
        await sleep(250); // let sockets close before the next window
      }
      const p = sides.product!;
      const b = sides.baseline!;
      const r: ScenarioResult = {
        name: scenario.name,
        label: scenario.label,
        product: p,
        baseline: b,
        ratio: b.measured.rps > 0 ? round2(p.measured.rps / b.measured.rps) : null,
        cpuRatio: p.measured.cpuMicrosPerRequest && b.measured.cpuMicrosPerRequest ? round2(b.measured.cpuMicrosPerRequest / p.measured.cpuMicrosPerRequest) : null,
      };
      if (scenario.note) r.note = scenario.note;
      results.push(r);
    }

    environment.loadavgAtEnd = loadavg();
    const ok = results.every((r) => !sideFailed(r.product) && !sideFailed(r.baseline));
    const report: RunReport = {
      startedAt,
      finishedAt: new Date().toISOString(),
      ok,
      options: { duration: opts.duration, warmup: opts.warmup, connections: opts.connections, smoke: opts.smoke, only: opts.only },
      environment,
      servers: {
        product: { pid: product.pid, url: product.baseUrl, logs: product.logs() },
        baseline: { pid: baseline.pid, url: baseline.baseUrl, logs: baseline.logs() },
      },
      scenarios: results,
    };
    const file = await saveReport(opts.resultsDir, report);

    process.stdout.write(
      `\n${renderTable(results)}\n\n` +
        `${opts.connections} connections, ${opts.duration} s measured after ${opts.warmup} s warm-up; ` +
        `${cpus().length} CPUs, Node ${process.version}; latency of 2xx responses; ` +
        `CPU µs/req = server user+system CPU (all threads) / completed requests; ratio = product/baseline req/s; ` +
        `errors = failed requests (connection errors + non-2xx + failed checks), product/baseline.\n`,
    );
    const notes = renderNotes(report);
    if (notes) process.stdout.write(notes + '\n');
    process.stdout.write(`results: ${file}\n${ok ? 'bench: OK' : 'bench: FAILED (see errors above)'}\n`);
    return ok ? 0 : 1;
  } finally {
    for (const target of TARGETS) {
      const server = servers[target];
      if (!server) continue;
      await server.stop();
      if (!opts.keep) await removeDir(server.dir);
      else progress(`bench: kept ${target} directory ${server.dir}`);
    }
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAllChildren();
    process.exit(130);
  });
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    progress(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    killAllChildren();
    process.exit(1);
  },
);
