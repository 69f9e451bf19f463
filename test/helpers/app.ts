/**
 * Starts the real service on a free port for end-to-end tests, on the backend of the test run
 * (SVC_TEST_BACKEND, see vitest.config.ts):
 *   - sqlite (default): a SQLite file in a temp dir, no Redis;
 *   - postgresql: a fresh migrated PostgreSQL database of its own (test/helpers/postgres.ts) and the
 *     shared Redis (127.0.0.1:6379) under a key prefix no other app or run uses
 *     (REDIS_KEY_PREFIX); both are dropped on close.
 * A test that passes STORAGE_ADAPTER or REDIS_URL itself keeps its own choice for that part.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../bench/processes.js';
import { purgeRedisPrefix } from '../../bench/services.js';
import { startApp, type App } from '../../src/app.js';
import type { Logger } from '../../src/log.js';
import { ListenError } from '../../src/http/server.js';
import { loadConfig } from '../../src/config/index.js';
import { PgStorage } from '../../src/storage/postgresql/index.js';
import { SqliteStorage } from '../../src/storage/sqlite/index.js';
import type { Storage } from '../../src/storage/types.js';
import { migratedDatabase, pgSettings, type TestDatabase } from './postgres.js';

export const BOOTSTRAP_ID = 'bootstrap-admin';
export const BOOTSTRAP_SECRET = 'bootstrap-secret-0123456789abcdef';

export type TestBackend = 'sqlite' | 'postgresql';

/** The backend of this test run: SVC_TEST_BACKEND=postgresql (PostgreSQL + Redis) or SQLite. */
export const TEST_BACKEND: TestBackend = process.env.SVC_TEST_BACKEND === 'postgresql' ? 'postgresql' : 'sqlite';

/** The Redis the postgresql run shares between apps (each app under its own key prefix). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface TestApp {
  app: App;
  /** http://127.0.0.1:<port> */
  url: string;
  /** The issuer the service advertises (BASE_URL + /oidc/v1; BASE_URL is http://localhost:<port>). */
  issuer: string;
  dir: string;
  /** The storage backend this app runs on. */
  backend: TestBackend;
  /** True when the app uses Redis (event bus, OIDC artefacts, rate limits). */
  redis: boolean;
  /** What /readyz's `checks` hold when everything is up (database, and redis when used). */
  readyChecks: Record<string, 'ok'>;
  /** What the health check's `checks` hold when everything is healthy. */
  healthChecks: Record<string, { status: 'healthy' }>;
  /** A Management API token of the bootstrap client with the given scopes. */
  token(scopes: string[] | string): Promise<string>;
  /**
   * Raw SQL on the app's database, bypassing the service (inspection, setting up edge cases):
   * `?` placeholders on both backends; on PostgreSQL it runs as the superuser (no row-level security).
   * Returns the rows (empty for statements without a result).
   */
  sql(text: string, params?: unknown[]): Promise<Array<Record<string, unknown>>>;
  /** A second, independent storage on the same database (as another instance would open it). */
  openStorage(): Promise<Storage>;
  close(): Promise<void>;
}

/**
 * Starts the app on a port learnt by binding and releasing it, so BASE_URL can name it. Another
 * test worker may take that port in between: then the app (which releases everything on a failed
 * listen) is started again on a new port, a few times.
 */
async function listenOnFreePort(configFor: (port: number) => ReturnType<typeof loadConfig>, log?: Logger): Promise<{ app: App; config: ReturnType<typeof loadConfig> }> {
  for (let attempt = 1; ; attempt++) {
    const config = configFor(await freePort());
    try {
      return { app: await startApp(config, log ? { log } : {}), config };
    } catch (err) {
      if (!(err instanceof ListenError) || attempt >= 5) throw err;
    }
  }
}

/** `log`: the service's logger instead of the one its settings make (captureLog, test/helpers/log.ts). */
export async function startTestApp(env: Record<string, string> = {}, opts: { log?: Logger } = {}): Promise<TestApp> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-test-'));
  const backend: TestBackend = env.STORAGE_ADAPTER === 'postgresql' || (env.STORAGE_ADAPTER === undefined && TEST_BACKEND === 'postgresql') ? 'postgresql' : 'sqlite';
  // A database of our own unless the test brought one.
  let db: TestDatabase | undefined;
  const backendEnv: Record<string, string> = {};
  let redisPrefix: string | undefined;
  if (backend === 'postgresql' && !env.STORAGE_POSTGRESQL_URL) {
    db = await migratedDatabase();
    backendEnv.STORAGE_ADAPTER = 'postgresql';
    backendEnv.STORAGE_POSTGRESQL_URL = db.url;
  }
  if (TEST_BACKEND === 'postgresql' && env.REDIS_URL === undefined) {
    redisPrefix = `svctest-${process.pid}-${randomBytes(5).toString('hex')}`;
    backendEnv.REDIS_URL = TEST_REDIS_URL;
    backendEnv.REDIS_KEY_PREFIX = redisPrefix;
  }
  let app: App;
  let config: ReturnType<typeof loadConfig>;
  try {
    ({ app, config } = await listenOnFreePort((port) => loadConfig({
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: String(port),
      STORAGE_SQLITE_PATH: join(dir, 'svc.db'),
      SECURITY_LOGGING_LEVEL: 'warn',
      SECURITY_LOGGING_PRETTY_PRINT: 'false',
      SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false',
      SVC_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
      SVC_BOOTSTRAP_CLIENT_ID: BOOTSTRAP_ID,
      SVC_BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP_SECRET,
      ...backendEnv,
      ...env,
    }), opts.log));
  } catch (err) {
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const url = `http://127.0.0.1:${app.port}`;
  const usesRedis = Boolean(config.redis.url);
  const pgUrl = config.storage.postgresql.url;

  let admin: Promise<import('pg').Client> | undefined;
  const pgAdmin = () => {
    if (!pgUrl) throw new Error('not a PostgreSQL app');
    admin ??= (async () => {
      const { default: pg } = await import('pg');
      const c = new pg.Client({ connectionString: pgUrl });
      // A test that stops or restarts the server kills this connection: forget it (the next sql()
      // opens another) rather than leave pg's 'error' event to end the test run.
      c.on('error', () => {
        admin = undefined;
      });
      await c.connect();
      return c;
    })();
    return admin;
  };

  return {
    app,
    url,
    issuer: `${config.base_url}${config.oidc.path}`,
    dir,
    backend,
    redis: usesRedis,
    readyChecks: usesRedis ? { database: 'ok', redis: 'ok' } : { database: 'ok' },
    healthChecks: {
      database: { status: 'healthy' },
      oidc: { status: 'healthy' },
      config: { status: 'healthy' },
      ...(usesRedis ? { redis: { status: 'healthy' as const } } : {}),
    },
    async token(scopes) {
      const scope = Array.isArray(scopes) ? scopes.join(' ') : scopes;
      const res = await fetch(`${url}/oidc/v1/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${BOOTSTRAP_ID}:${BOOTSTRAP_SECRET}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope }),
      });
      const body = (await res.json()) as { access_token?: string };
      if (!body.access_token) throw new Error(`token request failed: ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async sql(text, params = []) {
      if (backend === 'sqlite') {
        const stmt = (app.ctx.storage as SqliteStorage).db.prepare(text);
        if (stmt.reader) return stmt.all(...params) as Array<Record<string, unknown>>;
        stmt.run(...params);
        return [];
      }
      let n = 0;
      const { rows } = await (await pgAdmin()).query(text.replace(/\?/g, () => `$${++n}`), params);
      return rows as Array<Record<string, unknown>>;
    },
    async openStorage() {
      if (backend === 'sqlite') return SqliteStorage.open(config.storage.sqlite.path);
      return PgStorage.open(pgSettings(pgUrl!));
    },
    async close() {
      await app.close();
      if (admin) await (await admin).end().catch(() => undefined);
      await db?.drop();
      if (redisPrefix) await dropRedisKeys(TEST_REDIS_URL, redisPrefix);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The service started again on `t`'s database, Redis key prefix and public address (BASE_URL, so
 * the tokens `t` issued keep their issuer) with `env` on top: a restart with other settings. Stop
 * `t`'s app first (`t.app.close()`), and close the new app before `t`, whose close drops the database.
 * Requests for a page go to the new app's port with the old address as Host (loopbackFetch).
 */
export function restartTestApp(t: TestApp, env: Record<string, string> = {}, opts: { log?: Logger } = {}): Promise<TestApp> {
  const c = t.app.ctx.config;
  const storage: Record<string, string> =
    t.backend === 'sqlite' ? { STORAGE_SQLITE_PATH: c.storage.sqlite.path } : { STORAGE_ADAPTER: 'postgresql', STORAGE_POSTGRESQL_URL: c.storage.postgresql.url! };
  const redis: Record<string, string> = c.redis.url ? { REDIS_URL: c.redis.url, REDIS_KEY_PREFIX: c.redis.key_prefix } : {};
  return startTestApp({ BASE_URL: c.base_url, ...storage, ...redis, ...env }, opts);
}

/** Deletes every key under `<prefix>:` (bench/services.ts, shared with the benches; best effort here). */
export const dropRedisKeys = (url: string, prefix: string): Promise<void> => purgeRedisPrefix(url, prefix, { bestEffort: true });

export { freePort };

/** fetch with a JSON body and bearer token. */
export async function api(t: TestApp, method: string, path: string, opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${t.url}${path}`, { method, headers, body });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json: json as any };
}
