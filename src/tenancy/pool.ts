/**
 * ActorPool: at most `maxSize` live tenant actors (least recently used evicted), idle ones evicted
 * by a periodic sweep after `idleTtlMs`. Concurrent first requests for one tenant share a single
 * creation. Evicted actors are closed (timers, subscriptions, caches released).
 */
import { LRUCache } from 'lru-cache';

export interface PoolMember {
  close(): Promise<void> | void;
}

/** Why an actor left the pool (the `reason` label of svc_tenant_pool_evictions_total). */
export type EvictionReason = 'lru' | 'idle' | 'suspended' | 'deleted' | 'shutdown';

export interface PoolOptions<A extends PoolMember> {
  maxSize: number;
  idleTtlMs: number;
  cleanupIntervalMs: number;
  create: (tenant: string) => Promise<A>;
  onEvict?: (tenant: string, reason: EvictionReason) => void;
  onHit?: () => void;
  onMiss?: () => void;
  onError?: (tenant: string, err: unknown) => void;
}

export class ActorPool<A extends PoolMember> {
  private readonly cache: LRUCache<string, A>;
  private readonly pending = new Map<string, Promise<A>>();
  private readonly sweep: NodeJS.Timeout;
  private closing = false;
  /** Closes started by evictions, so close() can wait for every one of them. */
  private readonly closingActors = new Set<Promise<void>>();
  /** Reason to report for the next dispose (set around explicit deletes). */
  private explicitReason: EvictionReason | null = null;

  constructor(private readonly opts: PoolOptions<A>) {
    this.cache = new LRUCache<string, A>({
      max: opts.maxSize,
      ttl: opts.idleTtlMs,
      updateAgeOnGet: true,
      ttlAutopurge: false,
      allowStale: false,
      dispose: (actor, tenant, reason) => {
        const why: EvictionReason = this.explicitReason ?? (reason === 'evict' ? 'lru' : 'idle');
        this.opts.onEvict?.(tenant, why);
        this.closeActor(tenant, actor);
      },
    });
    this.sweep = setInterval(() => this.cache.purgeStale(), opts.cleanupIntervalMs);
    this.sweep.unref();
  }

  private closeActor(tenant: string, actor: A): void {
    // A member that closes synchronously (TenantActor) costs no promise on every LRU eviction,
    // which a full pool does on every miss (issue 17 item 6). It runs inside lru-cache's dispose,
    // so a member's close must not call back into the pool (TenantActor's only clears its own state).
    let closing: Promise<void> | void;
    try {
      closing = actor.close();
    } catch (err) {
      this.opts.onError?.(tenant, err);
      return;
    }
    if (!closing) return;
    const done: Promise<void> = closing.catch((err: unknown) => this.opts.onError?.(tenant, err)).finally(() => this.closingActors.delete(done));
    this.closingActors.add(done);
  }

  get size(): number {
    return this.cache.size;
  }

  has(tenant: string): boolean {
    return this.cache.has(tenant);
  }

  tenants(): string[] {
    return [...this.cache.keys()];
  }

  /** The tenant's actor, created on first use. */
  get(tenant: string): Promise<A> {
    const live = this.cache.get(tenant);
    if (live) {
      this.opts.onHit?.();
      return Promise.resolve(live);
    }
    const inFlight = this.pending.get(tenant);
    if (inFlight) return inFlight;
    this.opts.onMiss?.();
    const creation = this.opts
      .create(tenant)
      .then((actor) => {
        if (this.closing) {
          this.closeActor(tenant, actor);
          throw new Error('actor pool is closed');
        }
        this.cache.set(tenant, actor);
        return actor;
      })
      .finally(() => this.pending.delete(tenant));
    this.pending.set(tenant, creation);
    return creation;
  }

  /** The live actor, counted as a use and a hit like get(), or undefined (nothing is created). */
  getLive(tenant: string): A | undefined {
    const live = this.cache.get(tenant);
    if (live) this.opts.onHit?.();
    return live;
  }

  /** The live actor, without creating one and without counting as use (neither idle age nor LRU order). */
  peek(tenant: string): A | undefined {
    return this.cache.peek(tenant);
  }

  /** Drops a tenant's actor (tenant deleted or suspended); the next request builds a new one. */
  evict(tenant: string, reason: EvictionReason = 'deleted'): void {
    this.explicitReason = reason;
    try {
      this.cache.delete(tenant);
    } finally {
      this.explicitReason = null;
    }
  }

  /** Runs the idle sweep now (the timer does it every cleanupIntervalMs). */
  sweepIdle(): void {
    this.cache.purgeStale();
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.sweep);
    await Promise.allSettled([...this.pending.values()]);
    this.explicitReason = 'shutdown';
    try {
      // dispose closes each actor once (errors go to onError); wait for all of them, and for
      // closes started by earlier evictions.
      this.cache.clear();
    } finally {
      this.explicitReason = null;
    }
    await Promise.allSettled([...this.closingActors]);
  }
}
