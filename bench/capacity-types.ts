/** The shapes bench/capacity.ts measures and bench/capacity-report.ts renders (their own module, so neither imports the other). */
import type { Latency } from './load.js';
import type { HistogramSnapshot, TableActivity } from './tenant-fleet.js';

export interface Options {
  tenants: number;
  pools: number[];
  idleTtls: number[];
  cleanupIntervalMs: number;
  seconds: number;
  warmup: number;
  connections: number;
  zipfS: number;
  rssBudgetMb: number;
  /** Decode one answer in this many (1 = every answer). */
  checkEvery: number;
  seedConcurrency: number;
  /** Request every tenant once before the warm-up (steady state of a long-running instance). */
  prime: boolean;
  smoke: boolean;
  keepDb: boolean;
  resultsDir: string;
}

export interface Setting {
  label: string;
  single: boolean;
  pool: number;
  idleTtlMs: number;
  cleanupIntervalMs: number;
}

export interface SettingResult extends Setting {
  readyMs: number;
  requests: number;
  seconds: number;
  rps: number;
  /** rps / the single-tenant runs' mean rps, in percent (null for the single-tenant runs). */
  percentOfSingle: number | null;
  /** The same by server CPU: single-tenant CPU µs/req / this setting's, in percent (steadier on shared cores). */
  percentOfSingleCpu: number | null;
  latency: Latency;
  pool_: { hits: number; misses: number; hitRate: number | null; joinedInFlight: number; evictions: Record<string, number>; sizeAtEnd: number };
  /** svc_tenant_actor_create_seconds over the measured window (ms); `over`: beyond the last finite bucket. */
  coldServer: {
    creations: number;
    meanMs: number | null;
    p50Ms: number | null;
    p99Ms: number | null;
    p50Over: boolean;
    p99Over: boolean;
    /** The quantile fell in the first bucket: it is below this bound (ms), the interpolation says no more. */
    p50Below: number | null;
    p99Below: number | null;
    buckets: HistogramSnapshot['buckets'];
  };
  /** 200 answers whose tenant was not among the P most recently requested (client-side LRU mirror). */
  coldClient: { requests: number; p50: number | null; p99: number | null };
  cpuMicrosPerRequest: number | null;
  loadgenCpuMicrosPerRequest: number | null;
  /** CPU of the PostgreSQL backends serving the product (its pool connections) per request. */
  pgCpuMicrosPerRequest: number | null;
  /** pg_stat_database of the run's database over the window: transactions per request, rows updated and inserted per second. */
  pg: { xactsPerRequest: number | null; updatedPerSecond: number; insertedPerSecond: number; perRequestByTable: Record<string, TableActivity> };
  /** CPU of everything else on the machine (other engineers' work, Redis), in % of one core. */
  otherCpuPercentOfCore: number;
  eventLoopP99Ms: number | null;
  rss: { idleBytes: number | null; windowMaxBytes: number | null; peakBytes: number | null; endBytes: number | null };
  tenantsTouched: number;
  /** The priming pass (every tenant once, before the warm-up), or null when skipped. */
  prime: { tenants: number; seconds: number; rps: number } | null;
  failures: {
    connectionErrors: number;
    timeouts: number;
    unexpectedStatus: number;
    wrongAnswers: number;
    checkedAnswers: number;
    warmup: number;
    preCheck: string | null;
    serverErrorLines: number;
  };
  statusCodes: Record<string, number>;
  wrongExamples: string[];
  serverLogTail?: string[];
}
