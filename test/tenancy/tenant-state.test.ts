/**
 * The tenant state cache (tenancy/state-cache.ts) on a real SQLite storage, and the routing of
 * every tenant's change events by pattern subscription (tenancy/tenant-events.ts).
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AuditLog } from '../../src/audit/audit-log.js';
import { loadConfig } from '../../src/config/index.js';
import { InProcessBus, channelPattern, clientAuthFailedChannel, clientChangedChannel, configChangedChannel, patternMatcher, rotationChannel } from '../../src/events/bus.js';
import { Sealer } from '../../src/keys/sealer.js';
import type { TenantActor } from '../../src/tenancy/actor.js';
import type { ActorPool } from '../../src/tenancy/pool.js';
import { tenantChangedChannel, type TenantChangedEvent, type TenantRegistry } from '../../src/tenancy/registry.js';
import { TenantStateCache } from '../../src/tenancy/state-cache.js';
import { configChanged } from '../../src/tenancy/config-changed.js';
import { routeTenantEvents } from '../../src/tenancy/tenant-events.js';
import { clientMetadata, openTempStorage, type TempStorage } from '../helpers/storage.js';

const tick = () => new Promise((r) => setImmediate(r));

describe('TenantStateCache (real SQLite)', () => {
  let temp: TempStorage;
  let cache: TenantStateCache;
  let bus: InProcessBus;
  const config = loadConfig({ NODE_ENV: 'test' });
  const sealer = new Sealer(randomBytes(32));
  /** What the cache logs at warn, as [fields, message]. */
  let warnings: Array<[Record<string, unknown>, string]>;
  const cacheWith = (settings: typeof config) => {
    const log = pino({ level: 'silent' });
    vi.spyOn(log, 'warn').mockImplementation(((fields: Record<string, unknown>, msg: string) => void warnings.push([fields, msg])) as never);
    return new TenantStateCache({ config: settings, storage: temp.storage, sealer, events: bus, log, audit: new AuditLog(temp.storage, log) }, { maxSize: 10, ttlMs: 60_000 });
  };

  beforeEach(() => {
    temp = openTempStorage();
    bus = new InProcessBus();
    warnings = [];
    cache = cacheWith(config);
  });
  afterEach(async () => {
    await bus.close();
    await temp.close();
  });

  it('loads config and keys once for concurrent callers, then answers from memory', async () => {
    const list = vi.spyOn(temp.storage.keys, 'list');
    const [a, b] = await Promise.all([cache.get('default'), cache.get('default')]);
    expect(a).toBe(b);
    expect(a.keys.signing.size).toBe(3);
    expect(JSON.parse(a.keys.jwksBody.toString()).keys).toHaveLength(3);
    const reads = list.mock.calls.length;
    expect(await cache.get('default')).toBe(a);
    expect(list.mock.calls.length).toBe(reads);
  });

  it('reads storage again after invalidate, and never caches a load that an invalidation overtook', async () => {
    const first = await cache.get('default');
    cache.invalidate('default');
    const loading = cache.get('default');
    // The event arrives while the load runs: the load's answer is handed out but not kept.
    cache.invalidate('default');
    const raced = await loading;
    expect(raced).not.toBe(first);
    expect(cache.peek('default')).toBeUndefined();
    const fresh = await cache.get('default');
    expect(fresh).not.toBe(raced);
    expect(cache.peek('default')).toBe(fresh);
  });

  it('drops one client from the tenant client cache, leaving keys and the other clients', async () => {
    const state = await cache.get('default');
    const meta = clientMetadata();
    state.clients.set('a', { client_id: 'a', metadata: meta } as never);
    state.clients.set('b', { client_id: 'b', metadata: meta } as never);
    cache.invalidateClient('default', 'a');
    cache.invalidateClient('nobody', 'b');
    expect(state.clients.has('a')).toBe(false);
    expect(state.clients.has('b')).toBe(true);
    expect(cache.peek('default')).toBe(state);
  });

  it('clear forgets every tenant', async () => {
    await cache.get('default');
    cache.clear();
    expect(cache.size).toBe(0);
  });

  it('loads with the configured algorithms only: keys of a removed one stop signing and verify for the overlap window', async () => {
    const before = await cache.get('default');
    const rs = before.keys.signingKey('RS256').kid;
    const ed = before.keys.signingKey('EdDSA').kid;
    const es = before.keys.signingKey('ES256').kid;
    const announced: unknown[] = [];
    bus.subscribePattern(rotationChannel('default', config.redis.key_prefix), (_c, p) => announced.push(p));

    // The service restarted with SECURITY_KEY_STORE_ALGORITHMS=ES256.
    const after = await cacheWith(loadConfig({ NODE_ENV: 'test', SECURITY_KEY_STORE_ALGORITHMS: 'ES256' })).get('default');
    expect([...after.keys.signing.keys()]).toEqual(['ES256']);
    expect(after.keys.signingKey('ES256').kid).toBe(es);
    expect([...after.keys.verifying.keys()].sort()).toEqual([rs, ed, es].sort());
    const stored = new Map((await temp.storage.keys.list('default')).map((k) => [k.kid, k]));
    expect(stored.size).toBe(3);
    for (const kid of [rs, ed]) expect(stored.get(kid)).toMatchObject({ status: 'expiring', promoted: false, rotated_at: expect.any(String), expires_at: expect.any(String) });
    expect(stored.get(es)).toMatchObject({ status: 'active', promoted: true });
    expect(warnings).toEqual([[expect.objectContaining({ tenant: 'default', kids: expect.arrayContaining([rs, ed]), algorithms: ['EdDSA', 'RS256'], setting: 'SECURITY_KEY_STORE_ALGORITHMS' }), expect.stringContaining('stopped signing')]]);
    await tick();
    expect(announced).toEqual([expect.objectContaining({ tenant: 'default', promoted: 0 })]);
  });

  it("warns once per tenant and values when the tenant's own token lifetime exceeds the overlap window", async () => {
    await temp.storage.tenantConfig.put('default', 'oidc', { ttl: { access_token: 86400, refresh_token: 7776000 } });
    await cache.get('default');
    expect(warnings).toEqual([
      [
        { tenant: 'default', setting: 'oidc.ttl.access_token', seconds: 86400, overlap_window_seconds: 7200 },
        'the override oidc.ttl.access_token of tenant default (86400 s) is longer than SECURITY_KEY_STORE_OVERLAP_WINDOW_SECONDS (7200 s): a token signed just before a key rotation stops verifying up to 79200 s before it expires; set the overlap window to at least 86400 s or shorten the lifetime',
      ],
    ]);
    // A reload with the same values says nothing more; a changed value is said again.
    cache.invalidate('default');
    await cache.get('default');
    expect(warnings).toHaveLength(1);
    await temp.storage.tenantConfig.put('default', 'oidc', { ttl: { id_token: 7201 } });
    cache.invalidate('default');
    await cache.get('default');
    expect(warnings.slice(1)).toEqual([[expect.objectContaining({ setting: 'oidc.ttl.id_token', seconds: 7201 }), expect.any(String)]]);
    // The global lifetimes are the start-up check's (app.ts), not repeated per tenant.
    const globalOnly = cacheWith(loadConfig({ NODE_ENV: 'test', OIDC_TTL_ACCESS_TOKEN: '86400' }));
    await temp.storage.tenantConfig.put('default', 'oidc', {});
    warnings = [];
    await globalOnly.get('default');
    expect(warnings).toEqual([]);
  });
});

describe('routeTenantEvents', () => {
  function setup(prefix: string) {
    const bus = new InProcessBus();
    const calls: string[] = [];
    const states = {
      invalidate: (t: string) => calls.push(`invalidate:${t}`),
      invalidateClient: (t: string, id: string) => calls.push(`client:${t}:${id}`),
    } as unknown as TenantStateCache;
    const live = new Set(['acme']);
    const pool = {
      // Like TenantActor.reload: drops the cached state, then reloads.
      peek: (t: string) =>
        live.has(t)
          ? {
              reload: async () => {
                states.invalidate(t);
                calls.push(`reload:${t}`);
              },
            }
          : undefined,
    } as unknown as ActorPool<TenantActor>;
    const registry = { received: (e: TenantChangedEvent) => calls.push(`tenant:${e.tenant}:${e.status}`) } as unknown as TenantRegistry;
    const clearPairs = { clientFailed: (t: string, id: string) => calls.push(`auth-failed:${t}:${id}`) };
    const stop = routeTenantEvents({ events: bus, prefix, states, pool, registry, clearPairs, log: { error: () => {} } });
    return { bus, calls, stop };
  }

  it('routes each kind of every tenant, with or without a live actor', async () => {
    const { bus, calls } = setup('svc');
    await bus.publish(rotationChannel('acme', 'svc'), { tenant: 'acme', kids: [], promoted: 1, at: '' });
    await bus.publish(configChangedChannel('beta', 'svc'), { tenant: 'beta', section: 'oidc', at: '' });
    await bus.publish(clientChangedChannel('beta', 'svc'), { tenant: 'beta', client_id: 'c1', at: '' });
    await bus.publish(tenantChangedChannel('gamma', 'svc'), { tenant: 'gamma', change: 'updated', status: 'suspended', at: '' });
    await bus.publish(clientAuthFailedChannel('delta', 'svc'), { tenant: 'delta', client_id: 'c2' });
    await bus.publish(clientAuthFailedChannel('delta', 'svc'), { tenant: 'epsilon', client_id: 'c3' }); // names another tenant
    await bus.publish(clientAuthFailedChannel('delta', 'svc'), { tenant: 'delta', client_id: 42 }); // no client id
    await tick();
    await tick();
    expect(calls).toEqual(['invalidate:acme', 'reload:acme', 'invalidate:beta', 'client:beta:c1', 'tenant:gamma:suspended', 'auth-failed:delta:c2']);
  });

  it('ignores a payload naming another tenant, another prefix, a malformed tenant, and everything after stop', async () => {
    const { bus, calls, stop } = setup('svc');
    await bus.publish(rotationChannel('acme', 'svc'), { tenant: 'beta', kids: [], promoted: 1, at: '' });
    await bus.publish(rotationChannel('acme', 'other'), { tenant: 'acme', kids: [], promoted: 1, at: '' });
    await bus.publish('svc:ACME/..:jwks:rotated', { tenant: 'ACME/..' });
    await tick();
    expect(calls).toEqual([]);
    stop();
    await bus.publish(rotationChannel('acme', 'svc'), { tenant: 'acme', kids: [], promoted: 1, at: '' });
    await tick();
    expect(calls).toEqual([]);
  });

  it("skips this instance's own configuration change (applied before it was published), not another's, nor a key rotation", async () => {
    const { bus, calls } = setup('svc');
    await configChanged({ events: bus, tenantStates: { invalidate: () => calls.push('local') }, log: { error: () => {}, warn: () => {} }, config: { redis: { key_prefix: 'svc' } } }, 'acme', 'oidc', {
      reload: async () => void calls.push('local-reload'),
    });
    await bus.publish(configChangedChannel('acme', 'svc'), { tenant: 'acme', section: 'oidc', at: '', origin: 'another-instance' });
    await bus.publish(rotationChannel('acme', 'svc'), { tenant: 'acme', kids: [], promoted: 1, at: '' });
    await tick();
    await tick();
    expect(calls).toEqual(['local-reload', 'invalidate:acme', 'reload:acme', 'invalidate:acme', 'reload:acme']);
  });

  it('a change the instance could not apply locally is not marked as its own: the echo is the retry', async () => {
    const { bus, calls } = setup('svc');
    const deps = { events: bus, tenantStates: { invalidate: () => {} }, log: { error: () => calls.push('logged'), warn: () => {} }, config: { redis: { key_prefix: 'svc' } } };
    await configChanged(deps, 'acme', 'oidc', { reload: () => Promise.reject(new Error('storage away')) });
    await tick();
    expect(calls).toEqual(['logged', 'invalidate:acme', 'reload:acme']);
  });

  it('matches a prefix holding glob characters literally', async () => {
    const { bus, calls } = setup('a*b?[x]');
    await bus.publish(rotationChannel('acme', 'aZZb?[x]'), { tenant: 'acme' });
    await bus.publish(rotationChannel('acme', 'a*b?[x]'), { tenant: 'acme' });
    await tick();
    expect(calls).toEqual(['invalidate:acme', 'reload:acme']);
    expect(patternMatcher(channelPattern('p', 'jwks:rotated')).test('p:t1:jwks:rotated')).toBe(true);
    expect(patternMatcher(channelPattern('p', 'jwks:rotated')).test('p:t1:config:changed')).toBe(false);
  });
});
