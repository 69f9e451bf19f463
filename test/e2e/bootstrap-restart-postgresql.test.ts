/**
 * Start-up provisioning across restarts, multi-tenant on PostgreSQL + Redis (src/bootstrap.ts):
 * instances of the service in this process on one database and one Redis key prefix, each with its
 * own caches, its own log and one public address (BASE_URL), restarted with the bootstrap variables
 * still set.
 *
 * - two instances starting at once on an empty database create one `_platforms` administrator;
 * - the administrator given another e-mail, or deleted, is not created again;
 * - a secret the bootstrap writes to its client (the configured value changed while the stored
 *   secret is still the bootstrap's) is announced: the other instance refuses the old one at once
 *   instead of serving its cached client for 5 minutes;
 * - a secret regenerated through the API survives a restart with the old value still configured,
 *   on every instance, with a warning.
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config/index.js';
import { MANAGEMENT_SCOPES } from '../../src/oidc/scopes.js';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, dropRedisKeys, freePort } from '../helpers/app.js';
import { migratedDatabase, type TestDatabase } from '../helpers/postgres.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { send } from '../helpers/tenant-http.js';

const ADMIN_EMAIL = 'root@platform.example.com';
const ADMIN_PASSWORD = 'Platform-Admin-Passw0rd';
const RESOURCE = 'urn:svc:api:v1';
const PLATFORMS = '_platforms';
const NEW_SECRET = `configured-later-${randomBytes(8).toString('hex')}`;

interface Started {
  app: App;
  lines: Array<Record<string, any>>;
}

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let db: TestDatabase;
let prefix: string;
let baseUrl: string;
const running = new Set<Started>();

async function start(env: Record<string, string> = {}): Promise<Started> {
  const lines: Array<Record<string, any>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line));
      done();
    },
  });
  const config = loadConfig({
    NODE_ENV: 'development',
    HOST: '127.0.0.1',
    PORT: String(await freePort()),
    BASE_URL: baseUrl,
    MULTI_TENANCY_ENABLED: 'true',
    STORAGE_ADAPTER: 'postgresql',
    STORAGE_POSTGRESQL_URL: db.url,
    REDIS_URL: SHARED_REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    SVC_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    SVC_BOOTSTRAP_CLIENT_ID: BOOTSTRAP_ID,
    SVC_BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP_SECRET,
    SVC_BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL,
    SVC_BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
    SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false',
    WORKERS_ARGON2_THREADS: '1',
    ...env,
  });
  const started = { app: await startApp(config, { log: pino({ level: 'info' }, stream) }), lines };
  running.add(started);
  return started;
}

async function stop(s: Started): Promise<void> {
  running.delete(s);
  await s.app.close();
}

/** The status of a client_credentials request of the bootstrap client with this secret. */
async function tokenStatus(s: Started, secret: string): Promise<number> {
  const res = await send(s.app.port, 'POST', '/oidc/v1/token', {
    tenant: PLATFORMS,
    auth: basic(BOOTSTRAP_ID, secret),
    form: { grant_type: 'client_credentials', resource: RESOURCE, scope: 'svc:clients:read' },
  });
  return res.status;
}

/** A Management token of the bootstrap client with every svc:* scope (needed to regenerate its secret). */
async function managementToken(s: Started, secret: string): Promise<string> {
  const res = await send(s.app.port, 'POST', '/oidc/v1/token', {
    tenant: PLATFORMS,
    auth: basic(BOOTSTRAP_ID, secret),
    form: { grant_type: 'client_credentials', resource: RESOURCE, scope: MANAGEMENT_SCOPES.join(' ') },
  });
  if (res.status !== 200) throw new Error(`token: ${res.status} ${res.text}`);
  return res.json.access_token as string;
}

/**
 * Polls until `status()` gives `want` or `ms` pass; the last status seen. Slowly: each refused
 * secret counts towards the client-authentication throttle (20 a minute, src/oidc/auth-throttle.ts).
 */
async function eventually(status: () => Promise<number>, want: number, ms = 2000): Promise<number> {
  let last = 0;
  for (const end = Date.now() + ms; Date.now() < end; ) {
    last = await status();
    if (last === want) return last;
    await sleep(250);
  }
  return last;
}

async function platformUsers(): Promise<Array<{ id: string; email: string | null; role: string }>> {
  const admin = await db.admin();
  try {
    const { rows } = await admin.query("SELECT id, email, role FROM users WHERE tenant_id = '_platforms' AND deleted_at IS NULL ORDER BY created_at");
    return rows;
  } finally {
    await admin.end();
  }
}

const warned = (s: Started, pattern: RegExp) => s.lines.filter((l) => l.level === 40 && pattern.test(l.msg));

describe('bootstrap across restarts (multi-tenant, PostgreSQL + Redis)', () => {
  let a: Started;
  let b: Started;
  let secret = BOOTSTRAP_SECRET;

  beforeAll(async () => {
    db = await migratedDatabase();
    prefix = uniquePrefix('bootstrap');
    baseUrl = `http://localhost:${await freePort()}`;
  });
  afterAll(async () => {
    for (const s of [...running]) await s.app.close();
    await db?.drop();
    if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
  });

  it('two instances starting at once on an empty database create one administrator', async () => {
    [a, b] = await Promise.all([start(), start()]);
    const users = await platformUsers();
    expect(users).toEqual([{ id: expect.any(String), email: ADMIN_EMAIL, role: 'superadmin' }]);
    for (const s of [a, b]) expect(warned(s, /SVC_BOOTSTRAP_ADMIN_EMAIL\/PASSWORD are set/)).toHaveLength(1);
  });

  it('an administrator given another e-mail is not created again on restart', async () => {
    const [admin] = await platformUsers();
    const token = await managementToken(a, secret);
    const renamed = await send(a.app.port, 'PATCH', `/api/v1/users/${admin!.id}`, { tenant: PLATFORMS, token, body: { email: 'renamed@platform.example.com' } });
    expect(renamed.status, renamed.text).toBe(200);

    await stop(b);
    b = await start();
    expect(await platformUsers()).toEqual([{ id: admin!.id, email: 'renamed@platform.example.com', role: 'superadmin' }]);
    expect(warned(b, /^SVC_BOOTSTRAP_ADMIN_EMAIL\/PASSWORD are set but ignored: .*remove them$/)).toHaveLength(1);
    expect(warned(b, /SVC_BOOTSTRAP_ADMIN_EMAIL\/PASSWORD are set/)).toHaveLength(1);
  });

  it('a deleted administrator is not created again on restart', async () => {
    const token = await managementToken(a, secret);
    for (const user of await platformUsers()) {
      const deleted = await send(a.app.port, 'DELETE', `/api/v1/users/${user.id}`, { tenant: PLATFORMS, token });
      expect(deleted.status, deleted.text).toBe(204);
    }
    expect(await platformUsers()).toEqual([]);

    await stop(b);
    b = await start();
    expect(await platformUsers()).toEqual([]);
    expect(warned(b, /^SVC_BOOTSTRAP_ADMIN_EMAIL\/PASSWORD are set but ignored/)).toHaveLength(1);
  });
  it('a secret the bootstrap writes is announced: the other instance refuses the old one at once', async () => {
    // A has read the client (its cache would otherwise keep it for 5 minutes).
    expect(await tokenStatus(a, secret)).toBe(200);
    await stop(b);
    b = await start({ SVC_BOOTSTRAP_CLIENT_SECRET: NEW_SECRET });
    expect(warned(b, /^bootstrap client secret changed to the configured value$/)).toHaveLength(1);
    secret = NEW_SECRET;
    expect(await eventually(() => tokenStatus(a, NEW_SECRET), 200)).toBe(200);
    expect(await tokenStatus(a, BOOTSTRAP_SECRET)).toBe(401);
    expect(await tokenStatus(b, BOOTSTRAP_SECRET)).toBe(401);
    expect(await tokenStatus(b, NEW_SECRET)).toBe(200);
  });

  it('a secret regenerated through the API is kept on a restart with the old one still configured, on every instance', async () => {
    const token = await managementToken(a, secret);
    const res = await send(a.app.port, 'POST', `/api/v1/clients/${BOOTSTRAP_ID}/secret`, { tenant: PLATFORMS, token });
    expect(res.status, res.text).toBe(200);
    const regenerated = res.json.data.client_secret as string;
    expect(await eventually(() => tokenStatus(b, secret), 401)).toBe(401);

    await stop(b);
    b = await start({ SVC_BOOTSTRAP_CLIENT_SECRET: NEW_SECRET });
    expect(warned(b, /SVC_BOOTSTRAP_CLIENT_SECRET is ignored: .*POST \/api\/v1\/clients\/bootstrap-admin\/secret/)).toHaveLength(1);
    expect(warned(b, /changed to the configured value/)).toHaveLength(0);
    for (const s of [a, b]) {
      expect(await tokenStatus(s, regenerated)).toBe(200);
      expect(await tokenStatus(s, NEW_SECRET)).toBe(401);
      expect(await tokenStatus(s, BOOTSTRAP_SECRET)).toBe(401);
    }
    // A token of either instance is good on the other.
    const fromA = await managementToken(a, regenerated);
    const fromB = await managementToken(b, regenerated);
    expect((await send(b.app.port, 'GET', `/api/v1/clients/${BOOTSTRAP_ID}`, { tenant: PLATFORMS, token: fromA })).status).toBe(200);
    expect((await send(a.app.port, 'GET', `/api/v1/clients/${BOOTSTRAP_ID}`, { tenant: PLATFORMS, token: fromB })).status).toBe(200);
    secret = regenerated;
  });
});
