/**
 * Readings taken from the servers besides CPU time (cpu.ts): resident memory from
 * /proc/<pid>/status, and the event-loop delay over a window.
 *
 * Event-loop delay: the product runs with FEATURES_METRICS_ENABLED=true, and prom-client's default
 * metrics keep a monitorEventLoopDelay histogram (10 ms resolution) that is reset at every scrape:
 * scraping right before a window and right after it gives the window's own p99. The baseline has
 * no metrics endpoint; baseline-main.ts keeps the same kind of histogram and answers over the IPC
 * channel the bench opens to it. Neither sits in the request path: a libuv timer samples the loop.
 *
 * On Node 20 that histogram records the whole interval between two ticks of its timer, period
 * included: an idle process reads p50 = p99 = 10.2 ms at 10 ms resolution. The figures here are
 * the delay beyond the period (recorded value - 10 ms, at least 0), which is what "event-loop
 * delay" means; prom-client's nodejs_eventloop_lag_* gauges carry the 10 ms in them.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { round } from './report.js';

export interface EventLoopDelay {
  /** Milliseconds beyond the sampling period. */
  p50: number;
  p99: number;
  max: number;
}

/** prom-client's default eventLoopMonitoringPrecision, and the baseline probe's resolution. */
export const EVENT_LOOP_RESOLUTION_MS = 10;

/** Delay beyond the sampling period, from a recorded interval in ms. */
const beyondPeriod = (intervalMs: number) => round(Math.max(0, intervalMs - EVENT_LOOP_RESOLUTION_MS));

export interface EventLoopProbe {
  /** Starts a window (discards what was recorded so far). */
  reset(): Promise<void>;
  /** What was recorded since reset(); null when it could not be read. */
  read(): Promise<EventLoopDelay | null>;
}

/** VmRSS (current) and VmHWM (peak) of a process, in bytes; null when unreadable. */
export function memoryOf(pid: number): { rss: number; peak: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    const rss = kb('VmRSS');
    const peak = kb('VmHWM');
    return Number.isFinite(rss) ? { rss, peak: Number.isFinite(peak) ? peak : rss } : null;
  } catch {
    return null;
  }
}

/** The product's side: prom-client's nodejs_eventloop_lag_* gauges, read from the metrics endpoint. */
export function metricsProbe(url: string, prefix: string): EventLoopProbe {
  const scrape = async (): Promise<string | undefined> => {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
      return res.status === 200 ? await res.text() : undefined;
    } catch {
      return undefined;
    }
  };
  const gauge = (text: string, name: string): number => {
    const m = new RegExp(`^${prefix}nodejs_eventloop_lag_${name}_seconds(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'm').exec(text);
    return m ? Number(m[1]) * 1000 : NaN;
  };
  return {
    async reset() {
      await scrape();
    },
    async read() {
      const text = await scrape();
      if (!text) return null;
      const out = { p50: beyondPeriod(gauge(text, 'p50')), p99: beyondPeriod(gauge(text, 'p99')), max: beyondPeriod(gauge(text, 'max')) };
      return Number.isFinite(out.p99) ? out : null;
    },
  };
}

interface ProbeMessage {
  type: 'svc-bench-eld';
  op: 'reset' | 'read';
  id: number;
}

interface ProbeReply {
  type: 'svc-bench-eld';
  id: number;
  delay?: EventLoopDelay;
}

/** In a server process spawned with an IPC channel: answers reset/read requests (baseline-main.ts). */
export function serveEventLoopProbe(): void {
  if (typeof process.send !== 'function') return;
  const histogram = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
  histogram.enable();
  process.on('message', (msg: unknown) => {
    const m = msg as Partial<ProbeMessage> | null;
    if (m?.type !== 'svc-bench-eld' || typeof m.id !== 'number') return;
    const reply: ProbeReply = { type: 'svc-bench-eld', id: m.id };
    if (m.op === 'read') reply.delay = { p50: beyondPeriod(histogram.percentile(50) / 1e6), p99: beyondPeriod(histogram.percentile(99) / 1e6), max: beyondPeriod(histogram.max / 1e6) };
    histogram.reset();
    process.send?.(reply);
  });
  // The channel must not keep the process alive on its own.
  process.channel?.unref();
}

/** The bench's side of serveEventLoopProbe. */
export function ipcProbe(child: ChildProcess): EventLoopProbe {
  let next = 0;
  const ask = (op: ProbeMessage['op']) =>
    new Promise<EventLoopDelay | null>((resolve) => {
      if (!child.connected) return resolve(null);
      const id = ++next;
      const timer = setTimeout(() => {
        child.off('message', onMessage);
        resolve(null);
      }, 5000);
      const onMessage = (msg: unknown) => {
        const r = msg as Partial<ProbeReply> | null;
        if (r?.type !== 'svc-bench-eld' || r.id !== id) return;
        clearTimeout(timer);
        child.off('message', onMessage);
        resolve(r.delay ?? null);
      };
      child.on('message', onMessage);
      child.send({ type: 'svc-bench-eld', op, id } satisfies ProbeMessage);
    });
  return {
    async reset() {
      await ask('reset');
    },
    read: () => ask('read'),
  };
}
