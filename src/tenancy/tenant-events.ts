/**
 * Every tenant's change events, received once per instance: one pattern subscription per kind
 * (`<prefix>:*:jwks:rotated`, `:config:changed`, `:client:changed`, `:tenant:changed`,
 * `:client:auth-failed`) instead
 * of a subscription per tenant actor. Tenants whose state is cached but that have no live actor
 * stay fresh this way, and a pool miss or eviction costs no SUBSCRIBE/UNSUBSCRIBE round trip.
 *
 * Routing: keys or configuration changed -> the tenant's cached state is dropped and its live
 * actor (if any) reloads; a client changed -> that client leaves the tenant's client cache; a
 * tenant changed -> the registry (which evicts the actor of a suspended or deleted tenant); a
 * client failed to authenticate -> the throttle counts that client's addresses again (clear-pairs.ts).
 * The tenant is taken from the channel name; a payload naming another tenant is ignored.
 */
import { channelPattern, type ClientAuthFailedEvent, type ClientChangedEvent, type ConfigChangedEvent, type EventBus } from '../events/bus.js';
import type { Logger } from '../log.js';
import type { ClearPairs } from '../oidc/clear-pairs.js';
import type { TenantActor } from './actor.js';
import type { ActorPool } from './pool.js';
import type { TenantChangedEvent, TenantRegistry } from './registry.js';
import { isValidTenantName } from './resolver.js';
import type { TenantStateCache } from './state-cache.js';

export interface TenantEventDeps {
  events: EventBus;
  prefix: string;
  states: TenantStateCache;
  pool: ActorPool<TenantActor>;
  registry: TenantRegistry;
  /** The client-authentication throttle's pairs known under its limits. */
  clearPairs: Pick<ClearPairs, 'clientFailed'>;
  log: Pick<Logger, 'error'>;
}

type Kind = 'jwks:rotated' | 'config:changed' | 'client:changed' | 'tenant:changed' | 'client:auth-failed';
const KINDS: readonly Kind[] = ['jwks:rotated', 'config:changed', 'client:changed', 'tenant:changed', 'client:auth-failed'];

/** Subscribes; returns the function that unsubscribes every pattern. */
export function routeTenantEvents(deps: TenantEventDeps): () => void {
  const { events, prefix } = deps;
  const unsubscribers = KINDS.map((kind) =>
    events.subscribePattern(channelPattern(prefix, kind), (channel, payload) => {
      const tenant = tenantOf(channel, prefix, kind);
      if (!tenant) return;
      const named = (payload as { tenant?: unknown } | null)?.tenant;
      if (named !== undefined && named !== tenant) return;
      deliver(deps, kind, tenant, payload);
    }),
  );
  return () => {
    for (const unsubscribe of unsubscribers) unsubscribe();
  };
}

function deliver(deps: TenantEventDeps, kind: Kind, tenant: string, payload: unknown): void {
  const { states, pool, registry, log } = deps;
  switch (kind) {
    case 'jwks:rotated':
    case 'config:changed': {
      // This instance's own configuration change, applied before it was published (config-changed.ts).
      if (kind === 'config:changed' && (payload as Partial<ConfigChangedEvent> | null)?.origin === deps.events.origin) return;
      // A live actor reloads (which invalidates first); otherwise the cached state is dropped.
      const actor = pool.peek(tenant);
      if (!actor) states.invalidate(tenant);
      else actor.reload().catch((err: unknown) => log.error({ err, tenant, event: kind }, 'tenant actor could not reload after a change event'));
      return;
    }
    case 'client:changed': {
      const id = (payload as Partial<ClientChangedEvent> | null)?.client_id;
      if (typeof id === 'string') states.invalidateClient(tenant, id);
      return;
    }
    case 'tenant:changed':
      registry.received(payload as TenantChangedEvent);
      return;
    case 'client:auth-failed': {
      const id = (payload as Partial<ClientAuthFailedEvent> | null)?.client_id;
      if (typeof id === 'string') deps.clearPairs.clientFailed(tenant, id);
    }
  }
}

/** `<prefix>:<tenant>:<kind>` -> tenant, or undefined when the middle is not a tenant slug. */
function tenantOf(channel: string, prefix: string, kind: Kind): string | undefined {
  const head = `${prefix}:`;
  const tail = `:${kind}`;
  if (!channel.startsWith(head) || !channel.endsWith(tail)) return undefined;
  const tenant = channel.slice(head.length, channel.length - tail.length);
  return isValidTenantName(tenant) ? tenant : undefined;
}
