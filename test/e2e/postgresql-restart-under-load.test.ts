/**
 * PostgreSQL restarted (immediate shutdown: every backend killed) while the service is busy with
 * Management writes and token requests on a private cluster: the process stays up, every answer is
 * a success or a 503 problem (never a 500 or a dropped connection), the service recovers by itself,
 * and every client whose creation was acknowledged (201) is still there afterwards.
 *
 * A restart in the middle of a transaction, between two of its statements, once ended the process:
 * pg emits 'error' on a connection whose socket ends even when no statement is running, and nobody
 * listened while the connection was checked out of the pool (src/storage/postgresql/pool.ts). The app
 * runs inside this test's process, so an uncaught exception fails the run.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { api, type TestApp } from '../helpers/app.js';
import { bootstrap, requestToken } from '../helpers/oauth.js';
import type { PrivatePostgres } from '../helpers/postgres.js';
import { appOnPrivatePostgres, type AppOnPrivatePostgres } from '../helpers/private-postgres-app.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const RESTARTS = 3;
const WORKERS = 6;

let server: PrivatePostgres;
let t: TestApp;
let admin: string;

let running: AppOnPrivatePostgres | undefined;

beforeAll(async () => {
  running = await appOnPrivatePostgres({ SECURITY_RATE_LIMIT_READ: '1000000', SECURITY_RATE_LIMIT_WRITE: '1000000' });
  ({ server, t } = running);
  admin = await t.token('svc:clients:read svc:clients:write');
});

afterAll(async () => {
  await running?.close();
});

const ready = async () => (await fetch(`${t.url}/readyz`)).status === 200;

it('survives restarts under load: only 2xx and 503, recovery by itself, no acknowledged client lost', async () => {
  const statuses = new Map<number, number>();
  const created: string[] = [];
  let stop = false;
  let n = 0;
  const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
  const worker = async (w: number) => {
    while (!stop) {
      const i = n++;
      if (i % 2 === 0) {
        const res = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: `load ${w}-${i}`, grant_types: ['client_credentials'], scope: 'svc:clients:read' } });
        count(res.status);
        if (res.status === 201) created.push(res.json.data.client_id);
        else expect(res.headers.get('content-type'), res.text).toContain('application/problem+json');
      } else {
        const res = await requestToken(t, bootstrap, 'svc:clients:read');
        count(res.status);
      }
    }
  };
  const load = Array.from({ length: WORKERS }, (_, w) => worker(w));
  try {
    for (let r = 0; r < RESTARTS; r++) {
      await sleep(400);
      await server.stop('immediate');
      await sleep(200);
      await server.start();
      for (let i = 0; i < 100 && !(await ready()); i++) await sleep(50);
    }
    await sleep(400);
  } finally {
    stop = true;
    await Promise.all(load);
  }

  expect([...statuses.keys()].sort(), JSON.stringify([...statuses])).toEqual(expect.arrayContaining([200, 201]));
  for (const status of statuses.keys()) expect([200, 201, 503], JSON.stringify([...statuses])).toContain(status);
  // Recovered: writes and tokens go through again.
  expect(await ready()).toBe(true);
  const after = await api(t, 'POST', '/api/v1/clients', { token: admin, body: { client_name: 'after the restarts', grant_types: ['client_credentials'], scope: 'svc:clients:read' } });
  expect(after.status, after.text).toBe(201);
  expect((await requestToken(t, bootstrap, 'svc:clients:read')).status).toBe(200);
  // Every acknowledged creation survived the restarts.
  const stored = new Set((await t.sql('SELECT client_id FROM clients')).map((row) => String(row.client_id)));
  expect(created.filter((id) => !stored.has(id))).toEqual([]);
});
