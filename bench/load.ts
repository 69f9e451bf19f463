/**
 * The one load driver of the benches (run.ts, capacity.ts, multitenant-load.ts): one autocannon
 * window against one server with one request (or a feed of requests), bracketed by readings of
 * the server's CPU time (and ours, to see when the load generator rather than the server is the
 * limit), its memory (optionally sampled during the window) and its event-loop delay, optionally
 * with a background load running on the same server meanwhile.
 *
 * Latency percentiles are computed here from every response autocannon reports (its own histogram
 * has 1 ms resolution and only counts 2xx): resolution 0.01 ms, over the answers with the expected
 * status (303 for the login form, 2xx otherwise).
 */
import autocannon from 'autocannon';
import { cpus } from 'node:os';
import { machineBusyMicros, processCpuMicros, selfCpuMicros } from './cpu.js';
import type { PlainResponse } from './http.js';
import { memoryOf, type EventLoopDelay } from './probes.js';
import type { ServerProcess } from './processes.js';
import { round } from './report.js';

/** What a feed changes in the next request of a connection. */
export interface FedRequest {
  method?: 'GET' | 'POST';
  path?: string;
  headers?: Record<string, string>;
  body?: string;
}

/** Requests that differ each time: a rotating refresh token, a sign-in form, a tenant per request. */
export interface RequestFeed {
  /** Before each window, outside the measured time: have material for `connections` connections ready. */
  prepare(connections: number): Promise<void>;
  /**
   * Requests in one iteration of a connection (default 1): silent re-authentication is an
   * authorization request and then its code exchange. `context` is the connection's own, kept
   * across the steps of an iteration; `step` is 0-based.
   */
  steps?: number;
  next(context?: Record<string, unknown>, step?: number): FedRequest;
  /**
   * Sees every answer (e.g. takes the rotated refresh token, or the code of a redirect). A returned
   * tag (e.g. 'cold') files the answer's latency under that tag too (Measurement.tagged).
   */
  onResponse?(status: number, body: string, context?: Record<string, unknown>, headers?: Record<string, string>, step?: number): string | void;
  /** Number of requests that could not be fed (material ran out): counted as failures. */
  starved(): number;
}

export interface RequestSpec {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** The status(es) of a correct answer; default: any 2xx. */
  okStatus?: number | readonly number[];
  feed?: RequestFeed;
  /** What is wrong with this response, or undefined when it is the expected one. */
  check(res: PlainResponse): string | undefined;
}


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
  loadgenCpuMicros: number;
  /** Machine busy time minus server and load generator over the window (µs). */
  otherCpuMicros: number;
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
  /** VmRSS sampled during the window (LoadOptions.rssSampleMs), bytes. */
  rssWindow?: { min: number; max: number; samples: number };
  /** Latency of the answers a feed tagged (e.g. 'cold'), expected status only. */
  tagged?: Record<string, { requests: number; latency: Latency }>;
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
  /** CPU of the processes working for the server (MeasureOptions.companions), not in cpuMicrosPerRequest nor in otherCpu*. */
  companions?: CompanionMeasurement;
}

/**
 * Processes that serve the server under test besides itself, e.g. the PostgreSQL backends of its
 * database: their CPU is read at both ends of the window and reported apart.
 */
export interface CompanionProbe {
  label: string;
  /** CPU (µs) so far of each companion process, by pid. */
  cpu(): Promise<Map<number, number>>;
}

export interface CompanionMeasurement {
  label: string;
  /** Companion processes seen at the end of the window. */
  processes: number;
  cpuMicros: number;
  /** Per completed request (background included), like the server's figure; null when nothing completed. */
  cpuMicrosPerRequest: number | null;
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
  /** Sample the server's VmRSS every this many ms during the window (Measurement.rssWindow). */
  rssSampleMs?: number;
}

/** A growing list of latencies (ms) and its percentiles. */
class Samples {
  private data = new Float64Array(1 << 12);
  n = 0;

  push(ms: number): void {
    if (this.n === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.n++] = ms;
  }

  latency(): Latency {
    const sorted = this.data.slice(0, this.n).sort();
    const at = (q: number) => (this.n ? round(sorted[Math.min(this.n - 1, Math.max(0, Math.ceil(q * this.n) - 1))]!) : 0);
    let sum = 0;
    for (let i = 0; i < this.n; i++) sum += sorted[i]!;
    return { mean: this.n ? round(sum / this.n) : 0, p50: at(0.5), p90: at(0.9), p99: at(0.99), p999: at(0.999), max: this.n ? round(sorted[this.n - 1]!) : 0 };
  }
}

/** Response counts and latencies; only recorded while `on`. */
class Recorder {
  on = true;
  requests = 0;
  unexpected = 0;
  errors = 0;
  readonly statusCodes: Record<string, number> = {};
  private all = new Samples();
  private tags = new Map<string, Samples>();

  constructor(private readonly ok: (status: number) => boolean) {}

  reset(): void {
    this.requests = this.unexpected = this.errors = 0;
    this.all = new Samples();
    this.tags.clear();
    for (const k of Object.keys(this.statusCodes)) delete this.statusCodes[k];
  }

  response(status: number, ms: number, tag: string | undefined): void {
    if (!this.on) return;
    this.requests++;
    this.statusCodes[status] = (this.statusCodes[status] ?? 0) + 1;
    if (!this.ok(status)) {
      this.unexpected++;
      return;
    }
    this.all.push(ms);
    if (tag !== undefined) {
      let t = this.tags.get(tag);
      if (!t) this.tags.set(tag, (t = new Samples()));
      t.push(ms);
    }
  }

  error(): void {
    if (this.on) this.errors++;
  }

  latency(): Latency {
    return this.all.latency();
  }

  tagged(): Record<string, { requests: number; latency: Latency }> | undefined {
    if (!this.tags.size) return undefined;
    return Object.fromEntries([...this.tags].map(([tag, samples]) => [tag, { requests: samples.n, latency: samples.latency() }]));
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
  // autocannon calls a request's onResponse and then emits 'response' (with the latency)
  // synchronously for the same answer: the tag handed from one to the other is that answer's.
  let lastTag: string | undefined;
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
        request.onResponse = (status, body, context, headers) => {
          lastTag = onResponse(status, body, context, headers, i) ?? undefined;
        };
      }
      return request;
    };
    options.requests = Array.from({ length: feed.steps ?? 1 }, (_, i) => step(i));
  }
  let instance: autocannon.Instance | undefined;
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon(options, (err, result) => (err ? reject(err) : resolve(result)));
  });
  instance!.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
    recorder.response(status, ms, lastTag);
    lastTag = undefined;
  });
  instance!.on('reqError', () => recorder.error());
  return { recorder, done, stop: () => instance?.stop() };
}

export interface MeasureOptions extends LoadOptions {
  /** Already running on the same server; counted over this window only. */
  background?: { label: string; load: RunningLoadHandle };
  /** Processes serving the server (its database), measured apart. */
  companions?: CompanionProbe;
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
  // Read before the machine's counter, so that the query listing them falls outside the window.
  const companionsBefore = await opts.companions?.cpu();
  const machineBefore = machineBusyMicros();
  const serverBefore = processCpuMicros(server.pid);
  const selfBefore = selfCpuMicros();
  const started = performance.now();
  if (bg) {
    bg.reset();
    bg.on = true;
  }
  const rss: number[] = [];
  const sampler = opts.rssSampleMs
    ? setInterval(() => {
        const m = memoryOf(server.pid);
        if (m) rss.push(m.rss);
      }, opts.rssSampleMs)
    : undefined;
  const load = startLoad(server, spec, opts);
  const result = await load.done.finally(() => clearInterval(sampler));
  if (bg) bg.on = false;
  const seconds = (performance.now() - started) / 1000;
  const serverCpu = processCpuMicros(server.pid) - serverBefore;
  const selfCpu = selfCpuMicros() - selfBefore;
  const machineCpu = machineBusyMicros() - machineBefore;
  const eventLoop = (await server.eventLoop?.read()) ?? null;
  const memory = memoryOf(server.pid);
  const companionsAfter = companionsBefore && (await opts.companions?.cpu());
  let companionCpu = 0;
  for (const [pid, micros] of companionsAfter ?? []) companionCpu += micros - (companionsBefore?.get(pid) ?? 0);
  // Companions work for the server: not "other processes competing with it".
  const otherCpu = Math.max(0, machineCpu - serverCpu - selfCpu - companionCpu);

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
    loadgenCpuMicros: Math.round(selfCpu),
    otherCpuMicros: Math.round(otherCpu),
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
  const tagged = rec.tagged();
  if (tagged) m.tagged = tagged;
  if (opts.companions && companionsAfter) {
    m.companions = { label: opts.companions.label, processes: companionsAfter.size, cpuMicros: Math.round(companionCpu), cpuMicrosPerRequest: served > 0 ? round(companionCpu / served, 1) : null };
  }
  if (rss.length) m.rssWindow = { min: Math.min(...rss), max: Math.max(...rss), samples: rss.length };
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
