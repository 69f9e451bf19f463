/**
 * The part of autocannon 8's programmatic API the bench uses. autocannon ships no type
 * declarations and @types/autocannon is not installed, so the shape is written down here from
 * its README ("autocannon(opts[, cb])", "Results", "requests"/setupRequest/onResponse) and
 * lib/run.js (the 'response' and 'reqError' events).
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';

    /** One request of a sequence; setupRequest may rewrite it before each send. */
    interface Request {
      method?: Method;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      setupRequest?: (req: Request, context: Record<string, unknown>) => Request;
      onResponse?: (status: number, body: string, context: Record<string, unknown>, headers?: Record<string, string>) => void;
    }

    interface Options {
      url: string;
      method?: Method;
      headers?: Record<string, string>;
      body?: string | Buffer;
      connections?: number;
      /** Seconds. */
      duration?: number;
      /** Seconds before a request counts as a timeout (and an error). */
      timeout?: number;
      pipelining?: number;
      /** Requests per second over all connections. */
      overallRate?: number;
      requests?: Request[];
      title?: string;
    }

    /** hdr-histogram-percentiles-obj, plus `total` (and `sent` on `requests`). */
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p2_5: number;
      p50: number;
      p75: number;
      p90: number;
      p97_5: number;
      p99: number;
      p99_9: number;
    }

    interface Result {
      title?: string;
      url: string;
      connections: number;
      /** Wall-clock seconds, rounded to 10 ms. */
      duration: number;
      start: Date;
      finish: Date;
      /** Connection errors, timeouts included. */
      errors: number;
      timeouts: number;
      mismatches: number;
      non2xx: number;
      '1xx': number;
      '2xx': number;
      '3xx': number;
      '4xx': number;
      '5xx': number;
      statusCodeStats: Record<string, { count: number }>;
      /** Milliseconds; only 2xx responses are recorded. */
      latency: Histogram;
      /** Per-second samples; `total` is the number of completed responses. */
      requests: Histogram & { sent: number };
      throughput: Histogram;
    }

    interface Instance extends EventEmitter {
      stop(): void;
      /** Every answer: the connection's client, status, bytes, response time in (fractional) ms. */
      on(event: 'response', listener: (client: unknown, status: number, bytes: number, ms: number) => void): this;
      on(event: 'reqError', listener: (err: Error) => void): this;
      on(event: string, listener: (...args: unknown[]) => void): this;
    }
  }

  function autocannon(opts: autocannon.Options, cb: (err: Error | null, result: autocannon.Result) => void): autocannon.Instance;

  export = autocannon;
}
