/**
 * The front door's promise-free lookup (liveTarget, issue 17) must never serve a request actorFor
 * would refuse or treat differently: unknown or suspended tenants, the development fallback, a
 * subdomain/header conflict (cookies dropped), `_ops`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { HttpRequest } from '../../src/http/types.js';
import { ProblemError } from '../../src/http/problem.js';
import { TenantFrontDoor } from '../../src/tenancy/front-door.js';
import { ActorPool } from '../../src/tenancy/pool.js';
import { TenantRegistry } from '../../src/tenancy/registry.js';
import type { Resolution } from '../../src/tenancy/resolver.js';
import type { TenantRecord } from '../../src/storage/types.js';

class FakeActor {
  constructor(readonly tenant: string) {}
  close(): void {}
}

const pools: Array<ActorPool<FakeActor>> = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

function record(slug: string, status: TenantRecord['status']): TenantRecord {
  return { id: slug, slug, display_name: slug, domain: null, status, created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z' };
}

function setup() {
  const stored = new Map<string, TenantRecord>([['acme', record('acme', 'active')]]);
  const registry = new TenantRegistry({ repo: { get: async (slug: string) => stored.get(slug) } as never, events: {} as never, log: { warn() {}, debug() {} }, prefix: 'svc' });
  let hits = 0;
  const pool = new ActorPool<FakeActor>({ maxSize: 10, idleTtlMs: 60_000, cleanupIntervalMs: 60_000, create: async (t) => new FakeActor(t), onHit: () => hits++ });
  pools.push(pool);
  const resolver = {
    resolve: (req: HttpRequest): Resolution => {
      // A name the real resolver refuses (400), as a malformed header or host would be.
      if (req.headers['x-tenant'] === 'Bad Name') throw new ProblemError(400, 'invalid-tenant', 'not a tenant name');
      return {
        tenant: req.headers['x-tenant'] ?? 'default',
        via: (req.headers['x-via'] as Resolution['via'] | undefined) ?? 'header',
        ...(req.headers['x-conflict'] ? { conflict: req.headers['x-conflict'] } : {}),
      };
    },
  };
  const ctx = {
    config: { multi_tenancy: { enabled: true, tenant_header: 'x-tenant' }, oidc: { path: '/oidc/v1' } },
    resolver,
    registry,
    sealer: { derive: () => Buffer.alloc(32, 1) },
    log: { debug() {}, warn() {}, info() {}, error() {} },
  };
  const door = new TenantFrontDoor({ ctx: ctx as never, pool, cursors: {} as never });
  const req = (headers: Record<string, string>): HttpRequest => ({ id: 'r', method: 'POST', path: '/oidc/v1/token', rawQuery: '', headers, ip: '127.0.0.1', body: Buffer.alloc(0), params: {} });
  return { stored, registry, pool, door, req, hits: () => hits };
}

describe('TenantFrontDoor.liveTarget', () => {
  it('serves an active tenant with a live actor, the same request, counted as a pool hit', async () => {
    const { door, req, hits } = setup();
    const r = req({ 'x-tenant': 'acme' });
    expect(door.liveTarget(r)).toBeUndefined(); // nothing cached or live yet: actorFor decides
    const first = await door.actorFor(r);
    const before = hits();
    const live = door.liveTarget(req({ 'x-tenant': 'acme' }));
    expect(live?.actor).toBe(first.actor);
    expect(live?.tenant).toBe('acme');
    expect(hits()).toBe(before + 1);
  });

  it('leaves a suspended or unknown tenant to actorFor, even while an actor is still live', async () => {
    const { door, req, stored, registry, pool } = setup();
    await door.actorFor(req({ 'x-tenant': 'acme' }));
    stored.set('acme', record('acme', 'suspended'));
    registry.invalidate('acme');
    await registry.find('acme');
    expect(pool.peek('acme')).toBeDefined();
    expect(door.liveTarget(req({ 'x-tenant': 'acme' }))).toBeUndefined();
    await expect(door.actorFor(req({ 'x-tenant': 'acme' }))).rejects.toMatchObject({ status: 403 });
    expect(door.liveTarget(req({ 'x-tenant': 'nope' }))).toBeUndefined();
    await expect(door.actorFor(req({ 'x-tenant': 'nope' }))).rejects.toBeInstanceOf(ProblemError);
  });

  it('leaves the development fallback, a subdomain/header conflict and _ops to actorFor', async () => {
    const { door, req } = setup();
    await door.actorFor(req({ 'x-tenant': 'acme' }));
    await door.actorFor(req({ 'x-tenant': 'default' }));
    expect(door.liveTarget(req({ 'x-tenant': 'default' }))).toBeDefined();
    expect(door.liveTarget(req({ 'x-tenant': 'default', 'x-via': 'fallback' }))).toBeUndefined();
    const conflicting = req({ 'x-tenant': 'acme', 'x-conflict': 'other', cookie: 'a=b' });
    expect(door.liveTarget(conflicting)).toBeUndefined();
    expect((await door.actorFor(conflicting)).req.headers.cookie).toBeUndefined();
    expect(door.liveTarget(req({ 'x-tenant': '_ops' }))).toBeUndefined();
  });
});

describe('TenantFrontDoor.isOps', () => {
  it('is true for `_ops` only (its answers are JSON, never a page), false when no tenant resolves', () => {
    const { door, req } = setup();
    expect(door.isOps(req({ 'x-tenant': '_ops' }))).toBe(true);
    expect(door.isOps(req({ 'x-tenant': 'acme' }))).toBe(false);
    expect(door.isOps(req({ 'x-tenant': 'Bad Name' }))).toBe(false);
  });
});
