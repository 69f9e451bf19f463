/**
 * Issue 12 item 4 (SSRF filter bypass): one outbound module (src/outbound) decides where the
 * service may connect, by parsed address (mapped, translated and NAT64 forms included), connects
 * to the address it checked (no second lookup), follows no redirects and bounds time and size; in
 * production such URLs are refused already when a client is created or registered.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressKind, checkOutboundUrl, outboundFetch, OutboundRefused, outboundPolicy, urlProblem, type OutboundPolicy } from '../../src/outbound/index.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';
import { expectValidation } from '../helpers/problem.js';

const PRODUCTION: OutboundPolicy = { allowPrivateNetworks: false, allowLoopback: false };
const DEVELOPMENT: OutboundPolicy = { allowPrivateNetworks: false, allowLoopback: true };
const OPEN: OutboundPolicy = { allowPrivateNetworks: true, allowLoopback: true };

interface Sink {
  server: Server;
  port: number;
  requests: IncomingMessage[];
}

async function sink(handler: (req: IncomingMessage, res: import('node:http').ServerResponse) => void = (_q, r) => r.end('ok')): Promise<Sink> {
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, requests };
}
const stop = (s: Sink) => new Promise<void>((r) => { s.server.closeAllConnections(); s.server.close(() => r()); });

describe('address classification', () => {
  it.each([
    ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'], ['0:0:0:0:0:ffff:7f00:0001', 'loopback'], ['[::ffff:7f00:1]', 'loopback'],
    ['127.0.0.1', 'loopback'], ['127.8.9.10', 'loopback'], ['::1', 'loopback'], ['64:ff9b::7f00:1', 'loopback'], ['2002:7f00:1::', 'loopback'],
    ['::ffff:169.254.169.254', 'private'], ['::ffff:a9fe:a9fe', 'private'], ['::ffff:172.16.0.1', 'private'], ['::ffff:ac1f:ffff', 'private'],
    ['::ffff:10.1.2.3', 'private'], ['::ffff:192.168.0.1', 'private'], ['::ffff:8.8.8.8', 'private'], ['64:ff9b::8.8.8.8', 'private'], ['64:ff9b:1::808:808', 'private'],
    ['169.254.169.254', 'private'], ['172.16.0.1', 'private'], ['172.31.255.255', 'private'], ['10.0.0.1', 'private'], ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'], ['192.0.2.1', 'private'], ['198.18.0.1', 'private'], ['240.0.0.1', 'private'],
    ['fc00::1', 'private'], ['fd12:3456::1', 'private'], ['fe80::1', 'private'], ['fe80::1%eth0', 'private'], ['fec0::1', 'private'], ['2001::1', 'private'], ['::7f00:1', 'loopback'],
    ['0.0.0.0', 'never'], ['::', 'never'], ['255.255.255.255', 'never'], ['224.0.0.1', 'never'], ['ff02::1', 'never'],
    ['8.8.8.8', 'public'], ['172.32.0.1', 'public'], ['2606:4700:4700::1111', 'public'],
  ])('%s is %s', (ip, kind) => {
    expect(addressKind(ip)).toBe(kind);
  });

  it('refuses mapped, private and loopback URL hosts in production, loopback only in development', () => {
    for (const u of ['http://[::ffff:127.0.0.1]:8080/x', 'http://[::ffff:7f00:1]/', 'http://[::ffff:a9fe:a9fe]/latest', 'http://[::ffff:ac10:1]/', 'http://169.254.169.254/', 'http://0x7f.1/', 'http://2130706433/', 'http://localhost:9/', 'http://a.localhost/']) {
      expect(urlProblem(u, PRODUCTION), u).toMatch(/address|unicast/);
    }
    expect(urlProblem('http://[::ffff:127.0.0.1]:8080/x', DEVELOPMENT)).toBeUndefined();
    expect(urlProblem('http://10.0.0.1/', DEVELOPMENT)).toMatch(/private/);
    expect(urlProblem('http://10.0.0.1/', OPEN)).toBeUndefined();
    expect(urlProblem('http://0.0.0.0/', OPEN)).toMatch(/unicast/);
    expect(urlProblem('file:///etc/passwd', OPEN)).toMatch(/http/);
    expect(urlProblem('https://user:pw@rp.example/', OPEN)).toMatch(/credentials/);
    expect(urlProblem('https://rp.example/jwks', PRODUCTION)).toBeUndefined();
  });

  it('derives the policy from the configuration', () => {
    const cfg = (node_env: 'production' | 'development' | 'test', allow: boolean) => ({ node_env, security: { outbound: { allow_private_networks: allow } } }) as Parameters<typeof outboundPolicy>[0];
    expect(outboundPolicy(cfg('production', false))).toEqual(PRODUCTION);
    expect(outboundPolicy(cfg('development', false))).toEqual(DEVELOPMENT);
    expect(outboundPolicy(cfg('production', true))).toEqual(OPEN);
  });
});

describe('outboundFetch', () => {
  let s: Sink;
  beforeAll(async () => {
    s = await sink((req, res) => {
      if (req.url === '/redirect') {
        res.writeHead(302, { location: `http://127.0.0.1:${s.port}/landed` }).end();
      } else if (req.url === '/big') {
        res.writeHead(200);
        const chunk = Buffer.alloc(64 * 1024, 97);
        for (let i = 0; i < 40; i++) res.write(chunk);
        res.end();
      } else if (req.url === '/hang') {
        // never answers
      } else {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'max-age=5' }).end(`${req.method} ${req.headers.host} ${body}`));
      }
    });
  });
  afterAll(async () => stop(s));

  it('never connects to a mapped loopback address in production (no request reaches the listener)', async () => {
    const before = s.requests.length;
    for (const host of ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '127.0.0.1', 'localhost']) {
      await expect(outboundFetch(`http://${host}:${s.port}/jwks`, { policy: PRODUCTION }), host).rejects.toBeInstanceOf(OutboundRefused);
    }
    expect(s.requests.length).toBe(before);
  });

  it('checks every resolved address and refuses a host with any non-public one', async () => {
    const resolve = async () => ['8.8.8.8', '127.0.0.1'];
    await expect(checkOutboundUrl('https://rp.example/jwks', PRODUCTION, resolve)).rejects.toThrow(/loopback/);
    await expect(checkOutboundUrl('https://rp.example/jwks', PRODUCTION, async () => ['::ffff:169.254.169.254'])).rejects.toThrow(/private/);
    await expect(checkOutboundUrl('https://rp.example/jwks', PRODUCTION, async () => ['93.184.215.14'])).resolves.toBeUndefined();
  });

  it('resolves once and connects to the checked address (a rebinding resolver gets no second say)', async () => {
    let calls = 0;
    // First answer loopback (allowed in development), every later one a private address that would be refused.
    const resolve = async () => (++calls === 1 ? ['127.0.0.1'] : ['10.9.9.9']);
    const res = await outboundFetch(`http://rebind.example:${s.port}/echo`, { method: 'POST', body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' }, policy: DEVELOPMENT, resolve });
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe(`POST rebind.example:${s.port} a=1`);
    expect(res.header('Cache-Control')).toBe('max-age=5');
    expect(calls).toBe(1);
  });

  it('does not follow redirects', async () => {
    const before = s.requests.filter((r) => r.url === '/landed').length;
    const res = await outboundFetch(`http://127.0.0.1:${s.port}/redirect`, { policy: DEVELOPMENT });
    expect(res.status).toBe(302);
    expect(s.requests.filter((r) => r.url === '/landed').length).toBe(before);
  });

  it('bounds the response size and the time', async () => {
    await expect(outboundFetch(`http://127.0.0.1:${s.port}/big`, { policy: DEVELOPMENT, maxBytes: 100_000 })).rejects.toThrow(/too large/);
    await expect(outboundFetch(`http://127.0.0.1:${s.port}/hang`, { policy: DEVELOPMENT, timeoutMs: 300 })).rejects.toThrow(/timed out/);
  });
});

describe('production: such URLs are refused at client creation and registration', () => {
  let t: TestApp;
  let admin: string;
  beforeAll(async () => {
    t = await startTestApp({ NODE_ENV: 'production' });
    admin = await t.token(['svc:clients:write', 'svc:registration-tokens:write']);
  });
  afterAll(async () => t?.close());

  const client = (extra: Record<string, unknown>) => ({ client_name: 'rp', application_type: 'web', redirect_uris: ['https://rp.example/cb'], ...extra });

  it.each([
    ['jwks_uri', 'http://[::ffff:127.0.0.1]:8080/jwks'],
    ['jwks_uri', 'http://[::ffff:7f00:1]:8080/jwks'],
    ['jwks_uri', 'http://[::ffff:a9fe:a9fe]/latest/meta-data'],
    ['backchannel_logout_uri', 'http://[::ffff:7f00:1]:8080/bc'],
    ['backchannel_logout_uri', 'http://[::ffff:ac10:1]/bc'],
    ['backchannel_logout_uri', 'http://localhost:8080/bc'],
  ])('POST /api/v1/clients with %s %s is 422', async (field, uri) => {
    const body = client(field === 'jwks_uri' ? { token_endpoint_auth_method: 'private_key_jwt', jwks_uri: uri } : { backchannel_logout_uri: uri });
    const res = await api(t, 'POST', '/api/v1/clients', { token: admin, body });
    const problem = expectValidation(res, '/api/v1/clients', field);
    expect(problem.errors.map((e: { field: string }) => e.field)).toContain(field);
  });

  it('register-rp with a general-policy token refuses a mapped jwks_uri and back-channel URI', async () => {
    const tok = await api(t, 'POST', '/api/v1/registration-tokens', { token: admin, body: { expires_in: 600, max_usage_count: 5 } });
    expect(tok.status, tok.text).toBe(201);
    for (const extra of [{ token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'http://[::ffff:127.0.0.1]:9/jwks' }, { backchannel_logout_uri: 'http://[::ffff:7f00:1]:9/bc' }]) {
      const res = await api(t, 'POST', '/oidc/v1/register-rp', { body: client(extra), headers: { authorization: `Bearer ${tok.json.data.token}` } });
      expect(res.status, res.text).toBe(400);
      expect(res.json.error).toBe('invalid_client_metadata');
    }
    const after = await api(t, 'GET', `/api/v1/registration-tokens/${encodeURIComponent(tok.json.data.jti)}`, { token: await t.token('svc:registration-tokens:read') });
    expect(after.json.data.current_usage_count).toBe(0);
  });

  it('accepts a public https URL', async () => {
    const res = await api(t, 'POST', '/api/v1/clients', { token: admin, body: client({ backchannel_logout_uri: 'https://rp.example/bc' }) });
    expect(res.status, res.text).toBe(201);
  });
});
