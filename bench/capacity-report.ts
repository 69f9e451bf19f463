/**
 * The output of `npm run bench:capacity`: text tables, the issue 7 goal rows, the recommendation
 * and the self-contained HTML report (capacity.ts runs the settings).
 */
import type { Options, SettingResult } from './capacity-types.js';
import { OTHER_CPU_WARNING, barChart, esc, htmlPage, mb, pre, table } from './report.js';

export { OTHER_CPU_WARNING };

/** The recommendation: req/s within this fraction of the best setting counts as "as fast". */
const WITHIN_BEST = 0.05;

const num = (n: number | null, digits = 1) => (n === null ? '-' : n.toFixed(digits));
const msCell = (n: number | null, over = false) => (n === null ? '-' : `${over ? '>' : ''}${n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0)}`);
/** A server-side cold-start quantile: "<0.5" inside the first bucket, ">1000" beyond the last. */
export function coldCell(r: SettingResult, q: 'p50' | 'p99'): string {
  const c = r.coldServer;
  const below = q === 'p50' ? c.p50Below : c.p99Below;
  if (below !== null) return `<${below}`;
  return msCell(q === 'p50' ? c.p50Ms : c.p99Ms, q === 'p50' ? c.p50Over : c.p99Over);
}
/** Share of the actor creations of the window at most 1 ms and over 50 ms (fast cached builds vs storage loads). */
function creationSplit(r: SettingResult): string {
  const total = r.coldServer.creations;
  if (total <= 0) return '-';
  const upTo = (le: number) => r.coldServer.buckets.find((b) => Math.abs(b.le - le) < 1e-9)?.count ?? NaN;
  const pctOf = (n: number) => `${((n / total) * 100).toFixed(0)}%`;
  return `${pctOf(upTo(0.001))} / ${pctOf(total - upTo(0.05))}`;
}
export const ttlLabel = (ms: number) => (ms % 60_000 === 0 ? `${ms / 60_000} min` : ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`);

export function renderResults(results: readonly SettingResult[]): string {
  const header = ['setting', 'pool', 'idle TTL', 'token req/s', '% of single', '% of single (CPU)', 'hit rate', 'cold p50 ms (srv)', 'cold p99 ms (srv)', 'cold p50 ms (cli)', 'p50 ms', 'p99 ms', 'p99.9 ms', 'CPU µs/req', 'RSS peak MB', 'RSS end MB', 'errors'];
  const rows = results.map((r) => [
    r.label,
    String(r.pool),
    ttlLabel(r.idleTtlMs),
    Math.round(r.rps).toLocaleString('en-US'),
    r.single ? 'base' : num(r.percentOfSingle, 0),
    r.single ? 'base' : num(r.percentOfSingleCpu, 0),
    r.pool_.hitRate === null ? '-' : `${r.pool_.hitRate.toFixed(1)}%`,
    coldCell(r, 'p50'),
    coldCell(r, 'p99'),
    msCell(r.coldClient.p50),
    msCell(r.latency.p50),
    msCell(r.latency.p99),
    msCell(r.latency.p999),
    num(r.cpuMicrosPerRequest, 0),
    mb(r.rss.peakBytes),
    mb(r.rss.endBytes),
    String(failureCount(r)),
  ]);
  return table(header, rows);
}

export function renderDetails(results: readonly SettingResult[]): string {
  const header = ['setting', 'priming pass (every tenant once)', 'misses (actor creations)', 'evictions', 'joined in-flight', 'pool size at end', 'tenants touched', 'cold reqs (cli)', 'cold p99 ms (cli)', 'creation mean ms', 'creations <=1 ms / >50 ms', 'event-loop p99 ms', 'PostgreSQL CPU µs/req', 'PG xacts/req', 'PG rows updated/s', 'RSS idle MB', 'other CPU % of core'];
  const rows = results.map((r) => [
    r.label,
    r.prime ? `${r.prime.tenants} in ${r.prime.seconds} s (${r.prime.rps} req/s)` : '-',
    `${r.pool_.misses} (${r.coldServer.creations})`,
    Object.entries(r.pool_.evictions).map(([k, v]) => `${k} ${v}`).join(', ') || '0',
    String(r.pool_.joinedInFlight),
    String(r.pool_.sizeAtEnd),
    String(r.tenantsTouched),
    String(r.coldClient.requests),
    msCell(r.coldClient.p99),
    msCell(r.coldServer.meanMs),
    creationSplit(r),
    msCell(r.eventLoopP99Ms),
    num(r.pgCpuMicrosPerRequest, 0),
    num(r.pg.xactsPerRequest, 2),
    r.pg.updatedPerSecond.toFixed(0),
    mb(r.rss.idleBytes),
    r.otherCpuPercentOfCore.toFixed(0),
  ]);
  return table(header, rows);
}

/** Per setting, the PostgreSQL tables the product touched, per request (pg_stat_user_tables). */
export function renderTables(results: readonly SettingResult[]): string {
  const lines = ['PostgreSQL per request (scans / rows updated / rows inserted by table, pg_stat_user_tables, flushed by PostgreSQL within ~1 s):'];
  for (const r of results) {
    const parts = Object.entries(r.pg.perRequestByTable)
      .sort(([, a], [, b]) => b.scans + b.updated + b.inserted - (a.scans + a.updated + a.inserted))
      .map(([name, t]) => `${name} ${t.scans}/${t.updated}/${t.inserted}`);
    lines.push(`  ${r.label}: ${parts.join(', ') || 'none'}`);
  }
  return lines.join('\n');
}

interface Goal {
  goal: string;
  target: string;
  measured: string;
  met: boolean | null;
}

export function goals(results: readonly SettingResult[], opts: Options): { heading: string; goals: Goal[] } | null {
  const at50 = results.filter((r) => !r.single && r.pool === 50);
  if (!at50.length) return null;
  const same = opts.tenants === 10_000 && opts.zipfS === 1.1;
  const heading = `issue 7 target row: 10,000 tenants, pool 50, Zipf s=1.1${same ? '' : ` (this run: ${opts.tenants.toLocaleString('en-US')} tenants, s=${opts.zipfS}: indicative only)`}`;
  const out: Goal[] = [];
  for (const r of at50) {
    const tag = at50.length > 1 ? ` [${r.label}]` : '';
    out.push({ goal: `token req/s vs single-tenant${tag}`, target: '>= 60%', measured: r.percentOfSingle === null ? '-' : `${r.percentOfSingle.toFixed(0)}% (${Math.round(r.rps)} req/s; by CPU µs/req ${num(r.percentOfSingleCpu, 0)}%)`, met: r.percentOfSingle === null ? null : r.percentOfSingle >= 60 });
    out.push({ goal: `RSS (peak)${tag}`, target: '< 600 MB', measured: `${mb(r.rss.peakBytes)} MB`, met: r.rss.peakBytes === null ? null : r.rss.peakBytes < 600 * 1048576 });
    const p50 = r.coldServer.p50Ms;
    out.push({
      goal: `cold actor p50 (svc_tenant_actor_create_seconds)${tag}`,
      target: '< 20 ms',
      measured: p50 === null ? 'no cold start in the window' : `${coldCell(r, 'p50')} ms server-side (${r.coldServer.creations} creations); client-side ${msCell(r.coldClient.p50)} ms`,
      met: p50 === null ? null : !r.coldServer.p50Over && p50 < 20,
    });
  }
  return { heading, goals: out };
}

export function renderGoals(g: { heading: string; goals: Goal[] }): string {
  return `${g.heading}\n${table(['goal', 'target', 'measured', 'met'], g.goals.map((x) => [x.goal, x.target, x.measured, x.met === null ? '-' : x.met ? 'yes' : 'NO']))}`;
}

interface Recommendation {
  pool: number | null;
  idleTtlMs: number | null;
  lines: string[];
}

export function recommend(results: readonly SettingResult[], opts: Options): Recommendation {
  const lines: string[] = [];
  const candidates = results.filter((r) => !r.single && failureCount(r) === 0);
  if (!candidates.length) return { pool: null, idleTtlMs: null, lines: ['no recommendation: every setting had failures'] };
  const budget = opts.rssBudgetMb * 1048576;
  // req/s when the machine was quiet; on shared cores (other processes above the warning level in
  // any window) requests per server CPU second, which other load disturbs far less.
  const quiet = results.every((r) => r.otherCpuPercentOfCore <= OTHER_CPU_WARNING);
  const speed = (r: SettingResult) => (quiet ? r.rps : r.cpuMicrosPerRequest ? 1e6 / r.cpuMicrosPerRequest : 0);
  const measure = quiet ? 'token req/s' : 'requests per server CPU second (the machine was busy: req/s is unreliable)';
  const best = Math.max(...candidates.map(speed));
  const fast = candidates.filter((r) => speed(r) >= best * (1 - WITHIN_BEST));
  const fits = fast.filter((r) => r.rss.peakBytes !== null && r.rss.peakBytes <= budget);
  const order = (a: SettingResult, b: SettingResult) => a.pool - b.pool || b.idleTtlMs - a.idleTtlMs;
  let chosen: SettingResult | undefined = [...fits].sort(order)[0];
  if (chosen) {
    lines.push(
      `MULTI_TENANCY_PROVIDER_POOL_MAX_SIZE=${chosen.pool}: the smallest pool within ${WITHIN_BEST * 100}% of the best ${measure} (${Math.round(best)}) whose RSS peak (${mb(chosen.rss.peakBytes)} MB) stays under the ${opts.rssBudgetMb} MB budget; ` +
        `${Math.round(chosen.rps)} req/s = ${chosen.percentOfSingle?.toFixed(0) ?? '-'}% of single-tenant (${chosen.percentOfSingleCpu?.toFixed(0) ?? '-'}% by CPU µs/req), hit rate ${chosen.pool_.hitRate?.toFixed(1) ?? '-'}%, cold p50 ${coldCell(chosen, 'p50')} ms.`,
    );
  } else {
    const withinBudget = candidates.filter((r) => r.rss.peakBytes !== null && r.rss.peakBytes <= budget).sort((a, b) => speed(b) - speed(a));
    chosen = withinBudget[0];
    if (chosen) {
      lines.push(
        `MULTI_TENANCY_PROVIDER_POOL_MAX_SIZE=${chosen.pool}: the fastest setting under the ${opts.rssBudgetMb} MB budget (${Math.round(chosen.rps)} req/s, RSS peak ${mb(chosen.rss.peakBytes)} MB); ` +
          `the faster ones exceed the budget: raise --rss-budget-mb (or the instance's memory) to use them.`,
      );
    } else {
      chosen = [...candidates].sort((a, b) => (a.rss.peakBytes ?? Infinity) - (b.rss.peakBytes ?? Infinity))[0]!;
      lines.push(`no setting stays under the ${opts.rssBudgetMb} MB budget; the leanest was pool ${chosen.pool} at ${mb(chosen.rss.peakBytes)} MB RSS peak: try smaller pools.`);
    }
  }
  // Idle TTL: only shorter TTLs than the idle gaps of real traffic evict anything; in a window of
  // a few seconds under constant load, a TTL longer than the run never fires.
  const samePool = candidates.filter((r) => r.pool === chosen!.pool).sort((a, b) => a.idleTtlMs - b.idleTtlMs);
  if (samePool.length > 1) {
    lines.push(
      `idle TTL at pool ${chosen.pool}: ` +
        samePool.map((r) => `${ttlLabel(r.idleTtlMs)}: hit rate ${r.pool_.hitRate?.toFixed(1) ?? '-'}%, ${Math.round(r.rps)} req/s, RSS end ${mb(r.rss.endBytes)} MB, idle evictions ${r.pool_.evictions.idle ?? 0}`).join('; ') +
        '.',
    );
    const shortest = samePool[0]!;
    if ((shortest.pool_.evictions.idle ?? 0) === 0 && (shortest.pool_.evictions.lru ?? 0) > 0) {
      lines.push(
        `even the ${ttlLabel(shortest.idleTtlMs)} TTL evicted nothing as idle: the pool was full and the LRU evicted actors sooner (${shortest.pool_.evictions.lru} LRU evictions in ${shortest.seconds.toFixed(0)} s); the idle TTL only matters when the pool is not full (quiet hours, pool >= active tenants).`,
      );
    }
    const fitting = samePool.filter((r) => r.rss.peakBytes !== null && r.rss.peakBytes <= budget);
    const longest = fitting[fitting.length - 1];
    if (longest) lines.push(`MULTI_TENANCY_PROVIDER_POOL_IDLE_TTL_MS=${longest.idleTtlMs}: the longest idle TTL tried that fits the budget; a longer TTL only costs memory while tenants are idle (the pool size caps it anyway), a shorter one gives memory back between bursts at the price of cold starts when an idle tenant returns.`);
    return { pool: chosen.pool, idleTtlMs: longest?.idleTtlMs ?? chosen.idleTtlMs, lines };
  }
  const window = opts.seconds + opts.warmup;
  lines.push(
    `MULTI_TENANCY_PROVIDER_POOL_IDLE_TTL_MS=${chosen.idleTtlMs} (the only idle TTL tried). A longer TTL only costs memory while tenants are idle (the pool size caps it anyway); a shorter one gives memory back between bursts at the price of cold starts when an idle tenant returns. ` +
      (chosen.idleTtlMs > window * 1000
        ? `It is longer than this run (${window} s per setting), so it evicted nothing here: compare e.g. --idle-ttl 5000,${chosen.idleTtlMs} --cleanup-interval 1000 on a pool that does not fill up (a full pool evicts by LRU first) to see the hit rate move.`
        : `Idle evictions in the window: ${chosen.pool_.evictions.idle ?? 0}.`),
  );
  return { pool: chosen.pool, idleTtlMs: chosen.idleTtlMs, lines };
}

// ---------------------------------------------------------------------------------------------
// HTML: bar charts per setting, then the printed output (report.ts lays it out).

const SERIES = [
  { name: 'single tenant', color: '#9ca3af' },
  { name: 'setting', color: '#2563eb' },
] as const;

export function renderHtml(title: string, text: string, results: readonly SettingResult[]): string {
  // Grey: the single-tenant baseline runs; blue: the settings (each row has one bar of its kind).
  const bars = (pick: (r: SettingResult) => number | null) => results.map((r) => ({ label: r.label, values: r.single ? [pick(r), null] : [null, pick(r)] }));
  const chart = (t: string, unit: string, pick: (r: SettingResult) => number | null, format: (n: number) => string) => barChart(t, unit, SERIES, bars(pick), format);
  const charts = [
    chart('Token requests per second', 'req/s', (r) => r.rps, (n) => Math.round(n).toLocaleString('en-US')),
    chart('Share of single-tenant capacity by server CPU per request', '%', (r) => (r.single ? 100 : r.percentOfSingleCpu), (n) => n.toFixed(0)),
    chart('Actor pool hit rate', '%', (r) => (r.single ? null : r.pool_.hitRate), (n) => n.toFixed(1)),
    chart('Server CPU per request', 'µs', (r) => r.cpuMicrosPerRequest, (n) => n.toFixed(0)),
    chart('PostgreSQL CPU per request', 'µs', (r) => r.pgCpuMicrosPerRequest, (n) => n.toFixed(0)),
    chart('Latency p99', 'ms', (r) => r.latency.p99, (n) => msCell(n)),
    chart('Cold requests p99, client-side', 'ms', (r) => r.coldClient.p99, (n) => msCell(n)),
    chart('Resident memory, peak', 'MB', (r) => (r.rss.peakBytes === null ? null : r.rss.peakBytes / 1048576), (n) => n.toFixed(0)),
  ].join('\n');
  return htmlPage(title, `<h1>${esc(title)}</h1>\n<p>Grey: the single-tenant baseline runs; blue: the settings.</p>\n${charts}\n<h2>Output</h2>\n${pre(text)}`);
}

export function failureCount(r: SettingResult): number {
  const f = r.failures;
  return f.connectionErrors + f.unexpectedStatus + f.wrongAnswers + f.warmup + (f.preCheck ? 1 : 0);
}
