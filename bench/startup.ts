/**
 * The two start-up rows of the bench (issue 17) alone, repeated: the product started as run.ts
 * starts it (first start on an empty directory, stopped, restarted on it), restart to ready, the
 * CPU the restarted process used until then (all threads, from /proc: steadier than wall time on
 * a shared machine) and its RSS 2 s after ready. No load, no baseline; prints min / median.
 *
 *   flock /tmp/bench.lock node dist/bench/startup.js [runs] [--backend postgresql]   (default 3 runs, SQLite)
 *
 * `--backend postgresql` starts it on a migrated scratch database and a Redis key prefix of its own,
 * as `run.ts --backend postgresql` does (both removed at the end). The runs share that database, so
 * only the first run's first start finds it without keys and clients; every restart finds them.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { isBackend, openBackend } from './backend.js';
import { memoryOf } from './probes.js';
import { removeDir, startServer, type ServerSpec } from './processes.js';
import { productTarget } from './targets.js';

/** Same as run.ts: RSS is read this long after ready. */
const IDLE_SETTLE_MS = 2000;

interface StartupRun {
  coldReadyMs: number;
  readyMs: number;
  cpuMs: number | null;
  rssMb: number | null;
}

/** user + system CPU of a process so far, ms (Linux /proc; clock ticks at 100 Hz). */
function cpuMsOf(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * 10 : null;
  } catch {
    return null;
  }
}

async function once(spec: ServerSpec): Promise<StartupRun> {
  const cold = await startServer(spec);
  await cold.stop();
  const server = await startServer(spec, 30_000, cold.dir);
  const cpuMs = cpuMsOf(server.pid);
  await sleep(IDLE_SETTLE_MS);
  const rss = memoryOf(server.pid)?.rss;
  await server.stop();
  await removeDir(cold.dir);
  return { coldReadyMs: cold.readyMs, readyMs: server.readyMs, cpuMs, rssMb: rss === undefined ? null : Math.round((rss / 1048576) * 10) / 10 };
}

function minMedian(values: Array<number | null>): string {
  const v = values.filter((x): x is number => x !== null).sort((a, b) => a - b);
  return v.length ? `${v[0]} / ${v[Math.floor(v.length / 2)]}` : '-';
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const at = args.indexOf('--backend');
  const name = at >= 0 ? (args.splice(at, 2)[1] ?? '') : 'sqlite';
  if (!isBackend(name)) throw new Error(`--backend must be sqlite or postgresql, not ${JSON.stringify(name)}`);
  const runs = Math.max(1, Number(args[0] ?? 3) || 3);
  const results: StartupRun[] = [];
  // The bench's default storage is SQLite in the run's temp dir, as the rows of `npm run bench`.
  const backend = await openBackend(name);
  // One target (and so one SVC_ENCRYPTION_KEY) for every run: on PostgreSQL the runs share the
  // database, whose sealed keys a new key could not open.
  const { spec } = productTarget(process.env, backend);
  process.stdout.write(`storage: ${backend.info.description}\n`);
  try {
    for (let i = 0; i < runs; i++) {
      const r = await once(spec);
      results.push(r);
      process.stdout.write(`run ${i + 1}: first start ${r.coldReadyMs} ms, restart to ready ${r.readyMs} ms (CPU ${r.cpuMs ?? '-'} ms), idle RSS ${r.rssMb ?? '-'} MB\n`);
    }
  } finally {
    await backend.close();
  }
  process.stdout.write(
    `min / median of ${runs}: restart to ready ${minMedian(results.map((r) => r.readyMs))} ms, CPU to ready ${minMedian(results.map((r) => r.cpuMs))} ms, ` +
      `idle RSS ${minMedian(results.map((r) => r.rssMb))} MB (load average ${loadavg().map((l) => l.toFixed(2)).join(' ')})\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
