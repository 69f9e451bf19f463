/**
 * Issue 17 / issue 18 item 13: security.logging.access_log (off | sampled | all) acts, the default
 * depends on the environment, probes and static assets never get a line, pretty printing needs a
 * terminal, and the start line of a multi-tenant instance says so instead of naming one issuer.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig, ConfigError } from '../../src/config/index.js';
import { accessLogger, accessLogMode, type AccessLine } from '../../src/http/access-log.js';
import { prettyLogs } from '../../src/log.js';
import { startLine } from '../../src/start-line.js';

const base = { STORAGE_SQLITE_PATH: '/tmp/never-opened.db', SVC_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64') };

function sink(level: pino.Level = 'info') {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level }, stream), lines };
}

const line = (path: string, extra: Partial<AccessLine> = {}): AccessLine => ({ req_id: 'r1', method: 'GET', path, status: 200, ms: 1.2, ip: () => '127.0.0.1', ...extra });
const opts = { quietPaths: ['/healthz', '/readyz', '/favicon.ico'], assetPrefixes: ['/assets/', '/admin/assets/'] };
const flush = () => new Promise((r) => setImmediate(r));

describe('access log setting', () => {
  it('defaults: all in development, off in production and staging', () => {
    expect(accessLogMode(loadConfig({ ...base, NODE_ENV: 'development' }))).toBe('all');
    expect(accessLogMode(loadConfig({ ...base, NODE_ENV: 'production' }))).toBe('off');
    expect(accessLogMode(loadConfig({ ...base, NODE_ENV: 'staging' }))).toBe('off');
    expect(accessLogMode(loadConfig({ ...base, NODE_ENV: 'development', SECURITY_LOGGING_ACCESS_LOG: 'off' }))).toBe('off');
  });

  it('refuses unknown modes and sample rates outside (0, 1]', () => {
    expect(() => loadConfig({ ...base, SECURITY_LOGGING_ACCESS_LOG: 'verbose' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, SECURITY_LOGGING_ACCESS_LOG_SAMPLE_RATE: '0' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, SECURITY_LOGGING_ACCESS_LOG_SAMPLE_RATE: '1.5' })).toThrow(ConfigError);
  });

  it('off: no writer at all (nothing to pay per request)', () => {
    const { log } = sink();
    expect(accessLogger(loadConfig({ ...base, NODE_ENV: 'production' }), log, opts)).toBeUndefined();
  });

  it('all: one line per request with its fields, none for probes and assets, none below the level', async () => {
    const cfg = loadConfig({ ...base, NODE_ENV: 'production', SECURITY_LOGGING_ACCESS_LOG: 'all' });
    const { log, lines } = sink();
    const write = accessLogger(cfg, log, opts)!;
    for (const p of ['/healthz', '/readyz', '/favicon.ico', '/assets/app.css', '/admin/assets/x.js']) write(line(p));
    write(line('/oidc/v1/token', { method: 'POST', status: 400, reason: 'grant request is invalid' }));
    await flush();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, msg: 'request', method: 'POST', path: '/oidc/v1/token', status: 400, reason: 'grant request is invalid', ip: '127.0.0.1' });
    const quiet = sink('warn');
    accessLogger(cfg, quiet.log, opts)!(line('/oidc/v1/token'));
    await flush();
    expect(quiet.lines).toHaveLength(0);
  });

  it('sampled: only the drawn share, marked with the rate', async () => {
    const cfg = loadConfig({ ...base, NODE_ENV: 'production', SECURITY_LOGGING_ACCESS_LOG: 'sampled', SECURITY_LOGGING_ACCESS_LOG_SAMPLE_RATE: '0.25' });
    const { log, lines } = sink();
    const draws = [0.1, 0.3, 0.24, 0.9, 0.25];
    const write = accessLogger(cfg, log, { ...opts, random: () => draws.shift()! })!;
    for (let i = 0; i < 5; i++) write(line(`/oidc/v1/me`, { req_id: `r${i}` }));
    await flush();
    expect(lines.map((l) => l.req_id)).toEqual(['r0', 'r2']);
    expect(lines.every((l) => l.sample_rate === 0.25)).toBe(true);
  });

  it('pretty lines only in development, with pretty_print on, on a terminal', () => {
    const dev = loadConfig({ ...base, NODE_ENV: 'development' });
    expect(prettyLogs(dev, true)).toBe(true);
    expect(prettyLogs(dev, false)).toBe(false);
    expect(prettyLogs(loadConfig({ ...base, NODE_ENV: 'development', SECURITY_LOGGING_PRETTY_PRINT: 'false' }), true)).toBe(false);
    expect(prettyLogs(loadConfig({ ...base, NODE_ENV: 'production' }), true)).toBe(false);
  });
});

describe('start line', () => {
  const facts = { port: 3000, transport: 'native', storage: 'postgresql', redis: true, startupMs: 12 };
  it('multi-tenant: no single issuer; the issuer pattern, how tenants are picked, Redis and the pool', () => {
    const cfg = loadConfig({ ...base, NODE_ENV: 'production', BASE_URL: 'https://idp.example.com', MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', STORAGE_POSTGRESQL_URL: 'postgres://svc@127.0.0.1/svc', REDIS_URL: 'redis://127.0.0.1:6379' });
    const issuerOf = (t: string) => (t === 'default' ? 'https://idp.example.com/oidc/v1' : `https://${t}.idp.example.com/oidc/v1`);
    const fields = startLine(cfg, { ...facts, issuerOf });
    expect(fields).toMatchObject({ multi_tenancy: true, issuer_pattern: 'https://<tenant>.idp.example.com/oidc/v1', redis: 'on', provider_pool: 50, tenant_from: ['header x-tenant-id', 'subdomain'] });
    expect(fields).not.toHaveProperty('issuer');
  });
  it('single tenant: the issuer', () => {
    const cfg = loadConfig({ ...base, NODE_ENV: 'production', BASE_URL: 'https://idp.example.com' });
    expect(startLine(cfg, { ...facts, storage: 'sqlite', redis: false, issuerOf: () => 'https://idp.example.com/oidc/v1' })).toMatchObject({ multi_tenancy: false, issuer: 'https://idp.example.com/oidc/v1', redis: 'off' });
  });
});
