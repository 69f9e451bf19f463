/**
 * Tenant resolution (spec 1.5, CONTRACT.md): strategies in the configured order, the slug check,
 * reserved names, the development fallback, 400 in production and staging, the subdomain-wins
 * rule, and the per-tenant issuer. Also the registry cache in front of it (registry.ts) and the
 * `_ops` relay state (ops.ts).
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { InProcessBus, channelPattern } from '../../src/events/bus.js';
import { ProblemError } from '../../src/http/problem.js';
import type { HttpRequest } from '../../src/http/types.js';
import type { TenantRecord, TenantRepository } from '../../src/storage/types.js';
import { RelayState } from '../../src/tenancy/ops.js';
import { TenantRegistry, tenantChangedChannel, type TenantChangedEvent } from '../../src/tenancy/registry.js';
import { TenantResolver, isValidTenantName } from '../../src/tenancy/resolver.js';

const KEY = Buffer.alloc(32, 7).toString('base64');

function resolver(env: Record<string, string> = {}): TenantResolver {
  return new TenantResolver(
    loadConfig({
      MULTI_TENANCY_ENABLED: 'true',
      STORAGE_ADAPTER: 'postgresql',
      STORAGE_POSTGRESQL_URL: 'postgres://x@127.0.0.1/db',
      REDIS_URL: 'redis://127.0.0.1:6379',
      BASE_URL: 'http://localhost:3000',
      SVC_ENCRYPTION_KEY: KEY,
      NODE_ENV: 'development',
      ...env,
    }),
  );
}

function req(headers: Record<string, string>, host = 'localhost:3000'): HttpRequest {
  return { id: 't', method: 'GET', path: '/oidc/v1/jwks', rawQuery: '', headers: { host, ...headers }, ip: '127.0.0.1', body: Buffer.alloc(0), params: {} };
}

function problemOf(fn: () => unknown): ProblemError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ProblemError) return err;
    throw err;
  }
  throw new Error('expected a problem');
}

describe('TenantResolver', () => {
  it('is always `default` in single-tenant mode, whatever the request says', () => {
    const r = new TenantResolver(loadConfig({ BASE_URL: 'http://localhost:3000' }));
    expect(r.resolve(req({ 'x-tenant-id': 'acme' }, 'beta.localhost:3000'))).toEqual({ tenant: 'default', via: 'single' });
  });

  it('reads the header trimmed, and refuses one that is not lower-case (spec 1.5 rule 4), while the host is case-insensitive', () => {
    expect(resolver().resolve(req({ 'x-tenant-id': ' acme ' }))).toEqual({ tenant: 'acme', via: 'header' });
    for (const name of ['Acme', 'ACME', '_OPS']) expect(() => resolver().resolve(req({ 'x-tenant-id': name })), name).toThrow(expect.objectContaining({ status: 400, type: expect.stringContaining('invalid-tenant') }));
    expect(resolver().resolve(req({}, 'ACME.localhost:3000'))).toEqual({ tenant: 'acme', via: 'subdomain' });
  });

  it('drops only spaces and tabs around the header: any other character at either end is a malformed slug (400)', () => {
    // Unicode spaces String.prototype.trim removed (the Node transport decodes a 0xA0 byte to U+00A0).
    for (const bad of ['acme\u00a0', '\u00a0acme', '\ufeffacme', 'acme\u3000', 'acme\u2028', 'acme\u200a', 'acmeé', 'éacme', 'acme\u00ff', 'acme😀', 'acmeＡ', 'acme\u0085']) {
      const p = problemOf(() => resolver().resolve(req({ 'x-tenant-id': bad })));
      expect(p.status, JSON.stringify(bad)).toBe(400);
      expect(p.type).toBe('urn:svc:error:invalid-tenant');
    }
    expect(resolver().resolve(req({ 'x-tenant-id': '\tacme ' }))).toEqual({ tenant: 'acme', via: 'header' });
  });

  it('takes a host with a trailing dot as the same host, and refuses a host with an empty label (400)', () => {
    expect(resolver({ NODE_ENV: 'production' }).resolve(req({}, 'acme.localhost.:3000'))).toEqual({ tenant: 'acme', via: 'subdomain' });
    expect(resolver({ NODE_ENV: 'production' }).resolve(req({}, 'acme.eu.localhost.'))).toEqual({ tenant: 'acme', via: 'subdomain' });
    for (const host of ['acme..localhost:3000', '.acme.localhost', 'acme.eu..localhost', '..localhost', 'acme.localhost..']) {
      const p = problemOf(() => resolver({ NODE_ENV: 'production' }).resolve(req({}, host)));
      expect(p.status, host).toBe(400);
    }
    expect(problemOf(() => resolver().resolve(req({}, 'acme..localhost:3000'))).type).toBe('urn:svc:error:invalid-tenant');
    // A malformed host cannot overrule the header, as before.
    expect(resolver().resolve(req({ 'x-tenant-id': 'acme' }, 'beta..localhost'))).toMatchObject({ tenant: 'acme', via: 'header' });
  });

  it('refuses a Host that is not one host name or address with an optional port (RFC 9112 3.2), in either mode', () => {
    const single = new TenantResolver(loadConfig({ BASE_URL: 'http://localhost:3000' }));
    // Two Host lines arrive joined with ", "; the rest name one tenant to one reader and another to the next.
    for (const host of ['acme.localhost:3000, beta.localhost:3000', 'beta.x@acme.localhost', 'beta.localhost/x.acme.localhost', 'acme.localhost:3000:1', 'acme localhost', 'acme.localhost:port']) {
      for (const r of [resolver(), single]) {
        const p = problemOf(() => r.resolve(req({}, host)));
        expect([p.status, p.type], host).toEqual([400, 'urn:svc:error:bad-request']);
      }
    }
    for (const host of ['acme.localhost:3000', 'acme.localhost.', '127.0.0.1:3000', '[::1]:3000', 'my_host.localhost']) expect(() => resolver().resolve(req({}, host)), host).not.toThrow();
  });

  it('reads the left-most label of a host under the base host (port ignored)', () => {
    expect(resolver().resolve(req({}, 'acme.localhost:3000'))).toEqual({ tenant: 'acme', via: 'subdomain' });
    expect(resolver().resolve(req({}, 'acme.eu.localhost'))).toEqual({ tenant: 'acme', via: 'subdomain' });
    // Not under the base host, or the base host itself: no subdomain.
    expect(resolver({ NODE_ENV: 'production' }).subdomainOf(req({}, 'acme.example.com'))).toBeUndefined();
    expect(resolver().subdomainOf(req({}, 'localhost:3000'))).toBeUndefined();
  });

  it('uses a configured header name and only the configured strategies', () => {
    const r = resolver({ MULTI_TENANCY_TENANT_HEADER: 'x-org', MULTI_TENANCY_EXTRACTION_PRIORITY: 'header' });
    expect(r.resolve(req({ 'x-org': 'acme' }))).toEqual({ tenant: 'acme', via: 'header' });
    // The subdomain strategy is off: the host is not looked at at all (not even for the conflict rule).
    expect(r.resolve(req({ 'x-org': 'acme' }, 'beta.localhost:3000'))).toEqual({ tenant: 'acme', via: 'header' });
    expect(r.resolve(req({ 'x-tenant-id': 'acme' }, 'beta.localhost:3000'))).toEqual({ tenant: 'default', via: 'fallback' });
  });

  it('tries the strategies in the configured order', () => {
    const r = resolver({ MULTI_TENANCY_EXTRACTION_PRIORITY: 'subdomain,header' });
    expect(r.resolve(req({ 'x-tenant-id': 'acme' }))).toEqual({ tenant: 'acme', via: 'header' });
    expect(r.resolve(req({}, 'beta.localhost'))).toEqual({ tenant: 'beta', via: 'subdomain' });
  });

  it('lets the subdomain win over a conflicting header and reports the conflict', () => {
    for (const order of ['header,subdomain', 'subdomain,header']) {
      const r = resolver({ MULTI_TENANCY_EXTRACTION_PRIORITY: order });
      expect(r.resolve(req({ 'x-tenant-id': 'beta' }, 'acme.localhost:3000'))).toMatchObject({ tenant: 'acme', via: 'subdomain' });
    }
    expect(resolver().resolve(req({ 'x-tenant-id': 'beta' }, 'acme.localhost:3000'))).toEqual({ tenant: 'acme', via: 'subdomain', conflict: 'beta' });
    // The same tenant both ways is no conflict.
    expect(resolver().resolve(req({ 'x-tenant-id': 'acme' }, 'acme.localhost:3000'))).toEqual({ tenant: 'acme', via: 'header' });
  });

  it('answers 400 invalid-tenant for a malformed name, from either strategy', () => {
    for (const bad of ['-acme', 'ACME!', 'a'.repeat(64), 'ac me', '_other', 'acme.corp']) {
      const p = problemOf(() => resolver().resolve(req({ 'x-tenant-id': bad })));
      expect(p.status).toBe(400);
      expect(p.type).toBe('urn:svc:error:invalid-tenant');
    }
    const p = problemOf(() => resolver().resolve(req({}, '-bad.localhost')));
    expect(p.type).toBe('urn:svc:error:invalid-tenant');
  });

  it('accepts the slug pattern and the reserved names that fail it', () => {
    expect(isValidTenantName('a')).toBe(true);
    expect(isValidTenantName('a_b-c9')).toBe(true);
    expect(isValidTenantName('a'.repeat(63))).toBe(true);
    expect(isValidTenantName('_platforms')).toBe(true);
    expect(isValidTenantName('_ops')).toBe(true);
    expect(isValidTenantName('_other')).toBe(false);
    expect(resolver().resolve(req({ 'x-tenant-id': '_platforms' }))).toEqual({ tenant: '_platforms', via: 'header' });
    expect(resolver().resolve(req({}, '_ops.localhost'))).toEqual({ tenant: '_ops', via: 'subdomain' });
  });

  it('falls back to `default` in development (and test), and answers 400 in production and staging', () => {
    expect(resolver({ NODE_ENV: 'development' }).resolve(req({}))).toEqual({ tenant: 'default', via: 'fallback' });
    expect(resolver({ NODE_ENV: 'test' }).resolve(req({}))).toEqual({ tenant: 'default', via: 'fallback' });
    for (const env of ['production', 'staging']) {
      const p = problemOf(() => resolver({ NODE_ENV: env }).resolve(req({ 'x-tenant-id': '' })));
      expect(p.status).toBe(400);
      expect(p.type).toBe('urn:svc:error:tenant-unresolved');
    }
  });

  it('gives each tenant the base URL with its host prefixed by the tenant as issuer', () => {
    const r = resolver();
    expect(r.issuerOf('default')).toBe('http://localhost:3000/oidc/v1');
    expect(r.issuerOf('acme')).toBe('http://acme.localhost:3000/oidc/v1');
    expect(r.issuerOf('_platforms')).toBe('http://_platforms.localhost:3000/oidc/v1');
    expect(resolver({ BASE_URL: 'https://idp.example.com', OIDC_PATH: '/oidc' }).issuerOf('acme')).toBe('https://acme.idp.example.com/oidc');
  });
});

function record(slug: string, status: TenantRecord['status'] = 'active'): TenantRecord {
  return { id: `id-${slug}`, slug, display_name: slug, domain: null, status, created_at: '2024-01-01T00:00:00.000Z', updated_at: '2024-01-01T00:00:00.000Z' };
}

function fakeRepo(records: TenantRecord[]) {
  const rows = new Map(records.map((r) => [r.slug, r]));
  let gets = 0;
  const repo: Pick<TenantRepository, 'get'> = {
    get: async (slug) => {
      gets++;
      return rows.get(slug);
    },
  };
  return { repo: repo as TenantRepository, rows, gets: () => gets };
}

const quiet = { warn: () => {}, debug: () => {} };
const tick = () => new Promise((r) => setImmediate(r));

describe('TenantRegistry', () => {
  it('knows `default` without storage, caches lookups (hits and misses) and shares concurrent ones', async () => {
    const { repo, gets } = fakeRepo([record('acme')]);
    const registry = new TenantRegistry({ repo, events: new InProcessBus(), log: quiet, prefix: 'svc' });
    expect((await registry.find('default'))?.status).toBe('active');
    expect(gets()).toBe(0);
    const [a, b] = await Promise.all([registry.find('acme'), registry.find('acme')]);
    expect(a).toBe(b);
    expect(await registry.find('ghost')).toBeUndefined();
    await registry.find('acme');
    await registry.find('ghost');
    expect(gets()).toBe(2);
  });

  it('refuses unknown (404 not-found) and suspended (403 tenant-suspended) tenants', async () => {
    const { repo } = fakeRepo([record('acme'), record('frozen', 'suspended')]);
    const registry = new TenantRegistry({ repo, events: new InProcessBus(), log: quiet, prefix: 'svc' });
    await expect(registry.require('acme')).resolves.toMatchObject({ slug: 'acme' });
    await expect(registry.require('ghost')).rejects.toMatchObject({ status: 404, type: 'urn:svc:error:not-found' });
    await expect(registry.require('frozen')).rejects.toMatchObject({ status: 403, type: 'urn:svc:error:tenant-suspended' });
  });

  it('forgets an entry after the TTL', async () => {
    const { repo, rows } = fakeRepo([record('acme')]);
    const registry = new TenantRegistry({ repo, events: new InProcessBus(), log: quiet, prefix: 'svc', ttlMs: 30 });
    await registry.require('acme');
    rows.set('acme', record('acme', 'suspended'));
    await expect(registry.require('acme')).resolves.toBeDefined();
    await new Promise((r) => setTimeout(r, 60));
    await expect(registry.require('acme')).rejects.toMatchObject({ status: 403 });
  });

  it('applies a change at once here and, through the event bus, on another instance', async () => {
    const bus = new InProcessBus();
    const { repo, rows } = fakeRepo([record('acme')]);
    const here = new TenantRegistry({ repo, events: bus, log: quiet, prefix: 'p1' });
    const there = new TenantRegistry({ repo, events: bus, log: quiet, prefix: 'p1' });
    const seen: string[] = [];
    there.onChange((e) => seen.push(`${e.tenant}:${e.status}`));
    // What tenant-events.ts does for the other instance.
    const unsubscribe = bus.subscribePattern(channelPattern('p1', 'tenant:changed'), (_channel, payload) => there.received(payload as TenantChangedEvent));
    await here.require('acme');
    await there.require('acme');

    rows.set('acme', record('acme', 'suspended'));
    await here.changed({ tenant: 'acme', change: 'updated', status: 'suspended', at: new Date().toISOString() });
    await expect(here.require('acme')).rejects.toMatchObject({ status: 403 });
    await tick();
    expect(seen).toEqual(['acme:suspended']);
    await expect(there.require('acme')).rejects.toMatchObject({ status: 403 });

    // Another prefix's channel does not match; after unsubscribing nothing arrives.
    await bus.publish(tenantChangedChannel('acme', 'p2'), { tenant: 'acme', change: 'deleted', status: null, at: '' });
    unsubscribe();
    await bus.publish(tenantChangedChannel('acme', 'p1'), { tenant: 'acme', change: 'deleted', status: null, at: '' });
    await tick();
    expect(seen).toEqual(['acme:suspended']);
  });
});

describe('RelayState (`_ops` social-login callback relay)', () => {
  const relay = new RelayState(Buffer.alloc(32, 1));

  it('round-trips the tenant and the inner state', () => {
    expect(relay.read(relay.sign('acme', 'inner-123'))).toEqual({ tenant: 'acme', state: 'inner-123' });
  });

  it('refuses a tampered, foreign, malformed or expired value', () => {
    const good = relay.sign('acme', 'x');
    const [body, mac] = good.split('.');
    const forgedBody = Buffer.from(JSON.stringify({ t: 'beta', s: 'x', e: 9_999_999_999 })).toString('base64url');
    expect(relay.read(`${forgedBody}.${mac}`)).toBeUndefined();
    expect(relay.read(`${body}.${mac}x`)).toBeUndefined();
    expect(new RelayState(Buffer.alloc(32, 2)).read(good)).toBeUndefined();
    expect(relay.read('nonsense')).toBeUndefined();
    expect(relay.read(relay.sign('acme', 'x', Date.now() - 3_600_000))).toBeUndefined();
  });
});
