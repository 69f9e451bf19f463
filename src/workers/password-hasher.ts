/**
 * Argon2id off the event loop: a Piscina pool running workers/argon2.ts.
 *
 * The task file is always loaded compiled, from dist/workers/argon2.js (found through WORKERS_DIR),
 * both when the service runs from dist/ and when vitest runs the sources: worker threads cannot
 * load TypeScript by themselves. `npm test` builds first ("pretest"), so tests see a fresh copy.
 *
 * The queue is bounded: past `maxQueue` waiting tasks a request gets 503 + Retry-After instead of
 * piling up latency (a burst of logins must not take the whole instance down). The threads run
 * at a lower priority (workers.argon2_nice): with every core hashing, the event loop and the
 * libuv threads that sign tokens still get a core as soon as they need one.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Piscina } from 'piscina';
import type { Config } from '../config/index.js';
import { Unavailable } from '../errors.js';
import type { Metrics } from '../metrics/metrics.js';
import { WORKERS_DIR } from '../paths.js';
import { FairAdmission } from './fair-admission.js';
import type { Argon2Params, Argon2WorkerData, HashTask, VerifyTask } from '../../workers/argon2.js';

export const ARGON2_WORKER_FILE = join(WORKERS_DIR, 'argon2.js');

/**
 * Piscina itself is loaded with the pool, on the first hash (issue 17: an idle instance does not
 * hold it). CommonJS build through require, so that getPool stays synchronous.
 */
const requireModule = createRequire(import.meta.url);

export interface PasswordHasherOptions {
  argon2: Argon2Params;
  /** Worker threads; 0 or undefined = os.availableParallelism(). */
  threads?: number;
  /** Tasks allowed to wait for a free thread. */
  maxQueue: number;
  /** Nice value of the worker threads (Linux: per thread); 0 or undefined = unchanged. */
  nice?: number;
  metrics?: Pick<Metrics, 'workerQueueDepth' | 'workerTaskDuration'>;
  /** Override of the compiled task file (tests). */
  filename?: string;
}

type TaskName = 'hash' | 'verify';

export class PasswordHasher {
  private pool: Piscina | undefined;
  private readonly threads: number;
  private inFlight = 0;
  private readonly admission: FairAdmission;
  private closed = false;

  constructor(private readonly opts: PasswordHasherOptions) {
    this.threads = opts.threads && opts.threads > 0 ? opts.threads : availableParallelism();
    this.admission = new FairAdmission(this.threads, opts.maxQueue);
  }

  static fromConfig(config: Config, metrics?: Metrics): PasswordHasher {
    return new PasswordHasher({
      argon2: config.security.password.argon2,
      threads: config.workers.argon2_threads,
      maxQueue: config.workers.argon2_max_queue,
      nice: config.workers.argon2_nice,
      metrics,
    });
  }

  hash(password: string): Promise<string> {
    const task: HashTask = { password, params: this.opts.argon2 };
    return this.run<string>('hash', task);
  }

  /**
   * `source` (the client's address at sign-in) goes through fair admission (fair-admission.ts):
   * slots are shared out per source, and the source over its share gets 429, not everyone 503.
   */
  async verify(hash: string, password: string, source?: string): Promise<boolean> {
    const task: VerifyTask = { hash, password };
    if (source === undefined) return this.run<boolean>('verify', task);
    await this.admission.acquire(source);
    try {
      return await this.run<boolean>('verify', task);
    } finally {
      this.admission.release(source);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const pool = this.pool;
    this.pool = undefined;
    await pool?.close();
  }

  /** Created on first use, so commands that never hash (CLI, most tests) start no threads. */
  private getPool(): Piscina {
    if (this.closed) throw new Unavailable('The service is shutting down');
    if (!this.pool) {
      const filename = this.opts.filename ?? ARGON2_WORKER_FILE;
      if (!existsSync(filename)) throw new Error(`Argon2 worker not found at ${filename}: run \`npm run build\` first`);
      const { Piscina: Pool } = requireModule('piscina') as typeof import('piscina');
      this.pool = new Pool({
        filename,
        maxThreads: this.threads,
        minThreads: Math.max(1, Math.floor(this.threads / 2)),
        // Keep spare threads a while: spawning one costs more than a hash.
        idleTimeout: 60_000,
        // The bound is enforced below, on tasks in flight, which is exact even while threads start.
        maxQueue: Infinity,
        workerData: { nice: this.opts.nice ?? 0 } satisfies Argon2WorkerData,
        // Piscina's own run/wait-time histograms are never read (workerTaskDuration is ours):
        // not recording them saves two histogram updates per hash.
        recordTiming: false,
      });
    }
    return this.pool;
  }

  private async run<R>(name: TaskName, task: HashTask | VerifyTask): Promise<R> {
    const pool = this.getPool();
    if (this.inFlight >= this.threads + this.opts.maxQueue) throw queueFull();
    this.inFlight++;
    const started = performance.now();
    try {
      const result = pool.run(task, { name }) as Promise<R>;
      this.reportDepth(pool);
      return await result;
    } catch (err) {
      if (err instanceof Error && /queue is at limit|no task queue available/i.test(err.message)) throw queueFull();
      throw err;
    } finally {
      this.inFlight--;
      this.reportDepth(pool);
      this.opts.metrics?.workerTaskDuration.observe({ task: `argon2_${name}` }, (performance.now() - started) / 1000);
    }
  }

  private reportDepth(pool: Piscina): void {
    this.opts.metrics?.workerQueueDepth.set(pool.queueSize);
  }
}

function queueFull(): Unavailable {
  return new Unavailable('Too many password operations in progress; retry shortly');
}
