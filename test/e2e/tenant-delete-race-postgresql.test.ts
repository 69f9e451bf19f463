/**
 * A tenant's DELETE racing writes in flight (fifth session of 2026-12-01): two instances create
 * users and clients of the tenant while it is deleted through the other one. No write may commit
 * after the delete did: every creation answers 201 (committed before the delete, and purged by it)
 * or 404 (the tenant was gone: the PostgreSQL write guard, migration 110), no 201 arrives after the
 * delete's 204, and no row of the tenant is left in any tenant-owned table. The slug can then be
 * created again, starts empty and is deleted as usual.
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config/index.js';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, dropRedisKeys, freePort } from '../helpers/app.js';
import { migratedDatabase, type TestDatabase } from '../helpers/postgres.js';
import { expectProblem } from '../helpers/problem.js';
import { SHARED_REDIS_URL, uniquePrefix } from '../helpers/redis.js';
import { send, type TenantResponse } from '../helpers/tenant-http.js';

const RESOURCE = 'urn:svc:api:v1';
const run = randomBytes(3).toString('hex');
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

let db: TestDatabase;
let prefix: string;
const apps: App[] = [];

async function start(): Promise<App> {
  const config = loadConfig({
    MULTI_TENANCY_ENABLED: 'true',
    STORAGE_ADAPTER: 'postgresql',
    REDIS_URL: SHARED_REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    NODE_ENV: 'development',
    HOST: '127.0.0.1',
    PORT: String(await freePort()),
    STORAGE_POSTGRESQL_URL: db.url,
    SVC_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    SVC_BOOTSTRAP_CLIENT_ID: BOOTSTRAP_ID,
    SVC_BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP_SECRET,
  });
  const app = await startApp(config, { log: pino({ level: 'silent' }) });
  apps.push(app);
  return app;
}

async function platformToken(port: number, scope: string): Promise<string> {
  const res = await send(port, 'POST', '/oidc/v1/token', {
    tenant: '_platforms',
    headers: { authorization: basic(BOOTSTRAP_ID, BOOTSTRAP_SECRET) },
    form: { grant_type: 'client_credentials', resource: RESOURCE, scope },
  });
  if (res.status !== 200) throw new Error(`platform token: ${res.status} ${res.text}`);
  return res.json.access_token as string;
}

/** Rows of `tenant` in every table with a tenant_id column but the registry (as postgres: no RLS). */
async function rowsLeft(tenant: string): Promise<Record<string, number>> {
  const admin = await db.admin();
  try {
    const { rows: tables } = await admin.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
       WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname <> 'tenants' ORDER BY 1`,
    );
    expect(tables.map((t) => t.name)).toEqual(expect.arrayContaining(['users', 'clients', 'audit_entries', 'signing_keys']));
    const left: Record<string, number> = {};
    for (const { name } of tables) {
      const { rows } = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${name}" WHERE tenant_id = $1`, [tenant]);
      if (rows[0]!.n > 0) left[name] = rows[0]!.n;
    }
    return left;
  } finally {
    await admin.end();
  }
}

beforeAll(async () => {
  db = await migratedDatabase();
  prefix = uniquePrefix('tdel');
  await start();
  await start();
});

afterAll(async () => {
  for (const app of apps) await app.close();
  await db?.drop();
  if (prefix) await dropRedisKeys(SHARED_REDIS_URL, prefix);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a tenant delete racing writes in flight (two instances)', () => {
  it('commits no write after the delete: each creation answers 201 before the 204 or 404, and nothing of the tenant is left', async () => {
    const [a, b] = apps as [App, App];
    const name = `zeta-${run}`;
    // A token per instance: the issuer names the instance's own base URL.
    const tenantsToken = await platformToken(a.port, 'svc:tenants:write svc:tenants:delete');
    const tenantsTokenB = await platformToken(b.port, 'svc:tenants:delete');
    const writeTokens = new Map<number, string>();
    for (const app of [a, b]) writeTokens.set(app.port, await platformToken(app.port, 'svc:cross-tenant:write svc:users:write svc:clients:write'));
    const writeToken = writeTokens.get(b.port)!;
    expect((await send(a.port, 'POST', '/api/v1/tenants', { token: tenantsToken, body: { slug: name, display_name: 'Zeta' } })).status).toBe(201);
    // Both instances have resolved the tenant (their registry caches hold it) before the race.
    for (const app of [a, b]) expect((await send(app.port, 'GET', '/oidc/v1/jwks', { tenant: name })).status).toBe(200);

    let deletedAt = 0;
    const answers: Array<{ kind: string; res: TenantResponse; at: number }> = [];
    const writes: Array<Promise<void>> = [];
    const fire = (i: number) => {
      const port = i % 2 === 0 ? a.port : b.port;
      const token = writeTokens.get(port)!;
      const write =
        i % 3 === 2
          ? send(port, 'POST', '/api/v1/clients', { tenant: name, token, body: { client_name: `race ${i}`, grant_types: ['client_credentials'] } })
          : send(port, 'POST', '/api/v1/users', { tenant: name, token, body: { email: `race${i}-${run}@example.com`, password: 'Correct-Horse-Battery-9', email_verified: true } });
      writes.push(write.then((res) => void answers.push({ kind: i % 3 === 2 ? 'clients' : 'users', res, at: performance.now() })));
    };

    const firing = (async () => {
      for (let i = 0; i < 45; i++) {
        fire(i);
        await sleep(3);
      }
    })();
    await sleep(40);
    const deleted = await send(b.port, 'DELETE', `/api/v1/tenants/${name}`, { token: tenantsTokenB });
    deletedAt = performance.now();
    expect(deleted.status).toBe(204);
    await firing;
    await Promise.all(writes);

    for (const { kind, res } of answers) {
      if (res.status === 404) expectProblem(res, 404, 'not-found', `/api/v1/${kind}`);
      else expect(res.status, res.text).toBe(201);
    }
    // The race happened: some writes won (before the delete), some lost.
    expect(answers.filter((x) => x.res.status === 201).length).toBeGreaterThan(0);
    expect(answers.filter((x) => x.res.status === 404).length).toBeGreaterThan(0);
    const late = answers.filter((x) => x.res.status === 201 && x.at > deletedAt).map((x) => `${x.kind} ${x.res.json?.data?.id ?? x.res.json?.data?.client_id}`);
    expect({ late, rows: await rowsLeft(name) }).toEqual({ late: [], rows: {} });

    // The slug can be created again: empty, usable, and deleted as usual.
    expect((await send(a.port, 'POST', '/api/v1/tenants', { token: tenantsToken, body: { slug: name, display_name: 'Zeta again' } })).status).toBe(201);
    const listToken = await platformToken(b.port, 'svc:cross-tenant:read svc:users:read');
    const listed = await send(b.port, 'GET', '/api/v1/users', { tenant: name, token: listToken });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.json.data).toEqual([]);
    const again = await send(b.port, 'POST', '/api/v1/users', { tenant: name, token: writeToken, body: { email: `again-${run}@example.com`, password: 'Correct-Horse-Battery-9' } });
    expect(again.status, again.text).toBe(201);
    expect((await send(a.port, 'DELETE', `/api/v1/tenants/${name}`, { token: tenantsToken })).status).toBe(204);
    expect(await rowsLeft(name)).toEqual({});
    expectProblem(await send(b.port, 'POST', '/api/v1/users', { tenant: name, token: writeToken, body: { email: `late-${run}@example.com` } }), 404, 'not-found', '/api/v1/users');
  });
});
