/**
 * The side-by-side table printed at the end of a run, and the JSON file with everything measured.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { failures, type Measurement } from './load.js';
import type { LogSummary } from './processes.js';
import type { Target } from './scenarios.js';

export interface SideResult {
  /** Failure counts of the discarded warm-up window (absent when there was none). */
  warmup?: { requests: number; errors: number; non2xx: number };
  measured: Measurement;
  /** Problems found by the one-off checks before and after the load. */
  checkProblems: string[];
}

export interface ScenarioResult {
  name: string;
  label: string;
  note?: string;
  product: SideResult;
  baseline: SideResult;
  /** product req/s / baseline req/s. */
  ratio: number | null;
  /** baseline CPU µs/req / product CPU µs/req: how many times cheaper a request is on the product. */
  cpuRatio: number | null;
}

export interface RunReport {
  startedAt: string;
  finishedAt: string;
  ok: boolean;
  options: { duration: number; warmup: number; connections: number; smoke: boolean; only: string[] };
  environment: Record<string, unknown>;
  servers: Record<Target, { pid: number; url: string; logs: LogSummary }>;
  scenarios: ScenarioResult[];
}

/** Failures that make the run exit non-zero: errors, non-2xx, failed checks. */
export function sideFailed(side: SideResult): boolean {
  return failures(side.measured) > 0 || side.checkProblems.length > 0;
}

/** Percent of one core used by other processes above which a window's req/s is flagged. */
const OTHER_CPU_WARNING = 10;

const int = (n: number) => Math.round(n).toLocaleString('en-US');
/** autocannon's latency histogram has 1 ms resolution: whole milliseconds, "<1" for 0. */
const ms = (n: number) => (n < 1 ? '<1' : n.toFixed(0));
const micros = (n: number | null) => (n === null ? '-' : n.toFixed(0));

function sideCells(side: SideResult): string[] {
  const m = side.measured;
  return [int(m.rps), ms(m.latency.p50), ms(m.latency.p99), micros(m.cpuMicrosPerRequest)];
}

function errorCell(r: ScenarioResult): string {
  const count = (s: SideResult) => failures(s.measured) + s.checkProblems.length;
  return `${count(r.product)}/${count(r.baseline)}`;
}

/** A Markdown-compatible table, numbers right-aligned. */
export function renderTable(results: readonly ScenarioResult[]): string {
  const header = [
    'scenario', 'product req/s', 'p50 ms', 'p99 ms', 'CPU µs/req',
    'baseline req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'ratio', 'errors p/b',
  ];
  const rows = results.map((r) => [
    r.label,
    ...sideCells(r.product),
    ...sideCells(r.baseline),
    r.ratio === null ? '-' : `${r.ratio.toFixed(2)}x`,
    errorCell(r),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    '| ' + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ') + ' |';
  const rule = '|' + widths.map((w, i) => (i === 0 ? '-'.repeat(w + 1) + '-' : '-'.repeat(w + 1) + ':')).join('|') + '|';
  return [line(header), rule, ...rows.map(line)].join('\n');
}

/** Lines under the table: scenario notes, failures in detail, server error logs. */
export function renderNotes(report: RunReport): string {
  const out: string[] = [];
  for (const r of report.scenarios) {
    if (r.note) out.push(`- ${r.label}: ${r.note}`);
    for (const target of ['product', 'baseline'] as const) {
      const side = r[target];
      const m = side.measured;
      if (failures(m) > 0) {
        out.push(`- ${r.label} / ${target}: ${m.errors} errors (${m.timeouts} timeouts), ${m.non2xx} non-2xx; status codes ${JSON.stringify(m.statusCodes)}`);
      }
      for (const p of side.checkProblems) out.push(`- ${r.label} / ${target}: check failed: ${p}`);
      if (side.warmup && failures(side.warmup) > 0) {
        out.push(`- ${r.label} / ${target}: warm-up had ${side.warmup.errors} errors, ${side.warmup.non2xx} non-2xx (not counted)`);
      }
    }
  }
  const windows = report.scenarios.flatMap((r) => [r.product.measured, r.baseline.measured]);
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

/** Writes <dir>/<timestamp>.json and returns its path. */
export async function saveReport(dir: string, report: RunReport): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${report.startedAt.replace(/[:.]/g, '-')}.json`);
  await writeFile(file, JSON.stringify(report, null, 2) + '\n');
  return file;
}
