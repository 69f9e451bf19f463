/**
 * A self-contained HTML report of a run (no scripts, no external assets): inline SVG bar charts of
 * req/s, server CPU per request, p99 latency, memory and event-loop delay, product next to
 * baseline, then the goals, start-up figures, the full table and the notes.
 */
import { writeFile } from 'node:fs/promises';
import type { Measurement } from './load.js';
import { mb, ms, renderNotes, sideFailures, type RunReport, type ScenarioResult } from './report.js';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const COLORS = { product: '#2563eb', baseline: '#9ca3af' } as const;

interface Bar {
  label: string;
  product: number | null;
  baseline: number | null;
}

/** Horizontal grouped bars, one group per scenario; values printed at the bar ends. */
function barChart(title: string, unit: string, bars: Bar[], format: (n: number) => string): string {
  const rows = bars.filter((b) => b.product !== null || b.baseline !== null);
  if (!rows.length) return '';
  const labelWidth = 330;
  const chartWidth = 460;
  const rowHeight = 34;
  const max = Math.max(...rows.flatMap((b) => [b.product ?? 0, b.baseline ?? 0]), 1e-9);
  const height = rows.length * rowHeight + 30;
  const parts: string[] = [];
  rows.forEach((b, i) => {
    const y = 24 + i * rowHeight;
    parts.push(`<text x="${labelWidth - 8}" y="${y + 16}" text-anchor="end" class="l">${esc(b.label)}</text>`);
    (['product', 'baseline'] as const).forEach((side, j) => {
      const v = b[side];
      if (v === null) return;
      const w = Math.max(1, (v / max) * chartWidth);
      const by = y + j * 13;
      parts.push(`<rect x="${labelWidth}" y="${by}" width="${w.toFixed(1)}" height="11" fill="${COLORS[side]}"><title>${side}: ${esc(format(v))} ${esc(unit)}</title></rect>`);
      parts.push(`<text x="${(labelWidth + w + 4).toFixed(1)}" y="${by + 10}" class="v">${esc(format(v))}</text>`);
    });
  });
  return `<figure><figcaption>${esc(title)} <span class="unit">(${esc(unit)})</span></figcaption>
<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth + chartWidth + 80}" height="${height}" role="img" aria-label="${esc(title)}">
<rect x="${labelWidth}" y="4" width="10" height="10" fill="${COLORS.product}"/><text x="${labelWidth + 14}" y="13" class="v">product</text>
<rect x="${labelWidth + 80}" y="4" width="10" height="10" fill="${COLORS.baseline}"/><text x="${labelWidth + 94}" y="13" class="v">baseline</text>
${parts.join('\n')}
</svg></figure>`;
}

function bars(scenarios: readonly ScenarioResult[], pick: (m: Measurement) => number | null): Bar[] {
  return scenarios.map((s) => ({ label: s.label, product: pick(s.product.measured), baseline: s.baseline ? pick(s.baseline.measured) : null }));
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

export function renderHtml(report: RunReport): string {
  const s = report.scenarios;
  const env = report.environment;
  const goals = report.goals
    .map((g) => `<tr class="${g.met === null ? 'na' : g.met ? 'ok' : 'ko'}"><th scope="row">${esc(g.goal)}</th><td>${esc(g.target)}</td><td>${esc(g.measured)}</td><td>${g.met === null ? 'not run' : g.met ? 'met' : 'NOT met'}</td></tr>`)
    .join('\n');
  const srv = (name: 'product' | 'baseline') => {
    const v = report.servers[name];
    return `<tr><th scope="row">${name}</th><td>${v.coldReadyMs ?? '-'}</td><td>${v.readyMs}</td><td>${mb(v.idleRssBytes)}</td></tr>`;
  };
  const sub = ['req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'CPU µs/req', 'RSS MB', 'event-loop p99 ms', 'other CPU'].map((h) => `<th>${h}</th>`).join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>svc bench ${esc(report.startedAt)}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#111;max-width:1400px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}th[scope=row],thead th:first-child{text-align:left}
tr.ok td:last-child{color:#166534;font-weight:600}tr.ko td:last-child{color:#b91c1c;font-weight:600}tr.na td:last-child{color:#6b7280}
figure{margin:12px 0}figcaption{font-weight:600}.unit{font-weight:400;color:#555}
svg text.l{font-size:12px}svg text.v{font-size:11px;fill:#333}
pre{background:#f6f6f6;padding:8px;overflow:auto;font-size:12px}.note{color:#444}
</style></head><body>
<h1>svc bench: product vs stock oidc-provider ${esc(String(env.oidcProvider ?? ''))}</h1>
<p>${esc(report.startedAt)} to ${esc(report.finishedAt)}; ${report.options.connections} connections, ${report.options.duration} s measured after ${report.options.warmup} s warm-up${report.options.smoke ? ' (smoke run: not a measurement)' : ''};
${esc(String(env.cpus))} CPUs (${esc(String(env.cpuModel ?? ''))}), Node ${esc(String(env.node))}; load average at start ${esc(JSON.stringify(env.loadavgAtStart))}, at end ${esc(JSON.stringify(env.loadavgAtEnd))}.
Result: <strong>${report.ok ? 'OK' : 'FAILED'}</strong>.</p>
<p class="note">CPU µs/req is the server's CPU time (all threads) per completed request, read from /proc: on a machine where the load generator shares the cores it is steadier than req/s. "other CPU" is what other processes used during the window, in % of one core.</p>
<h2>Goals (issue 7)</h2>
<table><thead><tr><th>goal</th><th>target</th><th>measured</th><th>met</th></tr></thead><tbody>
${goals}
</tbody></table>
<h2>Charts</h2>
${barChart('Throughput', 'req/s', bars(s, (m) => m.rps), (n) => Math.round(n).toLocaleString('en-US'))}
${barChart('Server CPU per request', 'µs', bars(s, (m) => m.cpuMicrosPerRequest), (n) => n.toFixed(0))}
${barChart('Latency p99', 'ms', bars(s, (m) => m.latency.p99), ms)}
${barChart('Event-loop delay p99', 'ms', bars(s, (m) => m.eventLoop?.p99 ?? null), ms)}
${barChart('Resident memory after the window', 'MB', bars(s, (m) => (m.rssBytes === null ? null : m.rssBytes / 1048576)), (n) => n.toFixed(0))}
<h2>Start-up and idle memory</h2>
<table><thead><tr><th>server</th><th>first start to ready ms</th><th>start to ready ms</th><th>idle RSS MB</th></tr></thead><tbody>
${srv('product')}
${srv('baseline')}
</tbody></table>
<h2>All figures</h2>
<table><thead><tr><th rowspan="2">scenario</th><th colspan="8">product</th><th colspan="8">baseline</th><th rowspan="2">ratio</th><th rowspan="2">CPU ratio</th><th rowspan="2">errors p/b</th></tr>
<tr>${sub}${sub}</tr></thead><tbody>
${detailRows(s)}
</tbody></table>
<h2>Notes</h2>
<pre>${esc(renderNotes(report) || 'none')}</pre>
<h2>Environment</h2>
<pre>${esc(JSON.stringify({ options: report.options, environment: env }, null, 2))}</pre>
</body></html>
`;
}

export async function saveHtml(jsonFile: string, report: RunReport): Promise<string> {
  const file = jsonFile.replace(/\.json$/, '.html');
  await writeFile(file, renderHtml(report));
  return file;
}
