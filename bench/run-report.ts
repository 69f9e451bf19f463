/**
 * What `npm run bench` (run.ts) reports: the tables printed at the end, the notes under them, and
 * the HTML page (charts, goals, start-up, every figure); written through the one reporter
 * (report.ts) next to the JSON file. The goals are goals.ts.
 */
import type { Backend, BackendInfo } from './backend.js';
import { failures, type Measurement } from './load.js';
import type { LogSummary } from './processes.js';
import { OTHER_CPU_WARNING, barChart, esc, htmlPage, htmlTable, int, mb, ms, pre, saveResults, stamp, table, type BarRow } from './report.js';
import type { Target } from './scenarios.js';

export interface SideResult {
  /** Failure counts of the discarded warm-up window (absent when there was none). */
  warmup?: { requests: number; errors: number; unexpected: number; starved: number };
  measured: Measurement;
  /** Problems found by the one-off checks before and after the load. */
  checkProblems: string[];
}

export interface ScenarioResult {
  name: string;
  label: string;
  note?: string;
  connections: number;
  rate?: number;
  product: SideResult;
  /** Absent for product-only scenarios. */
  baseline?: SideResult;
  /** product req/s / baseline req/s. */
  ratio: number | null;
  /** baseline CPU µs/req / product CPU µs/req: how many times cheaper a request is on the product. */
  cpuRatio: number | null;
}

export interface ServerSummary {
  pid: number;
  url: string;
  /** Spawn to ready (ms) of the instance measured; for the product a restart on an existing data directory. */
  readyMs: number;
  /** Product: the first start on an empty directory (database created, signing keys generated). */
  coldReadyMs?: number;
  /** Resident memory 2 s after ready, before any load (bytes). */
  idleRssBytes: number | null;
  logs: LogSummary;
}

export interface GoalResult {
  goal: string;
  target: string;
  measured: string;
  /** null when the run did not measure it (scenario skipped). */
  met: boolean | null;
}

export interface RunReport {
  startedAt: string;
  finishedAt: string;
  ok: boolean;
  options: { duration: number; warmup: number; connections: number; smoke: boolean; only: string[]; backend: Backend };
  environment: Record<string, unknown>;
  servers: Record<Target, ServerSummary>;
  scenarios: ScenarioResult[];
  goals: GoalResult[];
}

export function sideFailures(side: SideResult): number {
  return failures(side.measured) + side.checkProblems.length;
}

/** Failures that make the run exit non-zero: errors, unexpected statuses, starved feeds, failed checks. */
export function sideFailed(side: SideResult): boolean {
  return sideFailures(side) > 0;
}

const micros = (n: number | null) => (n === null ? '-' : n.toFixed(0));

function latencyCells(side: SideResult | undefined): string[] {
  if (!side) return ['n/a', '', '', '', ''];
  const m = side.measured;
  return [int(m.rps), ms(m.latency.p50), ms(m.latency.p99), ms(m.latency.p999), micros(m.cpuMicrosPerRequest)];
}

/** Throughput, latency and CPU per request, product and baseline side by side. */
export function renderTable(results: readonly ScenarioResult[]): string {
  const header = ['scenario', 'product req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'CPU µs/req', 'baseline req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'CPU µs/req', 'ratio', 'CPU ratio', 'errors p/b'];
  const rows = results.map((r) => [
    r.label,
    ...latencyCells(r.product),
    ...latencyCells(r.baseline),
    r.ratio === null ? '-' : `${r.ratio.toFixed(2)}x`,
    r.cpuRatio === null ? '-' : `${r.cpuRatio.toFixed(2)}x`,
    `${sideFailures(r.product)}/${r.baseline ? sideFailures(r.baseline) : '-'}`,
  ]);
  return table(header, rows);
}

/** Memory and event-loop delay per window, and the background load of mixed scenarios. */
export function renderResources(results: readonly ScenarioResult[]): string {
  const cells = (side: SideResult | undefined) => {
    if (!side) return ['n/a', ''];
    const el = side.measured.eventLoop;
    return [mb(side.measured.rssBytes), el ? ms(el.p99) : '-'];
  };
  const header = ['scenario', 'product RSS MB', 'event-loop p99 ms', 'baseline RSS MB', 'event-loop p99 ms', 'background during the window'];
  const rows = results.map((r) => {
    const bg = r.product.measured.background;
    return [
      r.label,
      ...cells(r.product),
      ...cells(r.baseline),
      bg ? `${bg.label}: ${int(bg.rps)}/s, p99 ${ms(bg.latency.p99)} ms, ${bg.errors + bg.unexpected} failed` : '',
    ];
  });
  return table(header, rows);
}

export function renderServers(servers: RunReport['servers']): string {
  const row = (name: string, s: ServerSummary) => [name, s.coldReadyMs === undefined ? '-' : int(s.coldReadyMs), int(s.readyMs), mb(s.idleRssBytes)];
  return table(['server', 'first start to ready ms', 'start to ready ms', 'idle RSS MB'], [row('product', servers.product), row('baseline', servers.baseline)]);
}

export function renderGoals(goals: readonly GoalResult[]): string {
  return table(
    ['goal', 'target', 'measured', 'met'],
    goals.map((g) => [g.goal, g.target, g.measured, g.met === null ? 'not run' : g.met ? 'MET' : 'NOT MET']),
  );
}

/** The line above the tables: where the product kept its data (the baseline is always in memory). */
export function renderBackend(info: Pick<BackendInfo, 'description'>): string {
  return `product storage: ${info.description}; baseline: stock oidc-provider, in memory`;
}

/**
 * "PostgreSQL backends: cc-rs256 12 µs/req, refresh 310 µs/req": the database server's CPU per
 * request, which the product's CPU µs/req leaves out. Empty when no window measured companions.
 */
export function renderCompanions(scenarios: readonly ScenarioResult[]): string {
  const measured = scenarios.filter((r) => r.product.measured.companions);
  const first = measured[0]?.product.measured.companions;
  if (!first) return '';
  const figures = measured.map((r) => `${r.name} ${micros(r.product.measured.companions!.cpuMicrosPerRequest)}`);
  return `${first.label} of the product's database, CPU µs/req (not in the product's CPU µs/req): ${figures.join(', ')}`;
}

/**
 * From this share of a core on, autocannon (one thread, in this process) is the limit of a window:
 * the server answers faster than it asks.
 */
export const LOADGEN_SATURATED_PERCENT = 90;

/** `jwks / product 102%` for every window whose load generator was the limit. */
export function loadgenLimited(scenarios: readonly ScenarioResult[]): string[] {
  const out: string[] = [];
  for (const r of scenarios) {
    for (const target of ['product', 'baseline'] as const) {
      const m = r[target]?.measured;
      if (!m || !(m.seconds > 0)) continue;
      const percent = Math.round((m.loadgenCpuMicros / (m.seconds * 1e6)) * 100);
      if (percent >= LOADGEN_SATURATED_PERCENT) out.push(`${r.label} / ${target} ${percent}%`);
    }
  }
  return out;
}

/** Lines under the tables: database CPU, scenario notes, failures in detail, a load generator at its limit, interference, server error logs. */
export function renderNotes(report: RunReport): string {
  const out: string[] = [];
  const companions = renderCompanions(report.scenarios);
  if (companions) out.push(`- ${companions}`);
  for (const r of report.scenarios) {
    if (r.note) out.push(`- ${r.label}: ${r.note}`);
    for (const target of ['product', 'baseline'] as const) {
      const side = r[target];
      if (!side) continue;
      const m = side.measured;
      if (failures(m) > 0) {
        out.push(
          `- ${r.label} / ${target}: ${m.errors} errors (${m.timeouts} timeouts), ${m.unexpected} unexpected statuses, ${m.starved} starved; ` +
            `status codes ${JSON.stringify(m.statusCodes)}${m.background ? `; background ${JSON.stringify(m.background.statusCodes)}` : ''}`,
        );
      }
      for (const p of side.checkProblems) out.push(`- ${r.label} / ${target}: check failed: ${p}`);
      if (side.warmup && side.warmup.errors + side.warmup.unexpected + side.warmup.starved > 0) {
        out.push(`- ${r.label} / ${target}: warm-up had ${side.warmup.errors} errors, ${side.warmup.unexpected} unexpected statuses, ${side.warmup.starved} starved (not counted)`);
      }
    }
  }
  const starvedBy = loadgenLimited(report.scenarios);
  if (starvedBy.length) {
    out.push(
      `- load generator at its limit (the share of a core it used) in ${starvedBy.join(', ')}: it, not the server, set the pace there; the server went idle between requests, ` +
        'so its CPU µs/req includes waking up for each (bench/README.md, "When the load generator is the limit")',
    );
  }
  const windows = report.scenarios.flatMap((r) => [r.product.measured, ...(r.baseline ? [r.baseline.measured] : [])]);
  const busy = windows.filter((m) => m.otherCpuPercentOfCore > OTHER_CPU_WARNING);
  if (busy.length) {
    const worst = Math.max(...busy.map((m) => m.otherCpuPercentOfCore));
    out.push(
      `- WARNING: other processes competed for the CPU in ${busy.length} of ${windows.length} windows (up to ${worst}% of a core): ` +
        'req/s and latency are suspect, CPU µs/req less so; per window: otherCpuPercentOfCore in the JSON',
    );
  }
  for (const target of ['product', 'baseline'] as const) {
    const { logs } = report.servers[target];
    if (logs.errorLines > 0) out.push(`- ${target} logged ${logs.errorLines} error line(s); tail in the JSON file`);
  }
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------
// HTML: charts of req/s, server CPU per request, p99 latency, event-loop delay and memory, product
// next to baseline, then the goals, start-up figures, the full table and the notes.

const SERIES = [
  { name: 'product', color: '#2563eb' },
  { name: 'baseline', color: '#9ca3af' },
] as const;

function bars(scenarios: readonly ScenarioResult[], pick: (m: Measurement) => number | null): BarRow[] {
  return scenarios.map((s) => ({ label: s.label, values: [pick(s.product.measured), s.baseline ? pick(s.baseline.measured) : null] }));
}

function detailRows(scenarios: readonly ScenarioResult[]): string {
  const cells = (m: Measurement | undefined) =>
    m
      ? [Math.round(m.rps).toString(), ms(m.latency.p50), ms(m.latency.p99), ms(m.latency.p999), m.cpuMicrosPerRequest?.toFixed(0) ?? '-', mb(m.rssBytes), m.eventLoop ? ms(m.eventLoop.p99) : '-', `${m.otherCpuPercentOfCore}%`]
      : ['n/a', '', '', '', '', '', '', ''];
  return scenarios
    .map(
      (s) =>
        `<tr><th scope="row">${esc(s.label)}</th>${[...cells(s.product.measured), ...cells(s.baseline?.measured)].map((c) => `<td>${esc(c)}</td>`).join('')}` +
        `<td>${s.ratio === null ? '-' : s.ratio.toFixed(2) + 'x'}</td><td>${s.cpuRatio === null ? '-' : s.cpuRatio.toFixed(2) + 'x'}</td>` +
        `<td>${sideFailures(s.product)}/${s.baseline ? sideFailures(s.baseline) : '-'}</td></tr>`,
    )
    .join('\n');
}

/** The backend's description recorded in the environment, or its bare name. */
function productBackendDescription(env: Record<string, unknown>, name: Backend): string {
  const info = env.productBackend;
  return info && typeof info === 'object' && 'description' in info && typeof info.description === 'string' ? info.description : name;
}

export function renderHtml(report: RunReport): string {
  const s = report.scenarios;
  const env = report.environment;
  const goals = htmlTable(
    ['goal', 'target', 'measured', 'met'],
    report.goals.map((g) => [g.goal, g.target, g.measured, g.met === null ? 'not run' : g.met ? 'met' : 'NOT met']),
    (i) => (report.goals[i]!.met === null ? 'na' : report.goals[i]!.met ? 'ok' : 'ko'),
  );
  const srv = (name: Target) => {
    const v = report.servers[name];
    return [name, String(v.coldReadyMs ?? '-'), String(v.readyMs), mb(v.idleRssBytes)];
  };
  const sub = ['req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'CPU µs/req', 'RSS MB', 'event-loop p99 ms', 'other CPU'].map((h) => `<th>${h}</th>`).join('');
  const chart = (title: string, unit: string, pick: (m: Measurement) => number | null, format: (n: number) => string) => barChart(title, unit, SERIES, bars(s, pick), format);
  const body = `<h1>svc bench: product vs stock oidc-provider ${esc(String(env.oidcProvider ?? ''))}</h1>
<p>${esc(renderBackend({ description: productBackendDescription(env, report.options.backend) }))}.</p>
<p>${esc(report.startedAt)} to ${esc(report.finishedAt)}; ${report.options.connections} connections, ${report.options.duration} s measured after ${report.options.warmup} s warm-up${report.options.smoke ? ' (smoke run: not a measurement)' : ''};
${esc(String(env.cpus))} CPUs (${esc(String(env.cpuModel ?? ''))}), Node ${esc(String(env.node))}; load average at start ${esc(JSON.stringify(env.loadavgAtStart))}, at end ${esc(JSON.stringify(env.loadavgAtEnd))}.
Result: <strong>${report.ok ? 'OK' : 'FAILED'}</strong>.</p>
<p class="note">CPU µs/req is the server's CPU time (all threads) per completed request, read from /proc: on a machine where the load generator shares the cores it is steadier than req/s. "other CPU" is what other processes used during the window, in % of one core.</p>
<h2>Goals (issues 7 and 17)</h2>
${goals}
<h2>Charts</h2>
${chart('Throughput', 'req/s', (m) => m.rps, (n) => Math.round(n).toLocaleString('en-US'))}
${chart('Server CPU per request', 'µs', (m) => m.cpuMicrosPerRequest, (n) => n.toFixed(0))}
${chart('Latency p99', 'ms', (m) => m.latency.p99, ms)}
${chart('Event-loop delay p99', 'ms', (m) => m.eventLoop?.p99 ?? null, ms)}
${chart('Resident memory after the window', 'MB', (m) => (m.rssBytes === null ? null : m.rssBytes / 1048576), (n) => n.toFixed(0))}
<h2>Start-up and idle memory</h2>
${htmlTable(['server', 'first start to ready ms', 'start to ready ms', 'idle RSS MB'], [srv('product'), srv('baseline')])}
<h2>All figures</h2>
<table><thead><tr><th rowspan="2">scenario</th><th colspan="8">product</th><th colspan="8">baseline</th><th rowspan="2">ratio</th><th rowspan="2">CPU ratio</th><th rowspan="2">errors p/b</th></tr>
<tr>${sub}${sub}</tr></thead><tbody>
${detailRows(s)}
</tbody></table>
<h2>Notes</h2>
${pre(renderNotes(report) || 'none')}
<h2>Environment</h2>
${pre(JSON.stringify({ options: report.options, environment: env }, null, 2))}`;
  return htmlPage(`svc bench ${report.startedAt}`, body);
}

/** Writes <dir>/<timestamp>.json and .html; returns their paths. */
export function saveRunReport(dir: string, report: RunReport): Promise<{ json: string; html: string }> {
  return saveResults(dir, stamp(report.startedAt), report, renderHtml(report));
}
