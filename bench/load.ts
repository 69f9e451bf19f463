/**
 * One load window: autocannon against one server with one request (or a feed of requests),
 * bracketed by readings of the server's CPU time (and ours, to see when the load generator rather
 * than the server is the limit), its memory and its event-loop delay, optionally with a background
 * load running on the same server meanwhile.
 *
 * Latency percentiles are computed here from every response autocannon reports (its own histogram
 * has 1 ms resolution and only counts 2xx): resolution 0.01 ms, over the answers with the expected
 * status (303 for the login form, 2xx otherwise).
 */
import autocannon from 'autocannon';
import { cpus } from 'node:os';
import { machineBusyMicros, processCpuMicros, selfCpuMicros } from './cpu.js';
import { memoryOf, type EventLoopDelay } from './probes.js';
import type { ServerProcess } from './processes.js';
import type { RequestSpec } from './scenarios.js';

export interface Latency {
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

export interface Measurement {
  /** Completed responses (any status). */
  requests: number;
  seconds: number;
  /** requests / seconds. */
  rps: number;
  /** Milliseconds, answers with the expected status only. */
  latency: Latency;
  /** Server CPU (all its threads, user + system) per completed request (background included); null when nothing completed. */
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
  /** Server resident memory at the end of the window, and its peak so far (bytes). */
  rssBytes: number | null;
  peakRssBytes: number | null;
  /** Event-loop delay over the window (ms); null when the server has no probe. */
  eventLoop: EventLoopDelay | null;
  /** Connection errors, timeouts included. */
  errors: number;
  timeouts: number;
  /** Answers with another status than the expected one. */
  unexpected: number;
  /** Requests a feed could not supply (its material ran out). */
  starved: number;
  statusCodes: Record<string, number>;
  /** The background load during this window, counted over the measured window only. */
  background?: BackgroundMeasurement;
}

export interface BackgroundMeasurement {
  label: string;
  requests: number;
  rps: number;
  latency: Latency;
  unexpected: number;
  errors: number;
  statusCodes: Record<string, number>;
}

export interface LoadOptions {
  connections: number;
  duration: number;
  title: string;
  /** Requests per second over all connections (autocannon overallRate). */
  rate?: number;
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Response counts and latencies; only recorded while `on`. */
class Recorder {
  on = true;
  requests = 0;
  unexpected = 0;
  errors = 0;
  readonly statusCodes: Record<string, number> = {};
  private samples = new Float64Array(1 << 16);
  private n = 0;

  constructor(private readonly ok: (status: number) => boolean) {}

  reset(): void {
    this.requests = this.unexpected = this.errors = this.n = 0;
    for (const k of Object.keys(this.statusCodes)) delete this.statusCodes[k];
  }

  response(status: number, ms: number): void {
    if (!this.on) return;
    this.requests++;
    this.statusCodes[status] = (this.statusCodes[status] ?? 0) + 1;
    if (!this.ok(status)) {
      this.unexpected++;
      return;
    }
    if (this.n === this.samples.length) {
      const bigger = new Float64Array(this.samples.length * 2);
      bigger.set(this.samples);
      this.samples = bigger;
    }
    this.samples[this.n++] = ms;
  }

  error(): void {
    if (this.on) this.errors++;
  }

  latency(): Latency {
    const sorted = this.samples.slice(0, this.n).sort();
    const at = (q: number) => (this.n ? round(sorted[Math.min(this.n - 1, Math.max(0, Math.ceil(q * this.n) - 1))]!) : 0);
    let sum = 0;
    for (let i = 0; i < this.n; i++) sum += sorted[i]!;
    return { mean: this.n ? round(sum / this.n) : 0, p50: at(0.5), p90: at(0.9), p99: at(0.99), p999: at(0.999), max: this.n ? round(sorted[this.n - 1]!) : 0 };
  }
}

export function okStatus(spec: RequestSpec): (status: number) => boolean {
  const ok = spec.okStatus;
  if (ok === undefined) return (s) => s >= 200 && s < 300;
  return typeof ok === 'number' ? (s) => s === ok : (s) => ok.includes(s);
}

interface RunningLoad {
  recorder: Recorder;
  done: Promise<autocannon.Result>;
  stop(): void;
}

function startLoad(server: ServerProcess, spec: RequestSpec, opts: LoadOptions): RunningLoad {
  const recorder = new Recorder(okStatus(spec));
  const options: autocannon.Options = {
    url: server.baseUrl + spec.path,
    method: spec.method,
    headers: spec.headers,
    body: spec.body,
    connections: opts.connections,
    duration: opts.duration,
    title: opts.title,
  };
  if (opts.rate) options.overallRate = opts.rate;
  const feed = spec.feed;
  if (feed) {
    const step = (i: number): autocannon.Request => {
      const request: autocannon.Request = {
        method: spec.method,
        path: spec.path,
        headers: spec.headers,
        setupRequest: (req, context) => {
          const fed = feed.next(context, i);
          return { ...req, method: fed.method ?? spec.method, path: fed.path ?? spec.path, headers: { ...spec.headers, ...fed.headers }, body: fed.body ?? spec.body };
        },
      };
      if (feed.onResponse) {
        const onResponse = feed.onResponse.bind(feed);
        request.onResponse = (status, body, context, headers) => onResponse(status, body, context, headers, i);
      }
      return request;
    };
    options.requests = Array.from({ length: feed.steps ?? 1 }, (_, i) => step(i));
  }
  let instance: autocannon.Instance | undefined;
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon(options, (err, result) => (err ? reject(err) : resolve(result)));
  });
  instance!.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => recorder.response(status, ms));
  instance!.on('reqError', () => recorder.error());
  return { recorder, done, stop: () => instance?.stop() };
}

export interface MeasureOptions extends LoadOptions {
  /** Already running on the same server; counted over this window only. */
  background?: { label: string; load: RunningLoadHandle };
}

/** A background load started with startBackground. */
export interface RunningLoadHandle {
  readonly running: RunningLoad;
}

export function startBackground(server: ServerProcess, spec: RequestSpec, opts: LoadOptions): RunningLoadHandle {
  const running = startLoad(server, spec, opts);
  running.recorder.on = false;
  running.done.catch(() => undefined);
  return { running };
}

export async function stopBackground(handle: RunningLoadHandle): Promise<void> {
  handle.running.stop();
  await handle.running.done.catch(() => undefined);
}

export async function measure(server: ServerProcess, spec: RequestSpec, opts: MeasureOptions): Promise<Measurement> {
  await server.eventLoop?.reset();
  const starvedBefore = spec.feed?.starved() ?? 0;
  const bg = opts.background?.load.running.recorder;
  const machineBefore = machineBusyMicros();
  const serverBefore = processCpuMicros(server.pid);
  const selfBefore = selfCpuMicros();
  const started = performance.now();
  if (bg) {
    bg.reset();
    bg.on = true;
  }
  const load = startLoad(server, spec, opts);
  const result = await load.done;
  if (bg) bg.on = false;
  const seconds = (performance.now() - started) / 1000;
  const serverCpu = processCpuMicros(server.pid) - serverBefore;
  const selfCpu = selfCpuMicros() - selfBefore;
  const otherCpu = Math.max(0, machineBusyMicros() - machineBefore - serverCpu - selfCpu);
  const eventLoop = (await server.eventLoop?.read()) ?? null;
  const memory = memoryOf(server.pid);

  const rec = load.recorder;
  const requests = rec.requests;
  const served = requests + (bg?.requests ?? 0);
  const m: Measurement = {
    requests,
    seconds: round(seconds, 3),
    rps: round(requests / seconds, 1),
    latency: rec.latency(),
    cpuMicrosPerRequest: served > 0 ? round(serverCpu / served, 1) : null,
    serverCpuMicros: Math.round(serverCpu),
    loadgenCpuMicrosPerRequest: served > 0 ? round(selfCpu / served, 1) : null,
    otherCpuPercentOfCore: round((otherCpu / (seconds * 1e6)) * 100, 1),
    cores: cpus().length,
    rssBytes: memory?.rss ?? null,
    peakRssBytes: memory?.peak ?? null,
    eventLoop,
    errors: Math.max(result.errors, rec.errors),
    timeouts: result.timeouts,
    unexpected: rec.unexpected,
    starved: (spec.feed?.starved() ?? 0) - starvedBefore,
    statusCodes: rec.statusCodes,
  };
  if (bg && opts.background) {
    m.background = {
      label: opts.background.label,
      requests: bg.requests,
      rps: round(bg.requests / seconds, 1),
      latency: bg.latency(),
      unexpected: bg.unexpected,
      errors: bg.errors,
      statusCodes: bg.statusCodes,
    };
  }
  return m;
}

/** Requests that failed: connection errors (timeouts included), unexpected statuses, starved feeds. */
export function failures(m: Pick<Measurement, 'errors' | 'unexpected' | 'starved'> & { background?: Pick<BackgroundMeasurement, 'errors' | 'unexpected'> }): number {
  return m.errors + m.unexpected + m.starved + (m.background ? m.background.errors + m.background.unexpected : 0);
}
