/**
 * One load window: autocannon against one server with one request, bracketed by readings of the
 * server's CPU time (and ours, to see when the load generator rather than the server is the limit).
 */
import autocannon from 'autocannon';
import { cpus } from 'node:os';
import { machineBusyMicros, processCpuMicros, selfCpuMicros } from './cpu.js';
import type { ServerProcess } from './processes.js';
import type { RequestSpec } from './scenarios.js';

export interface Measurement {
  /** Completed responses (any status). */
  requests: number;
  seconds: number;
  /** requests / seconds. */
  rps: number;
  /** Milliseconds, 2xx responses only (autocannon's default). */
  latency: { mean: number; p50: number; p90: number; p99: number; max: number };
  /** Server CPU (all its threads, user + system) per completed request; null when nothing completed. */
  cpuMicrosPerRequest: number | null;
  serverCpuMicros: number;
  /** The load generator's own CPU per request, for reading req/s on shared cores. */
  loadgenCpuMicrosPerRequest: number | null;
  /**
   * CPU used by other processes during the window, in percent of one core (machine busy time
   * minus server minus load generator). Above ~10% the req/s figure of this window is suspect.
   */
  otherCpuPercentOfCore: number;
  /** Cores on the machine, for reading the percentage above. */
  cores: number;
  /** Connection errors, timeouts included. */
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodes: Record<string, number>;
}

export interface LoadOptions {
  connections: number;
  duration: number;
  title: string;
}

function runAutocannon(server: ServerProcess, spec: RequestSpec, opts: LoadOptions): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: server.baseUrl + spec.path,
        method: spec.method,
        headers: spec.headers,
        body: spec.body,
        connections: opts.connections,
        duration: opts.duration,
        title: opts.title,
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
  });
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

export async function measure(server: ServerProcess, spec: RequestSpec, opts: LoadOptions): Promise<Measurement> {
  const machineBefore = machineBusyMicros();
  const serverBefore = processCpuMicros(server.pid);
  const selfBefore = selfCpuMicros();
  const started = performance.now();
  const result = await runAutocannon(server, spec, opts);
  const seconds = (performance.now() - started) / 1000;
  const serverCpu = processCpuMicros(server.pid) - serverBefore;
  const selfCpu = selfCpuMicros() - selfBefore;
  const otherCpu = Math.max(0, machineBusyMicros() - machineBefore - serverCpu - selfCpu);

  const requests = result.requests.total;
  const statusCodes: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(result.statusCodeStats)) statusCodes[code] = count;
  return {
    requests,
    seconds: round(seconds, 3),
    rps: round(requests / seconds, 1),
    latency: {
      mean: round(result.latency.mean),
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      max: result.latency.max,
    },
    cpuMicrosPerRequest: requests > 0 ? round(serverCpu / requests, 1) : null,
    serverCpuMicros: Math.round(serverCpu),
    loadgenCpuMicrosPerRequest: requests > 0 ? round(selfCpu / requests, 1) : null,
    otherCpuPercentOfCore: round((otherCpu / (seconds * 1e6)) * 100, 1),
    cores: cpus().length,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    statusCodes,
  };
}

/** Requests that failed: connection errors (timeouts included) and non-2xx answers. */
export function failures(m: Pick<Measurement, 'errors' | 'non2xx'>): number {
  return m.errors + m.non2xx;
}
