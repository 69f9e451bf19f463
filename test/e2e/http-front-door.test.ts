/**
 * The HTTP front door through the whole service (fourth audit of 2026-12-01): HEAD answers carry
 * GET's Content-Length under /oidc/v1, a request with Connection: close ends its connection,
 * unknown OIDC routes answer OAuth JSON, coded request bodies are refused with 415, /healthz and
 * /readyz answer GET and HEAD only, and Management API errors are neither cached nor sniffed.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { openRaw } from '../helpers/raw-http.js';

let t: TestApp;
let port: number;
beforeAll(async () => {
  t = await startTestApp();
  port = Number(new URL(t.url).port);
});
afterAll(async () => t?.close());

/** One request on its own connection (closed after it); the answer's head lines and its content. */
async function exchange(method: string, path: string, headers: Record<string, string> = {}, body = ''): Promise<{ status: number; headers: Record<string, string>; content: Buffer; raw: string }> {
  const conn = await openRaw(port);
  const lines = [`${method} ${path} HTTP/1.1`, `Host: localhost:${port}`, 'Connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  if (body) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  await conn.write(`${lines.join('\r\n')}\r\n\r\n${body}`);
  await conn.closed;
  const all = conn.received();
  const end = all.indexOf('\r\n\r\n');
  const top = all.subarray(0, end).toString('latin1').split('\r\n');
  const fields: Record<string, string> = {};
  for (const line of top.slice(1)) fields[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
  return { status: Number(top[0]!.split(' ')[1]), headers: fields, content: all.subarray(end + 4), raw: all.toString('latin1') };
}

describe('HEAD under /oidc/v1', () => {
  it.each([
    ['/oidc/v1/jwks'],
    ['/oidc/v1/.well-known/openid-configuration'],
    ['/oidc/v1/userinfo'],
    ['/oidc/v1/auth'],
    ['/oidc/v1/device'],
  ])('%s: GET`s status and Content-Length, no content', async (path) => {
    const get = await exchange('GET', path);
    const head = await exchange('HEAD', path);
    expect(head.status, path).toBe(get.status);
    expect(Number(get.headers['content-length']), path).toBe(get.content.length);
    expect(get.content.length, path).toBeGreaterThan(0);
    expect(head.headers['content-length'], path).toBe(get.headers['content-length']);
    expect(head.content.length, path).toBe(0);
  });
});

describe('Connection: close', () => {
  it('is honoured on a synchronous answer with a request pipelined behind it (RFC 9112 9.6)', async () => {
    for (const first of ['/healthz', '/oidc/v1/jwks']) {
      const conn = await openRaw(port);
      await conn.write(`GET ${first} HTTP/1.1\r\nHost: localhost:${port}\r\nConnection: close\r\n\r\nGET /api/v1/nosuch HTTP/1.1\r\nHost: localhost:${port}\r\n\r\n`);
      await conn.closed;
      const received = conn.received().toString('latin1');
      expect(received.split('HTTP/1.1 ').length - 1, first).toBeLessThanOrEqual(1);
      expect(received, first).not.toContain('/api/v1/nosuch');
    }
  });
});

describe('unknown OIDC routes', () => {
  it.each([
    ['GET', '/oidc/v1/nosuch'],
    ['DELETE', '/oidc/v1/token'],
    ['POST', '/oidc/v1/jwks'],
  ])('%s %s: 404 OAuth JSON, not Koa`s text', async (method, path) => {
    const res = await api(t, method, path);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.json).toEqual({ error: 'invalid_request', error_description: `unrecognized route or not allowed method (${method} on ${path})` });
  });

  it('HEAD: 404 with the length of its OAuth JSON, no content', async () => {
    const head = await exchange('HEAD', '/oidc/v1/nosuch');
    expect(head.status).toBe(404);
    expect(head.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(Number(head.headers['content-length'])).toBe(JSON.stringify({ error: 'invalid_request', error_description: 'unrecognized route or not allowed method (HEAD on /oidc/v1/nosuch)' }).length);
    expect(head.content.length).toBe(0);
  });
});

describe('request Content-Encoding', () => {
  it('refuses a coded body to the Management API with 415 problem+json, before parsing', async () => {
    const token = await t.token('svc:users:write');
    const json = JSON.stringify({ email: 'coded@example.com', password: 'a long enough password 123' });
    for (const [coding, body] of [['gzip', gzipSync(json)], ['br', Buffer.from(json)], ['identity, gzip', gzipSync(json)]] as const) {
      const res = await fetch(`${t.url}/api/v1/users`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-encoding': coding }, body });
      expect(res.status, coding).toBe(415);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect((await res.json()).type).toBe('urn:svc:error:unsupported-media-type');
    }
    const users = await api(t, 'GET', '/api/v1/users?email=coded@example.com', { token: await t.token('svc:users:read') });
    expect(JSON.stringify(users.json)).not.toContain('coded@example.com');
    // identity is no coding: accepted as ever.
    const plain = await fetch(`${t.url}/api/v1/users`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-encoding': 'identity' }, body: json });
    expect(plain.status).toBe(201);
  });

  it('refuses a coded body under /oidc/v1 with 415 OAuth JSON', async () => {
    const res = await fetch(`${t.url}/oidc/v1/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': 'gzip' }, body: gzipSync('grant_type=client_credentials') });
    expect(res.status).toBe(415);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect((await res.json()).error).toBe('invalid_request');
  });
});

describe('/healthz and /readyz', () => {
  it.each(['POST', 'PATCH', 'PUT', 'DELETE', 'TRACE', 'OPTIONS'])('%s: 405 with Allow: GET, HEAD', async (method) => {
    for (const path of ['/healthz', '/readyz']) {
      const res = await exchange(method, path);
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.allow).toBe('GET, HEAD');
    }
  });

  it('GET and HEAD: 200', async () => {
    for (const path of ['/healthz', '/readyz']) {
      expect((await exchange('GET', path)).status).toBe(200);
      expect((await exchange('HEAD', path)).status).toBe(200);
    }
  });
});

describe('Management API answers', () => {
  it('errors say no-store, JSON says nosniff', async () => {
    const token = await t.token('svc:users:read');
    const cases = [
      await exchange('GET', '/api/v1/users'), // 401
      await exchange('GET', '/api/v1/nosuch', { authorization: `Bearer ${token}` }), // 404
      await exchange('PATCH', '/api/v1/users', { authorization: `Bearer ${token}` }), // 405
      await exchange('POST', '/api/v1/users', { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-encoding': 'gzip' }, 'xx'), // 415
      await exchange('POST', '/api/v1/users', { authorization: `Bearer ${await t.token('svc:users:write')}`, 'content-type': 'application/json' }, '{"email":"not-an-address"}'), // 422
    ];
    expect(cases.map((c) => c.status)).toEqual([401, 404, 405, 415, 422]);
    for (const c of cases) {
      expect(c.headers['content-type'], String(c.status)).toBe('application/problem+json');
      expect(c.headers['cache-control'], String(c.status)).toBe('no-store');
      expect(c.headers['x-content-type-options'], String(c.status)).toBe('nosniff');
    }
    const ok = await exchange('GET', '/api/v1/users', { authorization: `Bearer ${token}` });
    expect(ok.status).toBe(200);
    expect(ok.headers['x-content-type-options']).toBe('nosniff');
  });

  it('a body over 1 MiB: 413 problem+json, no-store', async () => {
    const res = await fetch(`${t.url}/api/v1/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: new Uint8Array(2 * 1024 * 1024) });
    expect(res.status).toBe(413);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
