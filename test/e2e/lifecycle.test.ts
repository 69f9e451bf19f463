/** Health and readiness probes, unknown paths, and graceful shutdown of the real server. */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { expectProblem } from '../helpers/problem.js';
import { head, openRaw } from '../helpers/raw-http.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, what: string, timeoutMs = 3000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

function refused(port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve('connected');
    });
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });
}

describe('probes and unknown paths', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it('GET /healthz answers JSON without authentication', async () => {
    const res = await api(t, 'GET', '/healthz');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.json).toEqual({ status: 'ok' });
  });

  it('GET /readyz answers JSON with its checks', async () => {
    const res = await api(t, 'GET', '/readyz');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    // database, and redis when the run's backend uses it (PostgreSQL + Redis).
    expect(res.json).toEqual({ status: 'ready', checks: t.readyChecks });
    expect(Object.keys(t.readyChecks)).toEqual(t.redis ? ['database', 'redis'] : ['database']);
  });

  it.each([
    ['GET', '/nope?x=1', '/nope'],
    ['GET', '/', '/'],
    ['POST', '/nope', '/nope'],
    ['GET', '/api/v1', '/api/v1'],
    ['GET', '/api/v2/clients', '/api/v2/clients'],
    ['GET', '/healthz/extra', '/healthz/extra'],
  ])('%s %s is a 404 problem', async (method, path, instance) => {
    const res = await api(t, method, path, { body: method === 'POST' ? { a: 1 } : undefined });
    const body = expectProblem(res, 404, 'not-found', instance);
    expect(body.title).toBe('Not Found');
  });

  it('echoes a well-formed x-request-id and makes one up otherwise', async () => {
    const mine = await api(t, 'GET', '/healthz', { headers: { 'x-request-id': 'req-12345678' } });
    expect(mine.headers.get('x-request-id')).toBe('req-12345678');
    const bad = await api(t, 'GET', '/nope', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(bad.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('graceful shutdown', () => {
  it('finishes in-flight requests, refuses new connections, answers not ready on open connections, then stops', async () => {
    const t = await startTestApp();
    const port = t.app.port;
    const token = await t.token('svc:clients:write');
    const server = t.app.server as unknown as { inFlight: number };

    // A request whose body is still arriving when shutdown starts.
    const body = JSON.stringify({ client_name: 'in flight during shutdown' });
    const slow = await openRaw(port);
    await slow.write(head('POST', '/api/v1/clients', port, { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }));
    await slow.write(body.slice(0, 10));
    await until(() => server.inFlight === 1, 'the slow request to be in flight');
    // A kept-alive connection that is idle when shutdown starts.
    const idle = await openRaw(port);

    let stopped = false;
    const closing = t.app.close().then(() => {
      stopped = true;
    });
    await sleep(100);
    expect(stopped).toBe(false); // waiting for the in-flight request

    // New connections are refused while draining.
    expect(await refused(port)).toBe('ECONNREFUSED');

    // An open connection learns that the instance is no longer ready, and is closed after the answer.
    await idle.write(head('GET', '/readyz', port, {}));
    const ready = await idle.response;
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.body)).toMatchObject({ status: 'not_ready' });
    expect(ready.headers.connection).toBe('close');
    await idle.closed;

    // The in-flight request completes normally.
    await slow.write(body.slice(10));
    const res = await slow.response;
    expect(res.status).toBe(201);
    const created = JSON.parse(res.body).data;
    expect(created.client_name).toBe('in flight during shutdown');

    await closing;
    expect(stopped).toBe(true);
    expect(await refused(port)).toBe('ECONNREFUSED');
    // Closing again is harmless.
    await t.app.close();

    // The completed request's write is durable.
    const storage = await t.openStorage();
    try {
      expect((await storage.clients.get('default', created.client_id))?.metadata.client_name).toBe('in flight during shutdown');
    } finally {
      await storage.close();
      await t.close();
    }
  });

  it('stops at once when nothing is in flight', async () => {
    const t = await startTestApp();
    expect((await api(t, 'GET', '/healthz')).status).toBe(200);
    const started = Date.now();
    await t.app.close();
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await refused(t.app.port)).toBe('ECONNREFUSED');
    await t.close();
  });
});
