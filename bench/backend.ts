/**
 * Where the product under `npm run bench` (run.ts) keeps its data: its embedded SQLite in the run's
 * temp dir (the default), or PostgreSQL + Redis as in production (issue 17: "the same rows on
 * PostgreSQL + Redis"). The PostgreSQL run gets a migrated scratch database and a Redis key prefix
 * of its own, through the helpers the multi-tenant benches use (services.ts, tenant-fleet.ts), and
 * both are removed by `close()`. The stock oidc-provider baseline is not concerned: it stays in memory.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { processCpuMicros } from './cpu.js';
import type { CompanionProbe } from './load.js';
import { createMigratedDatabase, onPgServer, purgeRedisPrefix, type ScratchDatabase } from './services.js';
import { PG_SERVER, REDIS_URL, backendPids, cpuOfPids, newRedisPrefix } from './tenant-fleet.js';

export const BACKENDS = ['sqlite', 'postgresql'] as const;
export type Backend = (typeof BACKENDS)[number];

export const isBackend = (name: string): name is Backend => (BACKENDS as readonly string[]).includes(name);

/** What the report records about the product's storage (JSON `environment.productBackend`). */
export interface BackendInfo {
  name: Backend;
  /** One line for the report's header. */
  description: string;
  /** PostgreSQL only: the scratch database, the server's version, the Redis key prefix. */
  database?: string;
  postgresqlVersion?: string;
  redisKeyPrefix?: string;
}

export interface ProductBackend {
  readonly info: BackendInfo;
  /** The product's storage settings, given its temp dir. */
  env(dir: string): Record<string, string>;
  /**
   * The processes working for the product besides itself (PostgreSQL's backends on the run's
   * database): their CPU is reported per window, apart from the product's own CPU µs/req.
   */
  readonly companions?: CompanionProbe;
  /** Drops the scratch database and deletes the Redis keys; safe to call more than once. */
  close(): Promise<void>;
}

/** host:port of a server URL, without credentials (the report must not carry a password). */
function hostOf(url: string): string {
  try {
    const u = new URL(url);
    return u.host || url;
  } catch {
    return '?';
  }
}

/**
 * CPU (µs) of a PostgreSQL backend on this machine. The pid comes from pg_stat_activity: a server
 * in a container or on another host has pids of its own namespace, which here may be any process,
 * so a pid whose command is not `postgres` is not read (the server's CPU is then not reported).
 */
function postgresCpuMicros(pid: number): number {
  if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') throw new Error(`pid ${pid} is not a local PostgreSQL backend`);
  return processCpuMicros(pid);
}

const sqlite: ProductBackend = {
  info: { name: 'sqlite', description: "SQLite (embedded, in the product's temp dir)" },
  env: (dir) => ({ STORAGE_SQLITE_PATH: join(dir, 'svc.db') }),
  close: () => Promise.resolve(),
};

async function postgresql(): Promise<ProductBackend> {
  const db: ScratchDatabase = await createMigratedDatabase('svc_bench', PG_SERVER);
  const redisPrefix = newRedisPrefix('run');
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      await db.drop().catch((err: unknown) => process.stderr.write(`bench: could not drop database ${db.name}: ${String(err)}\n`));
      await purgeRedisPrefix(REDIS_URL, redisPrefix).catch((err: unknown) => process.stderr.write(`bench: could not delete Redis keys ${redisPrefix}:*: ${String(err)}\n`));
    })());
  let version: string;
  try {
    version = await onPgServer(PG_SERVER, async (c) => (await c.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version ?? '?');
  } catch (err) {
    await close();
    throw err;
  }
  return {
    info: {
      name: 'postgresql',
      description: `PostgreSQL ${version} at ${hostOf(PG_SERVER)} (scratch database ${db.name}, migrated before the first start) + Redis at ${hostOf(REDIS_URL)} (key prefix ${redisPrefix})`,
      database: db.name,
      postgresqlVersion: version,
      redisKeyPrefix: redisPrefix,
    },
    env: () => ({ STORAGE_ADAPTER: 'postgresql', STORAGE_POSTGRESQL_URL: db.url, REDIS_URL, REDIS_KEY_PREFIX: redisPrefix }),
    // The backends come and go with the product's pool: listed at both ends of the window, a backend
    // that appeared meanwhile counts from its start (capacity.ts reads them the same way).
    companions: { label: 'PostgreSQL backends', cpu: async () => cpuOfPids(await backendPids(db.name), postgresCpuMicros) },
    close,
  };
}

/** The backend of a run; PostgreSQL's scratch database exists from here until `close()`. */
export function openBackend(name: Backend): Promise<ProductBackend> {
  return name === 'postgresql' ? postgresql() : Promise.resolve(sqlite);
}
