/**
 * The shared services of one process, built from the parsed config: storage, the sealer, the event
 * bus (Redis when configured), audit, mail, the tenant registry and state cache, metrics and the
 * password hasher. `startApp` (app.ts) builds the HTTP side on top of it; the `svc` commands use
 * it alone, so a command loads neither oidc-provider nor the HTTP server (a command starts in about
 * half the time).
 */
import { AuditLog } from './audit/audit-log.js';
import { setSecretHashKey } from './clients/secrets.js';
import { multiTenancyProblem, type Config } from './config/index.js';
import type { AppContext } from './context.js';
import { InProcessBus } from './events/bus.js';
import { RedisEventBus } from './events/redis-bus.js';
import { Sealer, loadEncryptionKey } from './keys/sealer.js';
import { createLogger, type Logger } from './log.js';
import { Mailer } from './mail/mailer.js';
import { Metrics } from './metrics/metrics.js';
import { SessionsEnded } from './sessions/ended.js';
import { openStorage, withOidcRepository } from './storage/open.js';
import { openRedis } from './storage/redis/index.js';
import type { Storage } from './storage/types.js';
import { TenantRegistry } from './tenancy/registry.js';
import { defaultTenantServes, TenantResolver } from './tenancy/resolver.js';
import { TenantStateCache } from './tenancy/state-cache.js';
import { UsageRecorder } from './tenancy/usage.js';
import { PasswordHasher } from './workers/password-hasher.js';

export interface ContextOptions {
  log?: Logger;
  storage?: Storage;
}

export async function buildContext(config: Config, opts: ContextOptions = {}): Promise<AppContext> {
  // loadConfig refuses this already; a config built another way (or a storage handed in) is checked too.
  const refusal = multiTenancyProblem({ ...config, storage: { ...config.storage, adapter: opts.storage?.kind ?? config.storage.adapter } });
  if (refusal) throw new Error(refusal);
  const log = opts.log ?? createLogger(config);
  const baseStorage = opts.storage ?? (await openStorage(config, log));
  const sealer = new Sealer(loadEncryptionKey(config, log));
  setSecretHashKey(sealer.derive('client-secret-hash'));
  const metrics = new Metrics(config);
  const onBusError = (err: unknown, channel: string) => log.error({ err, channel }, 'event subscriber failed');
  // With REDIS_URL: the event bus and oidc-provider's short-lived artefacts live in Redis.
  const url = config.redis.url;
  const redisBus = url ? new RedisEventBus(url, onBusError) : undefined;
  const events = redisBus ?? new InProcessBus(onBusError);
  const redis = url && redisBus ? await openRedis(url, { log, probes: [() => redisBus.ping()], prefix: config.redis.key_prefix }) : undefined;
  // So that a rotation at start-up is announced (publishing never queues while disconnected).
  if (redisBus && !(await redisBus.ready(1000))) log.warn('redis event bus is not connected yet');
  const storage = redis ? withOidcRepository(baseStorage, redis.oidc) : baseStorage;
  if (storage.userCacheStats) metrics.watchUserCache(() => storage.userCacheStats!());
  const cache = config.multi_tenancy.tenant_cache;
  const audit = new AuditLog(storage, log);
  return {
    config,
    log,
    storage,
    sealer,
    audit,
    mailer: new Mailer(log, audit),
    resolver: new TenantResolver(config),
    registry: new TenantRegistry({ repo: storage.tenants, events, log, prefix: config.redis.key_prefix, defaultServes: defaultTenantServes(config) }),
    tenantStates: new TenantStateCache({ config, storage, sealer, events, log, audit }, { maxSize: cache.max_size, ttlMs: cache.ttl_ms }),
    usage: new UsageRecorder(storage.clients, log),
    metrics,
    events,
    redis,
    passwords: PasswordHasher.fromConfig(config, metrics),
    sessionsEnded: new SessionsEnded(),
  };
}
