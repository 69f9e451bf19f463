/**
 * What a tenant actor is built from, kept for many more tenants than the actor pool holds:
 * the tenant's effective configuration, its imported signing keys (KeySet: keys unsealed and
 * parsed, JWKS serialised) and its client cache. Loading these costs three storage round trips
 * and key imports; with them cached, a pool miss only builds the actor itself (no I/O), and the
 * oidc-provider instance — the expensive, pool-bounded part — is built by the actor on first use.
 *
 * Freshness does not depend on a live actor: tenant-events.ts receives every tenant's
 * jwks:rotated / config:changed / client:changed events (one pattern subscription per kind) and
 * invalidates here; the cache is cleared when the event bus reconnects. A load that was running
 * when an invalidation arrived is handed to its callers but not cached (the epoch check), so a
 * rotation can never be undone by a slow load that read the old keys.
 *
 * Bounded by `multi_tenancy.tenant_cache.max_size` entries (lru-cache: an exact bound, allocated
 * once per process) and `ttl_ms` as a safety net for an event lost without a reconnect. An entry is
 * ~5 KB plus ~5 KB per private key the tenant has used (keys are imported on first use, KeySet).
 */
import { LRUCache } from 'lru-cache';
import QuickLRU from 'quick-lru';
import { KeySet, ensureKeys } from '../keys/keystore.js';
import { lifetimesBeyondOverlap, overrunMessage } from '../keys/overlap.js';
import { demoteUnconfigured } from '../keys/rotation.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { Config } from '../config/index.js';
import type { EventBus } from '../events/bus.js';
import type { Logger } from '../log.js';
import type { Sealer } from '../keys/sealer.js';
import type { ClientRecord, Storage } from '../storage/types.js';
import type { EffectiveConfig } from './config/merge.js';
import { loadEffectiveConfig } from './config/store.js';
import { entryBound } from './cache-bound.js';

/** How long a cached client record is trusted without a client:changed event. */
const CLIENT_TTL_MS = 5 * 60_000;
const CLIENTS_PER_TENANT = 2000;

export interface TenantState {
  readonly config: EffectiveConfig;
  readonly keys: KeySet;
  /** Client records by id; the actor reads through it and the Management API invalidates it. */
  readonly clients: QuickLRU<string, ClientRecord>;
}

/** What loading needs (named here, not as a slice of AppContext: the context holds this cache). */
interface Deps {
  readonly config: Config;
  readonly storage: Storage;
  readonly sealer: Sealer;
  /** For keys of a removed algorithm (keys/rotation.ts demoteUnconfigured) and the lifetime warning. */
  readonly events: EventBus;
  readonly log: Logger;
  readonly audit: Pick<AuditLog, 'record'>;
}

export class TenantStateCache {
  private readonly entries: LRUCache<string, TenantState>;
  private readonly loading = new Map<string, Promise<TenantState>>();
  /** The lifetime warning last logged per tenant, so a reload with the same values logs nothing. */
  private readonly warned = new QuickLRU<string, string>({ maxSize: 10_000 });
  /** Bumped by every invalidation: a load that started before it is not cached. */
  private epoch = 0;

  constructor(
    private readonly deps: Deps,
    opts: { maxSize: number; ttlMs: number },
  ) {
    this.entries = new LRUCache({ ...entryBound(Math.max(1, opts.maxSize)), ttl: opts.ttlMs });
  }

  get size(): number {
    return this.entries.size;
  }

  /** The tenant's state: cached, or loaded from storage (concurrent callers share one load). */
  get(tenant: string): Promise<TenantState> {
    const hit = this.entries.get(tenant);
    if (hit) return Promise.resolve(hit);
    let load = this.loading.get(tenant);
    if (!load) {
      const epoch = this.epoch;
      load = this.load(tenant)
        .then((state) => {
          if (epoch === this.epoch) this.entries.set(tenant, state);
          return state;
        })
        .finally(() => {
          if (this.loading.get(tenant) === load) this.loading.delete(tenant);
        });
      this.loading.set(tenant, load);
    }
    return load;
  }

  /** The cached state without loading (the client cache of a tenant without a live actor). */
  peek(tenant: string): TenantState | undefined {
    return this.entries.peek(tenant);
  }

  /** Keys or configuration changed: the next get reads storage again. */
  invalidate(tenant: string): void {
    this.epoch++;
    this.entries.delete(tenant);
    this.loading.delete(tenant);
  }

  /** A client changed: dropped from the tenant's client cache (the rest stays). */
  invalidateClient(tenant: string, clientId: string): void {
    this.entries.peek(tenant)?.clients.delete(clientId);
  }

  /** Forgets everything (the event bus was away and may have missed events). */
  clear(): void {
    this.epoch++;
    this.entries.clear();
    this.loading.clear();
  }

  private async load(tenant: string): Promise<TenantState> {
    const { storage, sealer } = this.deps;
    const config = await loadEffectiveConfig(this.deps, tenant);
    this.warnLifetimes(tenant, config);
    const algorithms = config.security.key_store.algorithms;
    const stored = await ensureKeys(storage.keys, tenant, algorithms, sealer);
    // Keys of an algorithm taken out of the configuration stop signing now, not at the next rotation.
    const { keys: records } = await demoteUnconfigured(this.deps, tenant, algorithms, stored);
    return {
      config,
      keys: new KeySet(records, sealer, tenant, algorithms),
      clients: new QuickLRU({ maxSize: CLIENTS_PER_TENANT, maxAge: CLIENT_TTL_MS }),
    };
  }

  /**
   * A token lifetime the tenant overrides beyond the overlap window (the global settings are
   * checked once at start, app.ts): logged at warn once per tenant and values, on every instance
   * that loads the tenant. Not refused at the config API: a stored override must stay writable
   * after the operator shortens the window (docs/signing-keys.md).
   */
  private warnLifetimes(tenant: string, config: EffectiveConfig): void {
    const overruns = lifetimesBeyondOverlap(config, config.overrides.oidc?.ttl ?? {});
    const signature = overruns.map((o) => `${o.name}=${o.seconds}/${o.overlap}`).join(',');
    if ((this.warned.get(tenant) ?? '') === signature) return;
    this.warned.set(tenant, signature);
    for (const o of overruns) {
      const setting = `oidc.ttl.${o.name}`;
      this.deps.log.warn({ tenant, setting, seconds: o.seconds, overlap_window_seconds: o.overlap }, overrunMessage(`the override ${setting} of tenant ${tenant}`, o));
    }
  }
}
