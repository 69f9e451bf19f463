/** What every layer is handed at start: parsed config and the shared services. */
import type { Configuration } from 'oidc-provider';
import type { AuditLog } from './audit/audit-log.js';
import type { Config } from './config/index.js';
import type { Sealer } from './keys/sealer.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics/metrics.js';
import type { Storage } from './storage/types.js';
import type { TenantActor } from './tenancy/actor.js';
import type { TenantResolver } from './tenancy/resolver.js';

export interface AppContext {
  readonly config: Config;
  readonly log: Logger;
  readonly storage: Storage;
  readonly sealer: Sealer;
  readonly audit: AuditLog;
  readonly resolver: TenantResolver;
  readonly metrics: Metrics;
  /** Hook for features that add to each tenant's oidc-provider configuration (sign-in, logout...). */
  extendProvider?: (conf: Configuration, actor: TenantActor) => void;
}
