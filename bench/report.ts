/**
 * What a run produced: the tables printed at the end, and the JSON file with everything measured
 * (the HTML report is html-report.ts, the goals goals.ts).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { failures, type Measurement } from './load.js';
import type { LogSummary } from './processes.js';
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
  options: { duration: number; warmup: number; connections: number; smoke: boolean; only: string[] };
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

/** Percent of one core used by other processes above which a window's req/s is flagged. */
const OTHER_CPU_WARNING = 10;

const int = (n: number) => Math.round(n).toLocaleString('en-US');
/** Milliseconds with the precision that means something at that size. */
export const ms = (n: number) => (n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0));
const micros = (n: number | null) => (n === null ? '-' : n.toFixed(0));
export const mb = (bytes: number | null) => (bytes === null ? '-' : (bytes / 1048576).toFixed(0));

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) => '| ' + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ') + ' |';
  const rule = '|' + widths.map((w, i) => (i === 0 ? '-'.repeat(w + 1) + '-' : '-'.repeat(w + 1) + ':')).join('|') + '|';
  return [line(header), rule, ...rows.map(line)].join('\n');
}

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

/** Lines under the tables: scenario notes, failures in detail, interference, server error logs. */
export function renderNotes(report: RunReport): string {
  const out: string[] = [];
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

/** Writes <dir>/<timestamp>.json and returns its path (the HTML report goes next to it). */
export async function saveReport(dir: string, report: RunReport): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${report.startedAt.replace(/[:.]/g, '-')}.json`);
  await writeFile(file, JSON.stringify(report, null, 2) + '\n');
  return file;
}
