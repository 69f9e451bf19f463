/**
 * The one reporter of the benches: console tables (Markdown, so they paste into the README), the
 * JSON file with everything measured, and a self-contained HTML page (inline SVG bar charts, no
 * scripts or external assets) next to it. What goes into them is each bench's own (run-report.ts,
 * capacity-report.ts, multitenant-load.ts, signing.ts); how it is laid out and written is here.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Percent of one core used by other processes above which a window's req/s and latency are flagged. */
export const OTHER_CPU_WARNING = 10;

export const int = (n: number) => Math.round(n).toLocaleString('en-US');
/** Milliseconds with the precision that means something at that size. */
export const ms = (n: number) => (n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0));
export const mb = (bytes: number | null) => (bytes === null ? '-' : (bytes / 1048576).toFixed(0));
export const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

/** A Markdown table: the first `alignLeft` columns left-aligned, the others right-aligned. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], alignLeft = 1): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) => `| ${widths.map((w, i) => (i < alignLeft ? (cells[i] ?? '').padEnd(w) : (cells[i] ?? '').padStart(w))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (i < alignLeft ? `-${'-'.repeat(w)}-` : `-${'-'.repeat(w)}:`)).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

// ---------------------------------------------------------------------------------------------
// HTML.

export const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** An HTML table with a header row; `rowClass` colours a row (e.g. goal met / not met). */
export function htmlTable(header: readonly string[], rows: readonly (readonly string[])[], rowClass?: (row: number) => string): string {
  const head = `<thead><tr>${header.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead>`;
  const body = rows
    .map((r, i) => {
      const cls = rowClass?.(i);
      return `<tr${cls ? ` class="${cls}"` : ''}>${r.map((c, j) => (j === 0 ? `<th scope="row">${esc(c)}</th>` : `<td>${esc(c)}</td>`)).join('')}</tr>`;
    })
    .join('\n');
  return `<table>${head}<tbody>\n${body}\n</tbody></table>`;
}

export interface BarSeries {
  name: string;
  color: string;
}

/** One row of a chart: a label and up to one value per series (null: no bar). */
export interface BarRow {
  label: string;
  values: ReadonlyArray<number | null>;
}

/** Horizontal bars, one group per row and one bar per series; values printed at the bar ends. */
export function barChart(title: string, unit: string, series: readonly BarSeries[], rows: readonly BarRow[], format: (n: number) => string): string {
  const shown = rows.filter((r) => r.values.some((v) => v !== null && Number.isFinite(v)));
  if (!shown.length) return '';
  const labelWidth = 330;
  const chartWidth = 460;
  const barHeight = series.length > 1 ? 11 : 16;
  const rowHeight = series.length * (barHeight + 2) + 8;
  const top = series.length > 1 ? 24 : 8;
  const max = Math.max(...shown.flatMap((r) => r.values.map((v) => (v !== null && Number.isFinite(v) ? v : 0))), 1e-9);
  const parts: string[] = [];
  shown.forEach((r, i) => {
    const y = top + i * rowHeight;
    parts.push(`<text x="${labelWidth - 8}" y="${y + barHeight + 2}" text-anchor="end" class="l">${esc(r.label)}</text>`);
    // Bars fill the slots of the row from the top (a row without a value in some series has no gap
    // above the others), the colour says the series.
    let slot = 0;
    r.values.forEach((v, j) => {
      const s = series[j];
      if (v === null || !Number.isFinite(v) || !s) return;
      const w = Math.max(1, (v / max) * chartWidth);
      const by = y + slot++ * (barHeight + 2);
      parts.push(`<rect x="${labelWidth}" y="${by}" width="${w.toFixed(1)}" height="${barHeight}" fill="${s.color}"><title>${esc(s.name)}: ${esc(format(v))} ${esc(unit)}</title></rect>`);
      parts.push(`<text x="${(labelWidth + w + 4).toFixed(1)}" y="${by + barHeight - 1}" class="v">${esc(format(v))}</text>`);
    });
  });
  const legend =
    series.length > 1
      ? series.map((s, j) => `<rect x="${labelWidth + j * 90}" y="4" width="10" height="10" fill="${s.color}"/><text x="${labelWidth + j * 90 + 14}" y="13" class="v">${esc(s.name)}</text>`).join('')
      : '';
  return `<figure><figcaption>${esc(title)} <span class="unit">(${esc(unit)})</span></figcaption>
<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth + chartWidth + 80}" height="${shown.length * rowHeight + top + 6}" role="img" aria-label="${esc(title)}">
${legend}${parts.join('\n')}
</svg></figure>`;
}

const STYLE = `body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#111;max-width:1500px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}th[scope=row],thead th:first-child{text-align:left}
tr.ok td:last-child{color:#166534;font-weight:600}tr.ko td:last-child{color:#b91c1c;font-weight:600}tr.na td:last-child{color:#6b7280}
figure{margin:12px 0}figcaption{font-weight:600}.unit{font-weight:400;color:#555}
svg text.l{font-size:12px}svg text.v{font-size:11px;fill:#333}
pre{background:#f6f6f6;padding:8px;overflow:auto;font-size:12px}.note{color:#444}`;

/** A whole page: `body` is trusted HTML built with the helpers above (every text escaped). */
export function htmlPage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>
${STYLE}
</style></head><body>
${body}
</body></html>
`;
}

export const pre = (text: string) => `<pre>${esc(text)}</pre>`;

// ---------------------------------------------------------------------------------------------
// Files.

/** A file name stem from an ISO timestamp: `2026-11-25T04-00-00-000Z`. */
export const stamp = (iso: string) => iso.replace(/[:.]/g, '-');

/**
 * Writes `<dir>/<name>.json` (Infinity as "+Inf") and `<dir>/<name>.html`; returns both paths.
 */
export async function saveResults(dir: string, name: string, report: unknown, html: string): Promise<{ json: string; html: string }> {
  await mkdir(dir, { recursive: true });
  const json = join(dir, `${name}.json`);
  await writeFile(json, `${JSON.stringify(report, (_key, value: unknown) => (value === Infinity ? '+Inf' : value), 2)}\n`);
  const page = join(dir, `${name}.html`);
  await writeFile(page, html);
  return { json, html: page };
}

/** Which commit was measured, and whether the tree had local changes (read-only git queries). */
export function gitState(root: string): { commit?: string; dirty?: boolean } {
  const git = (...args: string[]): string | undefined => {
    try {
      return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return undefined;
    }
  };
  const status = git('status', '--porcelain');
  const out: { commit?: string; dirty?: boolean } = {};
  const commit = git('rev-parse', 'HEAD');
  if (commit !== undefined) out.commit = commit;
  if (status !== undefined) out.dirty = status.length > 0;
  return out;
}
