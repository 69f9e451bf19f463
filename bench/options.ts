/**
 * Command-line flags and environment variables of `npm run bench`. Flags win over the environment,
 * the environment over the defaults; `--smoke` only changes the defaults, so
 * `--smoke --duration 3` still means 3 s.
 */
import { parseArgs } from 'node:util';

export interface BenchOptions {
  /** Seconds measured per scenario and server. */
  duration: number;
  /** Seconds of load before each measured window, results discarded (0 = none). */
  warmup: number;
  connections: number;
  smoke: boolean;
  /** Scenario names to run (empty = all). */
  only: string[];
  /** Keep the servers' temp dirs (databases, logs) for inspection. */
  keep: boolean;
  /** Directory for the JSON results. */
  resultsDir: string;
}

export const USAGE = `usage: node dist/bench/run.js [options]
  --duration <s>      measured seconds per scenario and server (env BENCH_DURATION, default 10; smoke 1)
  --warmup <s>        warm-up seconds before each measured window, discarded (env BENCH_WARMUP, default 3; smoke 0)
  --connections <n>   concurrent connections (env BENCH_CONNECTIONS, default 50; smoke 10)
  --only <a,b>        run only these scenarios (env BENCH_ONLY), e.g. --only jwks,introspection; names:
                      discovery jwks cc-rs256 cc-es256 cc-eddsa introspection introspection-opaque refresh
                      mgmt-get-client mgmt-list-clients password-login login-mixed
  --smoke             short CI run: 1 s, no warm-up, 10 connections
  --keep              keep the servers' temp directories
  --results <dir>     where to write <timestamp>.json and .html (env BENCH_RESULTS_DIR, default bench/results)
  --help`;

function positive(name: string, raw: string | undefined, fallback: number, allowZero = false): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || (!allowZero && n === 0)) throw new Error(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} number, got "${raw}"`);
  return n;
}

export function parseOptions(argv: string[], env: NodeJS.ProcessEnv, defaultResultsDir: string): BenchOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      only: { type: 'string' },
      smoke: { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
      results: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) return 'help';
  const smoke = values.smoke === true;
  const connections = positive('--connections', values.connections ?? env.BENCH_CONNECTIONS, smoke ? 10 : 50);
  if (!Number.isInteger(connections)) throw new Error('--connections must be an integer');
  const only = (values.only ?? env.BENCH_ONLY ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return {
    duration: positive('--duration', values.duration ?? env.BENCH_DURATION, smoke ? 1 : 10),
    warmup: positive('--warmup', values.warmup ?? env.BENCH_WARMUP, smoke ? 0 : 3, true),
    connections,
    smoke,
    only,
    keep: values.keep === true,
    resultsDir: values.results ?? env.BENCH_RESULTS_DIR ?? defaultResultsDir,
  };
}
