/** The uWS front door on its own: body limits, request copy, draining on close. */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpServer, MAX_BODY_BYTES } from '../../src/http/server.js';
import type { HttpRequest, HttpResponse } from '../../src/http/types.js';
import { head, openRaw } from '../helpers/raw-http.js';
import { until } from '../helpers/until.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const servers: HttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close(100)));
});

async function serve(handle: (req: HttpRequest) => Promise<HttpResponse>): Promise<{ server: HttpServer; port: number; seen: HttpRequest[] }> {
  const seen: HttpRequest[] = [];
  const server = new HttpServer({
    host: '127.0.0.1',
    port: 0,
    log: pino({ level: 'silent' }),
    handle: (req) => {
      seen.push(req);
      return handle(req);
    },
  });
  servers.push(server);
  return { server, port: await server.listen(), seen };
}

describe('HttpServer', () => {
  it('copies method, path, query, headers, body and a normalised client address', async () => {
    const { port, seen } = await serve(async () => ({ status: 200, headers: { 'content-type': 'text/plain', 'x-custom': ['a', 'b'] }, body: 'hello' }));
    const res = await fetch(`http://127.0.0.1:${port}/some/path?x=1&y=%20`, {
      method: 'PATCH',
      headers: { 'X-Mixed-Case': 'v', 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('hello');
    expect(res.headers.get('x-custom')).toBe('a, b');
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers.get('uwebsockets')).toBeNull(); // no server-software banner
    const req = seen[0]!;
    expect(req.method).toBe('PATCH');
    expect(req.path).toBe('/some/path');
    expect(req.rawQuery).toBe('x=1&y=%20');
    expect(req.headers['x-mixed-case']).toBe('v');
    expect(req.body.toString()).toBe('{"a":1}');
    expect(req.ip).toBe('127.0.0.1');
    expect(req.id).toBe(res.headers.get('x-request-id'));
  });

  it('writes a frozen headers object (encoded once) as it would any other: lower-cased, hop-by-hop names left out, per answer', async () => {
    // One frozen object for every answer, as the public documents have (http/etag.ts); its lines
    // are encoded on first use and reused. A frozen object with an array value is written as given.
    const shared = Object.freeze({ 'Content-Type': 'application/json', ETag: '"v1"', 'X-Greeting': 'grüße', 'Keep-Alive': 'timeout=5', Date: 'never' });
    const withArray = Object.freeze({ 'x-list': ['a', 'b'] });
    const { port } = await serve(async (req) => ({ status: req.path === '/list' ? 201 : 200, headers: req.path === '/list' ? withArray : shared, body: req.path }));
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/doc`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json');
      expect(res.headers.get('etag')).toBe('"v1"');
      expect(res.headers.get('keep-alive')).toBeNull();
      expect(res.headers.get('date')).not.toBe('never');
      expect(await res.text()).toBe('/doc');
      const raw = await openRaw(port);
      await raw.write(head('GET', '/doc', port, {}));
      const answer = await raw.response;
      // The raw bytes carry the UTF-8 value (fetch would show them as latin1).
      expect(Buffer.from(answer.headers['x-greeting'] ?? '', 'latin1').toString()).toBe('grüße');
      raw.end();
    }
    const list = await fetch(`http://127.0.0.1:${port}/list`);
    expect(list.status).toBe(201);
    expect(list.headers.get('x-list')).toBe('a, b');
  });

  it('answers 500 instead of writing a header line that would split the response (CR, LF, NUL, a name that is no token)', async () => {
    const cases: Record<string, Record<string, string | string[]>> = {
      '/crlf': { 'x-a': 'v\r\nx-injected: 1' },
      '/lf-array': { 'set-cookie': ['a=1', 'b=2\nx-injected: 1'] },
      '/nul': { 'x-a': 'v\u0000' },
      '/name': { 'x-injected: 1\r\nx-b': 'v' },
      '/frozen': Object.freeze({ 'content-type': 'text/plain', 'x-a': 'v\r\nx-injected: 1' }),
    };
    const { port } = await serve(async (req) => ({ status: 200, headers: cases[req.path] ?? { 'x-fine': 'grüße ok' }, body: 'secret-body' }));
    for (const path of Object.keys(cases)) {
      const raw = await openRaw(port);
      await raw.write(head('GET', path, port, {}));
      const res = await raw.response;
      expect(res.status, path).toBe(500);
      expect(res.headers['x-injected'], path).toBeUndefined();
      expect(res.headers['content-type']).toBe('application/problem+json');
      expect(res.body).not.toContain('secret-body');
      raw.end();
    }
    const fine = await fetch(`http://127.0.0.1:${port}/fine`);
    expect(fine.status).toBe(200);
    expect(Buffer.from(fine.headers.get('x-fine')!, 'latin1').toString()).toBe('grüße ok');
  });

  it('answers 413 to a body declared over 1 MiB that never comes (after the linger time), closing the connection', async () => {
    const { port, seen } = await serve(async () => ({ status: 200 }));
    const conn = await openRaw(port);
    await conn.write(head('POST', '/upload', port, { 'content-type': 'application/json', 'content-length': MAX_BODY_BYTES + 1 }));
    const res = await conn.response;
    expect(res.status).toBe(413);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(res.body)).toMatchObject({ type: 'urn:svc:error:payload-too-large', status: 413, instance: '/upload' });
    await conn.closed;
    expect(seen).toHaveLength(0); // the application never saw it
  });

  it('lets ordinary clients read the 413 of a body over 1 MiB (lingering close, no reset)', async () => {
    const { port, seen } = await serve(async () => ({ status: 200 }));
    // Node's fetch (undici) and node:http both keep writing the body; before the lingering close
    // they often saw ECONNRESET/EPIPE instead of the answer.
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/upload`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: new Uint8Array(12 * MAX_BODY_BYTES) });
      expect(res.status).toBe(413);
      expect((await res.json()).type).toBe('urn:svc:error:payload-too-large');
    }
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/upload', headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      // Chunked, no content-length: the limit is found while reading.
      for (let i = 0; i < 20; i++) req.write(Buffer.alloc(MAX_BODY_BYTES / 2));
      req.end(Buffer.alloc(MAX_BODY_BYTES));
    });
    expect(status).toBe(413);
    expect(seen).toHaveLength(0);
  });

  it('does not wait for a body declared far beyond what it would discard', async () => {
    const { port } = await serve(async () => ({ status: 200 }));
    const conn = await openRaw(port);
    await conn.write(head('POST', '/upload', port, { 'content-type': 'application/json', 'content-length': 17 * MAX_BODY_BYTES }));
    const res = await conn.response;
    expect(res.status).toBe(413);
    await conn.closed;
  });

  it('reads a body of exactly 1 MiB', async () => {
    const { port } = await serve(async (req) => ({ status: 200, body: String(req.body.length) }));
    const res = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: new Uint8Array(MAX_BODY_BYTES) });
    expect(await res.text()).toBe(String(MAX_BODY_BYTES));
  });

  it('answers 500 problem when the handler rejects', async () => {
    const { port } = await serve(async () => {
      throw new Error('boom at /secret/path.ts:12');
    });
    const res = await fetch(`http://127.0.0.1:${port}/x`);
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ type: 'urn:svc:error:internal', status: 500 });
    expect(text).not.toContain('boom');
  });

  it('answers HEAD with the headers of GET and no content (RFC 9110 9.3.2), on the fast path too; the connection stays usable', async () => {
    const server = new HttpServer({
      host: '127.0.0.1',
      port: 0,
      log: pino({ level: 'silent' }),
      // The full path answers /fast as the fast path does (a request with Connection: close takes it).
      handle: async (req) => (req.path === '/fast' ? { status: 200, headers: { 'content-type': 'application/json' }, body: '{"fast":true}' } : { status: req.path === '/missing' ? 404 : 200, headers: { 'content-type': 'application/problem+json' }, body: `{"path":"${req.path}","n":"äö"}` }),
      fast: (req) => (req.path === '/fast' ? { status: 200, headers: { 'content-type': 'application/json' }, body: '{"fast":true}' } : undefined),
    });
    servers.push(server);
    const port = await server.listen();
    for (const path of ['/page', '/missing', '/fast']) {
      const get = await fetch(`http://127.0.0.1:${port}${path}`);
      const content = Buffer.from(await get.arrayBuffer());
      // Two HEADs then a GET on one kept-alive connection: any content after a HEAD answer would
      // be read as the start of the next answer.
      const conn = await openRaw(port);
      await conn.write(`${head('HEAD', path, port, {})}${head('HEAD', path, port, {})}${head('GET', path, port, { connection: 'close' })}`);
      await conn.closed;
      const answers = conn.received().toString('utf8').split(/(?=HTTP\/1\.1 )/);
      expect(answers, path).toHaveLength(3);
      for (const answer of answers.slice(0, 2)) {
        const [top, rest] = answer.split('\r\n\r\n');
        expect(top, path).toMatch(new RegExp(`^HTTP/1.1 ${get.status} `));
        expect(top!.toLowerCase(), path).toContain(`content-length: ${content.length}`);
        expect(top!.toLowerCase(), path).toContain(`content-type: ${get.headers.get('content-type')}`);
        expect(rest, path).toBe('');
      }
      expect(answers[2]!.endsWith(content.toString('utf8')), path).toBe(true);
    }
  });

  it('closes the connection after answering a request with Connection: close, and answers no request pipelined behind it (RFC 9112 9.6)', async () => {
    const server = new HttpServer({
      host: '127.0.0.1',
      port: 0,
      log: pino({ level: 'silent' }),
      handle: async (req) => ({ status: 200, headers: { 'content-type': 'text/plain' }, body: req.path }),
      fast: (req) => (req.path === '/fast' ? { status: 200, headers: Object.freeze({ 'content-type': 'text/plain' }), body: '/fast' } : undefined),
    });
    servers.push(server);
    const port = await server.listen();
    for (const [method, path] of [['GET', '/fast'], ['GET', '/full'], ['HEAD', '/fast'], ['HEAD', '/full'], ['POST', '/full']] as const) {
      const request = `${head(method, path, port, { connection: 'close', ...(method === 'POST' ? { 'content-length': 2 } : {}) })}${method === 'POST' ? 'ok' : ''}`;
      // Alone: answered, then closed.
      const alone = await openRaw(port);
      await alone.write(request);
      const res = await alone.response;
      expect(res.status, `${method} ${path}`).toBe(200);
      expect(res.headers['content-length'], `${method} ${path}`).toBe(String(path.length));
      await alone.closed;
      // With a request pipelined behind it: that one is never answered (uWS drops such a
      // connection without the first answer too; see docs/decisions.md "HTTP parsing").
      const piped = await openRaw(port);
      await piped.write(`${request}${head('GET', '/second', port, {})}`);
      await piped.closed;
      const received = piped.received().toString('latin1');
      expect(received.split('HTTP/1.1 ').length - 1, `${method} ${path}`).toBeLessThanOrEqual(1);
      expect(received).not.toContain('/second');
    }
  });

  it('writes the Content-Length a HEAD answer gives for the body it left out (contentLength)', async () => {
    const { port } = await serve(async () => ({ status: 200, headers: { 'content-type': 'application/json' }, contentLength: 42 }));
    for (const connection of ['keep-alive', 'close']) {
      const conn = await openRaw(port);
      await conn.write(head('HEAD', '/doc', port, { connection }));
      // The raw helper would wait for 42 bytes of content: read the head as it comes.
      await until(() => conn.received().includes('\r\n\r\n'));
      const top = conn.received().toString('latin1').toLowerCase();
      expect(top, connection).toMatch(/^http\/1\.1 200 /);
      expect(top.match(/content-length: \d+/g), connection).toEqual(['content-length: 42']);
      if (connection === 'close') await conn.closed;
      conn.end();
    }
  });

  it('answers 500 when the front door itself throws on a request, and keeps serving', async () => {
    const server = new HttpServer({
      host: '127.0.0.1',
      port: 0,
      log: pino({ level: 'silent' }),
      handle: async () => ({ status: 200, body: 'fine' }),
      fast: (req) => {
        if (req.path === '/throw') throw new Error('boom');
        return undefined;
      },
    });
    servers.push(server);
    const port = await server.listen();
    const res = await fetch(`http://127.0.0.1:${port}/throw`);
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await res.text()).not.toContain('boom');
    expect(await (await fetch(`http://127.0.0.1:${port}/ok`)).text()).toBe('fine');
  });

  describe('close()', () => {
    it.each([
      ['settles in microtasks', async (): Promise<HttpResponse> => ({ status: 201, body: 'done' })],
      ['takes a while', async (): Promise<HttpResponse> => (await sleep(50), { status: 201, body: 'done' })],
    ])('delivers the last in-flight response when the handler %s', async (_name, handler) => {
      const { server, port } = await serve(handler);
      const conn = await openRaw(port);
      await conn.write(head('POST', '/slow', port, { 'content-length': 10 }));
      await conn.write('01234');
      await sleep(50);
      let closed = false;
      const closing = server.close().then(() => (closed = true));
      await sleep(50);
      expect(closed).toBe(false);
      await conn.write('56789');
      const res = await conn.response;
      expect(res.status).toBe(201);
      expect(res.body).toBe('done');
      expect(res.headers.connection).toBe('close');
      await closing;
      await conn.closed;
    });

    it('does not wait for a request whose client went away mid-body (no in-flight count left behind)', async () => {
      const { server, port, seen } = await serve(async () => ({ status: 200 }));
      for (let i = 0; i < 3; i++) {
        const conn = await openRaw(port);
        await conn.write(head('POST', '/upload', port, { 'content-length': 10 }));
        await conn.write('01234');
        await sleep(30);
        conn.end();
        await conn.closed;
      }
      // And one answered normally, whose abort event (node:http fires one after every answer) must not count twice.
      expect((await fetch(`http://127.0.0.1:${port}/x`, { method: 'POST', body: 'x' })).status).toBe(200);
      await sleep(50);
      const started = Date.now();
      await server.close(3000);
      expect(Date.now() - started).toBeLessThan(1000);
      expect(seen).toHaveLength(1);
    });

    it('stops waiting after its timeout', async () => {
      const { server, port } = await serve(async () => ({ status: 200 }));
      const conn = await openRaw(port);
      await conn.write(head('POST', '/never', port, { 'content-length': 10 }));
      await sleep(30);
      const started = Date.now();
      await server.close(150);
      expect(Date.now() - started).toBeGreaterThanOrEqual(140);
      expect(Date.now() - started).toBeLessThan(2000);
      expect(server.accepting).toBe(false);
      conn.end();
    });
  });
});

describe('HttpServer listen', () => {
  function server(port: number, reusePort?: boolean): HttpServer {
    const s = new HttpServer({ host: '127.0.0.1', port, reusePort, log: pino({ level: 'silent' }), handle: async () => ({ status: 204 }) });
    servers.push(s);
    return s;
  }

  it('refuses a port another process already holds, naming the address and the cause', async () => {
    const port = await server(0).listen();
    await expect(server(port).listen()).rejects.toThrow(new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the address is in use`));
  });

  it('refuses a port held by a plain Node.js server too', async () => {
    const { createServer } = await import('node:net');
    const other = createServer();
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const port = (other.address() as { port: number }).port;
    try {
      await expect(server(port).listen()).rejects.toThrow(/address is in use/);
    } finally {
      other.close();
    }
  });

  it('shares the port only when both sides ask for it (HTTP_REUSE_PORT)', async () => {
    // A port of our choosing: uSockets sets SO_REUSEPORT only on a fixed port, not on port 0.
    const { createServer } = await import('node:net');
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise((resolve) => probe.close(resolve));
    await expect(server(port, true).listen()).resolves.toBe(port);
    await expect(server(port, true).listen()).resolves.toBe(port);
  });
});
