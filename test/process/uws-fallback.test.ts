/**
 * The service on uWS's Node.js fallback transport (UWS_USE_FALLBACK=1; also what loads when no
 * native binary fits the Node.js ABI): it serves GET with a query, bodies, headers and HEAD, and
 * stops on SIGTERM. Before, its first request ended the process (getQuery's `Invalid URL`, then
 * forEach's `Not implemented`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { head, openRaw } from '../helpers/raw-http.js';
import { BUILT_MAIN } from '../helpers/instance.js';
import { until } from '../helpers/until.js';

const KEY = Buffer.alloc(32, 7).toString('base64');
let dir: string;
let child: ChildProcess;
let output = '';
let port = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-fallback-'));
  child = spawn(process.execPath, [BUILT_MAIN], {
    cwd: process.cwd(),
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      HOST: '127.0.0.1',
      PORT: '0',
      UWS_USE_FALLBACK: '1',
      STORAGE_SQLITE_PATH: join(dir, 'svc.db'),
      SVC_ENCRYPTION_KEY: KEY,
      SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  await until(() => /"msg":"listening"/.test(output) || child.exitCode !== null, 60_000);
  const line = output.split('\n').find((l) => l.includes('"msg":"listening"'));
  expect(line, output).toBeDefined();
  const start = JSON.parse(line!) as { port: number; transport: string };
  expect(start.transport).toBe('uWS Node.js fallback');
  port = start.port;
}, 90_000);

afterAll(() => {
  if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('the uWS Node.js fallback transport', () => {
  it('answers GET with a query, HEAD with GET`s length, JSON and form bodies, and echoes headers', async () => {
    const base = `http://127.0.0.1:${port}`;
    const health = await fetch(`${base}/healthz?probe=1`, { headers: { 'x-request-id': 'fallback-test-0001' } });
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    expect(health.headers.get('x-request-id')).toBe('fallback-test-0001');

    const discovery = await fetch(`${base}/oidc/v1/.well-known/openid-configuration?x=1`);
    expect(discovery.status).toBe(200);
    const jwks = await fetch(`${base}/oidc/v1/jwks`);
    const jwksBody = Buffer.from(await jwks.arrayBuffer());
    expect(JSON.parse(jwksBody.toString()).keys.length).toBeGreaterThan(0);
    const headAnswer = await fetch(`${base}/oidc/v1/jwks`, { method: 'HEAD' });
    expect(headAnswer.status).toBe(200);
    expect(headAnswer.headers.get('content-length')).toBe(String(jwksBody.length));

    // A JSON body to the Management API: read, then refused for want of a token (not a crash).
    const users = await fetch(`${base}/api/v1/users?x=1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"email":"a@example.com"}' });
    expect(users.status).toBe(401);
    expect(users.headers.get('content-type')).toContain('application/problem+json');

    // A form body to the token endpoint: read and judged.
    const token = await fetch(`${base}/oidc/v1/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials&client_id=nobody&client_secret=nothing' });
    expect(token.status).toBe(401);
    expect((await token.json()).error).toBe('invalid_client');

    // Repeated header fields reach the handler joined, and a raw request with a query works too.
    const raw = await openRaw(port);
    await raw.write(head('GET', '/api/v1/nosuch?a=b&c=d', port, { accept: 'application/json', connection: 'close' }));
    const res = await raw.response;
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body)).toMatchObject({ status: 404, instance: '/api/v1/nosuch' });
    expect(child.exitCode).toBeNull();
    expect(output).not.toMatch(/Not implemented|Invalid URL/);
  });

  it('stops on SIGTERM', async () => {
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).toMatch(/stopped/);
  }, 30_000);
});
