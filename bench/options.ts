/**
 * Command-line flags and environment variables of `npm run bench` (run.ts), declared for the one
 * option parser (cli.ts): flags win over the environment, the environment over the defaults;
 * `--smoke` only changes the defaults, so `--smoke --duration 3` still means 3 s.
 */
import { BACKENDS, isBackend, type Backend } from './backend.js';
import { commandLine, defineCommand } from './cli.js';
import { SCENARIO_NAMES } from './scenarios.js';

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
  /** Where the product keeps its data: embedded SQLite, or PostgreSQL + Redis (the baseline stays in memory). */
  backend: Backend;
}

function command(defaultResultsDir: string) {
  return defineCommand({
    usage: 'usage: node dist/bench/run.js [options]        (npm run bench -- [options])',
    flags: {
      duration: { kind: 'number', help: 'measured seconds per scenario and server', env: 'BENCH_DURATION', meta: '<s>', default: 10, smoke: 1, min: 0.01, integer: false },
      warmup: { kind: 'number', help: 'warm-up seconds before each measured window, discarded', env: 'BENCH_WARMUP', meta: '<s>', default: 3, smoke: 0, min: 0, integer: false },
      connections: { kind: 'number', help: 'concurrent connections (password logins: at most 16)', env: 'BENCH_CONNECTIONS', default: 50, smoke: 10 },
      only: { kind: 'names', help: 'run only these scenarios, e.g. --only jwks,introspection', env: 'BENCH_ONLY', default: [], choices: SCENARIO_NAMES },
      keep: { kind: 'boolean', help: "keep the servers' temp directories" },
      results: { kind: 'string', help: 'where to write <timestamp>.json and .html', env: 'BENCH_RESULTS_DIR', meta: '<dir>', default: defaultResultsDir },
      backend: {
        kind: 'string',
        help: "the product's storage: its embedded SQLite, or PostgreSQL (BENCH_PG_SERVER) + Redis (BENCH_REDIS_URL), a scratch database and key prefix dropped afterwards",
        env: 'BENCH_BACKEND',
        meta: '<name>',
        default: 'sqlite',
        choices: BACKENDS,
      },
    },
    smoke: 'short CI run: 1 s, no warm-up, 10 connections (explicit flags still win)',
  });
}

/** The options, or an exit code after printing the usage (0 for --help, 1 for a bad command line). */
export function parseOptions(argv: string[], env: NodeJS.ProcessEnv, defaultResultsDir: string): BenchOptions | number {
  const v = commandLine(command(defaultResultsDir), argv, env, 1);
  if (typeof v === 'number') return v;
  // The parser has refused anything outside BACKENDS; the guard only narrows the type.
  if (!isBackend(v.backend)) throw new Error(`unexpected backend ${v.backend}`);
  return { duration: v.duration, warmup: v.warmup, connections: v.connections, smoke: v.smoke, only: v.only, keep: v.keep, resultsDir: v.results, backend: v.backend };
}
