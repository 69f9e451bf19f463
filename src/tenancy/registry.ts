/**
 * The tenant registry as the request path sees it: "does this tenant exist, and may it serve?",
 * answered from a small in-memory cache in front of TenantRepository.
 *
 * Freshness: a change made through this instance (tenants.ts) invalidates the entry at once and is
 * announced on `<prefix>:<tenant>:tenant:changed`; every instance receives every tenant's
 * announcements (tenant-events.ts, one pattern subscription), drops its entry and evicts the actor
 * when the tenant was suspended or deleted. Entries are trusted for ttlMs at most, so a change is
 * seen within that time even if its event was lost (pub/sub is at-most-once; the cache is also
 * cleared when the event bus reconnects).
 */
import { LRUCache } from 'lru-cache';
import type { EventBus } from '../events/bus.js';
import { ProblemError, notFound } from '../http/problem.js';
import type { Logger } from '../log.js';
import type { TenantRecord, TenantRepository } from '../storage/types.js';
import { DEFAULT_TENANT } from './resolver.js';
import { entryBound } from './cache-bound.js';

/** How long a lookup is trusted without an event (both "exists" and "unknown" answers). */
export const TTL_MS = 60_000;
const MAX_ENTRIES = 50_000;

/** Channel of a tenant's registry changes (created, updated, suspended, reactivated, deleted). */
export const tenantChangedChannel = (tenant: string, prefix = 'svc'): string => `${prefix}:${tenant}:tenant:changed`;

/** Payload on tenantChangedChannel. */
export interface TenantChangedEvent {
  tenant: string;
  change: 'created' | 'updated' | 'deleted';
  /** The status after the change; null once deleted. */
  status: TenantRecord['status'] | null;
  /** ISO 8601 time of the change. */
  at: string;
}

/** `default` is hard-coded (spec 1.5): never stored, always active. */
const DEFAULT_RECORD: TenantRecord = Object.freeze({
  id: DEFAULT_TENANT,
  slug: DEFAULT_TENANT,
  display_name: 'Default',
  domain: null,
  status: 'active',
  created_at: '1970-01-01T00:00:00.000Z',
  updated_at: '1970-01-01T00:00:00.000Z',
});

export const tenantSuspended = (tenant: string) => new ProblemError(403, 'tenant-suspended', `Tenant ${tenant} is suspended`);

interface Entry {
  record: TenantRecord | undefined;
}

export interface RegistryDeps {
  repo: TenantRepository;
  events: EventBus;
  log: Pick<Logger, 'warn' | 'debug'>;
  /** First segment of event channels (config redis.key_prefix). */
  prefix: string;
  ttlMs?: number;
  /** False in multi-tenant production: `default` is then unknown like any unstored slug (resolver.ts). */
  defaultServes?: boolean;
}

export class TenantRegistry {
  private readonly cache: LRUCache<string, Entry>;
  private readonly pending = new Map<string, Promise<TenantRecord | undefined>>();
  private readonly listeners = new Set<(event: TenantChangedEvent) => void>();

  constructor(private readonly deps: RegistryDeps) {
    this.cache = new LRUCache<string, Entry>({ ...entryBound(MAX_ENTRIES), ttl: deps.ttlMs ?? TTL_MS });
  }

  /** The tenant's record, or undefined when there is no such tenant. */
  find(slug: string): Promise<TenantRecord | undefined> {
    if (slug === DEFAULT_TENANT) return Promise.resolve(this.deps.defaultServes === false ? undefined : DEFAULT_RECORD);
    const hit = this.cache.get(slug);
    if (hit) return Promise.resolve(hit.record);
    // Concurrent first requests for one tenant share one query.
    let lookup = this.pending.get(slug);
    if (!lookup) {
      lookup = this.deps.repo
        .get(slug)
        .then((record) => {
          this.cache.set(slug, { record });
          return record;
        })
        .finally(() => this.pending.delete(slug));
      this.pending.set(slug, lookup);
    }
    return lookup;
  }

  /** The record of a tenant that may serve requests: 404 when unknown, 403 when suspended. */
  async require(slug: string): Promise<TenantRecord> {
    const record = await this.find(slug);
    if (!record) throw notFound(`Tenant ${slug} not found`);
    if (record.status !== 'active') throw tenantSuspended(slug);
    return record;
  }

  /**
   * Synchronous answer from the cache only: true when the tenant is known to be active, undefined
   * when the cache cannot tell (not cached, expired, unknown or suspended: the async path decides).
   */
  activeNow(slug: string): true | undefined {
    if (slug === DEFAULT_TENANT) return this.deps.defaultServes === false ? undefined : true;
    return this.cache.get(slug)?.record?.status === 'active' ? true : undefined;
  }

  invalidate(slug: string): void {
    this.cache.delete(slug);
  }

  /** Forgets every entry (the event bus was away and may have missed changes). */
  clear(): void {
    this.cache.clear();
  }

  /** Called for every change, made here or announced by another instance. */
  onChange(listener: (event: TenantChangedEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * A change this instance made (storage already written): applied locally at once, then
   * announced. An announcement that cannot be published is logged, not failed: the write is
   * committed, and other instances see it when their cache entry ends.
   */
  async changed(event: TenantChangedEvent): Promise<void> {
    this.apply(event);
    try {
      await this.deps.events.publish(tenantChangedChannel(event.tenant, this.deps.prefix), event);
    } catch (err) {
      this.deps.log.warn({ err, tenant: event.tenant }, 'tenant:changed event could not be published');
    }
  }

  /**
   * A change announced on the event bus (tenant-events.ts routes every tenant's
   * `<prefix>:<tenant>:tenant:changed` here, including this instance's own announcements, which
   * apply a second time harmlessly).
   */
  received(event: TenantChangedEvent): void {
    if (typeof event?.tenant !== 'string') return;
    this.apply(event);
  }

  private apply(event: TenantChangedEvent): void {
    this.invalidate(event.tenant);
    this.deps.log.debug({ tenant: event.tenant, change: event.change, status: event.status }, 'tenant changed');
    for (const listener of this.listeners) listener(event);
  }
}
