/**
 * The service on a private PostgreSQL cluster (initdb into a temp dir, a spare port) that the test
 * freezes, crashes and starts again (Redis: the run's shared server under the app's own prefix):
 * while the database is away, /readyz and the health check say so (503) and requests that need it
 * fail fast with 503 problem+json (connection and statement timeouts) instead of hanging; when it is
 * back the service recovers by itself, and what was committed before the outage is still there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type TestApp } from '../helpers/app.js';
import { bootstrap, postForm } from '../helpers/oauth.js';
import type { PrivatePostgres } from '../helpers/postgres.js';
import { appOnPrivatePostgres, type AppOnPrivatePostgres } from '../helpers/private-postgres-app.js';
import { expectProblem } from '../helpers/problem.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let server: PrivatePostgres;
let t: TestApp;
let admin: string;
/** A client committed just before the outage. */
let before: { client_id: string; client_secret: string };

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const started = Date.now();
  const v = await fn();
  return [v, Date.now() - started];
}

const readyz = async () => {
  const res = await fetch(`${t.url}/readyz`);
  return { status: res.status, body: (await res.json()) as { status: string; checks: Record<string, string> } };
};
const health = () => api(t, 'GET', '/api/v1/stats/health', { token: admin });
const listClients = () => api(t, 'GET', '/api/v1/clients?limit=100', { token: admin });
const createClient = (name: string) => api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: name, grant_types: ['client_credentials'], scope: 'svc:clients:read' } });

async function waitFor(cond: () => Promise<boolean>, ms: number): Promise<number> {
  const started = Date.now();
  while (!(await cond())) {
    if (Date.now() - started > ms) throw new Error(`condition not met within ${ms} ms`);
    await sleep(50);
  }
  return Date.now() - started;
}

let running: AppOnPrivatePostgres | undefined;

beforeAll(async () => {
  // Short timeouts (1 s to connect, 1 s per statement), as an operator would set them for fail-fast behaviour.
  running = await appOnPrivatePostgres({ SECURITY_RATE_LIMIT_READ: '100000', SECURITY_RATE_LIMIT_WRITE: '100000' });
  ({ server, t } = running);
  admin = await t.token('svc:clients:read svc:clients:write svc:stats:read');
});

afterAll(async () => {
  await running?.close();
});

describe('with PostgreSQL up', () => {
  it('is ready and healthy, and commits a client', async () => {
    expect(await readyz()).toEqual({ status: 200, body: { status: 'ready', checks: t.readyChecks } });
    expect((await health()).json.data).toMatchObject({ status: 'healthy', checks: t.healthChecks });
    const res = await createClient('committed before the outage');
    expect(res.status).toBe(201);
    before = res.json.data;
  });
});

describe('with PostgreSQL frozen (connections open, nothing answers)', () => {
  beforeAll(() => server.pause());
  afterAll(() => server.resume());

  it('readiness, health and a Management call give up within about 2 s instead of hanging', async () => {
    const [ready, readyMs] = await timed(readyz);
    expect(ready).toEqual({ status: 503, body: { status: 'not_ready', checks: { ...t.readyChecks, database: 'unavailable' } } });
    expect(readyMs).toBeLessThan(2500);

    const [res, ms] = await timed(listClients);
    expectProblem(res, 503, 'unavailable', '/api/v1/clients');
    expect(res.headers.get('retry-after')).toBe('1');
    expect(ms).toBeLessThan(2500);

    const [h, healthMs] = await timed(health);
    expect(h.status).toBe(503);
    expect(h.json.data).toMatchObject({ status: 'degraded', checks: { database: { status: 'unhealthy' } } });
    expect(healthMs).toBeLessThan(2500);
  });
});

describe('with PostgreSQL down (crashed: immediate shutdown)', () => {
  beforeAll(async () => {
    await server.stop('immediate');
  });

  it('/readyz answers 503 naming the database, at once', async () => {
    const [res, ms] = await timed(readyz);
    expect(res).toEqual({ status: 503, body: { status: 'not_ready', checks: { ...t.readyChecks, database: 'unavailable' } } });
    expect(ms).toBeLessThan(1000);
  });

  it('Management reads and writes fail fast with 503 problem+json', async () => {
    const [list, listMs] = await timed(listClients);
    const body = expectProblem(list, 503, 'unavailable', '/api/v1/clients');
    expect(body.request_id).toEqual(expect.any(String));
    expect(list.headers.get('retry-after')).toBe('1');
    // The reason, never the driver's error (address, port, errno).
    expect(body.detail).toBe('PostgreSQL is unavailable; retry shortly');
    expect(JSON.stringify(body)).not.toMatch(/ECONN|127\.0\.0\.1|:\d{4,5}\b/);
    expect(listMs).toBeLessThan(2000);

    const [create, createMs] = await timed(() => createClient('written during the outage'));
    expectProblem(create, 503, 'unavailable', '/api/v1/clients');
    expect(createMs).toBeLessThan(2000);
  });

  it('the health check answers 503 degraded with the database unhealthy and the rest healthy', async () => {
    const [res, ms] = await timed(health);
    expect(res.status).toBe(503);
    expect(res.json.data).toEqual({ status: 'degraded', checks: { ...t.healthChecks, database: { status: 'unhealthy' } }, timestamp: expect.any(String) });
    expect(ms).toBeLessThan(2500);
  });

  it('an OIDC request that needs the database answers 503 temporarily_unavailable', async () => {
    // A client this instance has never seen must be read from the database.
    const [res, ms] = await timed(() => postForm(t, '/token', { grant_type: 'client_credentials', scope: 'svc:clients:read' }, { id: 'never-seen-client', secret: 'x'.repeat(32) }));
    expect(res.status).toBe(503);
    expect(res.json).toMatchObject({ error: 'temporarily_unavailable' });
    expect(ms).toBeLessThan(2000);
  });

  it('what is held in memory is still served (discovery, JWKS)', async () => {
    expect((await fetch(`${t.url}/oidc/v1/.well-known/openid-configuration`)).status).toBe(200);
    expect((await fetch(`${t.url}/oidc/v1/jwks`)).status).toBe(200);
  });
});

describe('when PostgreSQL is back', () => {
  beforeAll(async () => {
    await server.start();
  });

  it('recovers by itself within a few seconds', async () => {
    const ms = await waitFor(async () => (await readyz()).status === 200, 8000);
    expect(ms).toBeLessThan(8000);
    expect((await health()).json.data.status).toBe('healthy');
    expect((await listClients()).status).toBe(200);
  });

  it('lost no committed write, and nothing of the refused one', async () => {
    const names = ((await listClients()).json.data as Array<{ client_id: string; client_name: string }>).map((c) => c.client_name);
    expect(names).toContain('committed before the outage');
    expect(names).not.toContain('written during the outage');
    // The client committed before the crash authenticates.
    const token = await postForm(t, '/token', { grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope: 'svc:clients:read' }, { id: before.client_id, secret: before.client_secret });
    expect(token.status).toBe(200);
  });

  it('takes writes again', async () => {
    const res = await createClient('written after recovery');
    expect(res.status).toBe(201);
    expect((await postForm(t, '/token', { grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope: 'svc:clients:read' }, bootstrap)).status).toBe(200);
  });
});
