/** Prometheus metrics (CONTRACT.md names). Always collected; served only when features.metrics.enabled. */
import client from 'prom-client';
import type { Config } from '../config/index.js';
import type { UserCacheStats } from '../storage/types.js';
import { BatchedCounter, SeriesHistogram } from './request-series.js';

export class Metrics {
  readonly registry = new client.Registry();
  /** Counted per request through series bound once (request-series.ts). */
  readonly httpRequests: BatchedCounter<'route' | 'method' | 'status'>;
  readonly httpDuration: SeriesHistogram<'route' | 'method'>;
  readonly tokensIssued: client.Counter<'grant_type'>;
  readonly poolSize: client.Gauge;
  readonly poolHits: client.Counter;
  readonly poolMisses: client.Counter;
  readonly poolEvictions: client.Counter<'reason'>;
  /** Time to build a tenant actor on a pool miss (what a cold tenant's first request waits for). */
  readonly poolCreateDuration: client.Histogram;
  readonly workerQueueDepth: client.Gauge;
  readonly workerTaskDuration: client.Histogram<'task'>;
  readonly loginAttempts: client.Counter<'result'>;
  readonly socialLogins: client.Counter<'provider' | 'result'>;
  private readonly prefix: string;

  constructor(config: Config) {
    const p = config.features.metrics.prefix;
    const registers = [this.registry];
    this.httpRequests = new BatchedCounter({ name: `${p}http_requests_total`, help: 'HTTP requests', labelNames: ['route', 'method', 'status'], registers });
    this.httpDuration = new SeriesHistogram({
      name: `${p}http_request_duration_seconds`,
      help: 'HTTP request duration',
      labelNames: ['route', 'method'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.tokensIssued = new client.Counter({ name: `${p}tokens_issued_total`, help: 'Tokens issued', labelNames: ['grant_type'], registers });
    this.poolSize = new client.Gauge({ name: `${p}tenant_pool_size`, help: 'Live tenant actors', registers });
    this.poolHits = new client.Counter({ name: `${p}tenant_pool_hits_total`, help: 'Actor pool hits', registers });
    this.poolMisses = new client.Counter({ name: `${p}tenant_pool_misses_total`, help: 'Actor pool misses (cold starts)', registers });
    this.poolEvictions = new client.Counter({ name: `${p}tenant_pool_evictions_total`, help: 'Actor pool evictions', labelNames: ['reason'], registers });
    this.poolCreateDuration = new client.Histogram({
      name: `${p}tenant_actor_create_seconds`,
      help: 'Time to build a tenant actor on a pool miss',
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1],
      registers,
    });
    this.workerQueueDepth = new client.Gauge({ name: `${p}worker_pool_queue_depth`, help: 'Tasks waiting for a worker', registers });
    this.workerTaskDuration = new client.Histogram({
      name: `${p}worker_task_duration_seconds`,
      help: 'Worker task duration',
      labelNames: ['task'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    });
    this.loginAttempts = new client.Counter({ name: `${p}login_attempts_total`, help: 'Password login attempts', labelNames: ['result'], registers });
    // provider: the preset name or `oidc` (bounded); result: src/oidc/social-signin.ts SocialResult.
    this.socialLogins = new client.Counter({ name: `${p}social_logins_total`, help: 'Social sign-ins by provider and result', labelNames: ['provider', 'result'], registers });
    this.prefix = p;
    if (config.features.metrics.enabled && config.features.metrics.include_default_metrics) {
      client.collectDefaultMetrics({ register: this.registry, prefix: p });
    }
  }

  /**
   * The storage's user memory (PostgreSQL: storage/postgresql/user-cache.ts), read when scraped:
   * whether it serves (0 while its listener is not known to hear the change notices, e.g. behind a
   * pooler in transaction mode), how many users it holds, and its hits and misses since start.
   */
  watchUserCache(stats: () => UserCacheStats): void {
    const p = this.prefix;
    const registers = [this.registry];
    new client.Gauge({ name: `${p}user_cache_serving`, help: 'Whether the token paths read users from memory (1) or from the database (0)', registers, collect() { this.set(stats().serving ? 1 : 0); } });
    new client.Gauge({ name: `${p}user_cache_entries`, help: 'Users held in memory for the token paths', registers, collect() { this.set(stats().entries); } });
    // Counters whose totals live in the cache: each scrape adds what accrued since the last.
    const counter = (name: string, help: string, read: (s: UserCacheStats) => number) => {
      let reported = 0;
      new client.Counter({ name, help, registers, collect() {
        const total = read(stats());
        if (total > reported) this.inc(total - reported);
        reported = total;
      } });
    };
    counter(`${p}user_cache_hits_total`, 'Token-path user reads answered from memory', (s) => s.hits);
    counter(`${p}user_cache_misses_total`, 'Token-path user reads that went to the database while the memory served', (s) => s.misses);
  }
}
