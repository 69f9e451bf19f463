/**
 * Makes a stored change of a tenant's configuration, API resources or custom claims live: this
 * instance's actor of the tenant (if it has one) reloads before the caller answers, then the
 * `config:changed` event tells the other instances (tenant-events.ts). The write is committed
 * either way, so failures here are logged, not returned: an instance that misses the event re-reads
 * when its event bus reconnects or its actor is rebuilt.
 *
 * The event names this instance as its origin when the local reload succeeded, so the instance
 * skips its own echo: a second reload would drop the oidc-provider build just made and send the
 * next requests of the direct paths (refresh, code, userinfo, silent re-authentication) through
 * oidc-provider while it is rebuilt. After a failed local reload the echo is the retry.
 */
import { configChangedChannel, type ConfigChangedEvent, type EventBus } from '../events/bus.js';
import type { Logger } from '../log.js';
import type { TenantHandle } from './handle.js';
import type { TenantStateCache } from './state-cache.js';

export interface ConfigChangedDeps {
  readonly events: EventBus;
  readonly tenantStates: Pick<TenantStateCache, 'invalidate'>;
  readonly log: Pick<Logger, 'error' | 'warn'>;
  readonly config: { readonly redis: { readonly key_prefix: string } };
}

/** `section` names what changed (a configuration section, `resources`, the custom claims document), never its values. */
export async function configChanged(deps: ConfigChangedDeps, tenant: string, section: string, actor: Pick<TenantHandle, 'reload'> | undefined): Promise<void> {
  let applied = false;
  try {
    if (actor) await actor.reload(); // invalidates the cached state first
    else deps.tenantStates.invalidate(tenant);
    applied = true;
  } catch (err) {
    deps.log.error({ err, tenant, section }, 'tenant configuration change could not be applied to the local actor');
  }
  const event: ConfigChangedEvent = { tenant, section, at: new Date().toISOString(), ...(applied ? { origin: deps.events.origin } : {}) };
  try {
    await deps.events.publish(configChangedChannel(tenant, deps.config.redis.key_prefix), event);
  } catch (err) {
    deps.log.warn({ err, tenant, section }, 'config:changed event could not be published');
  }
}
