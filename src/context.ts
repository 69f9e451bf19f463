/** What every layer is handed at start: parsed config and the shared services. */
import type { AuditWriter } from './audit/audit-log.js';
import type { Config } from './config/index.js';
import type { EventBus } from './events/bus.js';
import type { Sealer } from './keys/sealer.js';
import type { Logger } from './log.js';
import type { Mailer } from './mail/mailer.js';
import type { Metrics } from './metrics/metrics.js';
import type { SessionsEnded } from './sessions/ended.js';
import type { RedisServices } from './storage/redis/index.js';
import type { Storage } from './storage/types.js';
import type { TenantRegistry } from './tenancy/registry.js';
import type { TenantResolver } from './tenancy/resolver.js';
import type { TenantStateCache } from './tenancy/state-cache.js';
import type { UsageRecorder } from './tenancy/usage.js';
import type { PasswordHasher } from './workers/password-hasher.js';

export interface AppContext {
  readonly config: Config;
  readonly log: Logger;
  readonly storage: Storage;
  readonly sealer: Sealer;
  readonly audit: AuditWriter;
  readonly resolver: TenantResolver;
  /** Which tenants exist and may serve (cached lookups of storage.tenants; `default` hard-coded). */
  readonly registry: TenantRegistry;
  /** Loaded tenant state (config, keys, clients) that actors are built from; see tenancy/state-cache.ts. */
  readonly tenantStates: TenantStateCache;
  /** Client usage counters, written behind once a second for every tenant at once. */
  readonly usage: UsageRecorder;
  readonly metrics: Metrics;
  /** In-process, or Redis pub/sub across instances (key rotation events). */
  readonly events: EventBus;
  /** Set when REDIS_URL is: the shared command connection and a ping covering the bus too. */
  readonly redis?: RedisServices;
  /** Argon2id hashing and verification on the worker pool. */
  readonly passwords: PasswordHasher;
  /** Outgoing e-mail, off the request path (src/mail). */
  readonly mailer: Mailer;
  /** Sessions the service ended, for their back-channel logouts (sessions/ended.ts; app.ts wires it). */
  readonly sessionsEnded: SessionsEnded;
}
