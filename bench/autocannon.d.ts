/**
 * The part of autocannon 8's programmatic API the bench uses. autocannon ships no type
 * declarations and @types/autocannon is not installed, so the shape is written down here from
 * its README ("autocannon(opts[, cb])", "Results") and lib/aggregateResult.js.
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface Options {
      url: string;
      method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';
      headers?: Record<string, string>;
      body?: string | Buffer;
      connections?: number;
      /** Seconds. */
      duration?: number;
      /** Seconds before a request counts as a timeout (and an error). */
      timeout?: number;
      pipelining?: number;
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
    }
  }

  function autocannon(opts: autocannon.Options, cb: (err: Error | null, result: autocannon.Result) => void): autocannon.Instance;

  export = autocannon;
}
