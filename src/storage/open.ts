/** Opens the configured storage backend. */
import type { Config } from '../config/index.js';
import { PgStorage, type PgLog } from './postgresql/index.js';
import { SqliteStorage } from './sqlite/index.js';
import type { OidcPayloadRepository, Storage } from './types.js';

/** `log` receives the PostgreSQL backend's slow-statement warnings and connection errors. */
export async function openStorage(config: Config, log?: PgLog): Promise<Storage> {
  if (config.storage.adapter === 'sqlite') return SqliteStorage.open(config.storage.sqlite.path);
  const { url, ...settings } = config.storage.postgresql;
  // loadConfig already refuses postgresql without a URL; this keeps the type honest.
  if (!url) throw new Error('STORAGE_POSTGRESQL_URL is required when STORAGE_ADAPTER=postgresql');
  return PgStorage.open({ url, ...settings }, log);
}

/**
 * The same storage with another OIDC artefact repository (REDIS_URL: short-lived artefacts live in
 * Redis, everything else stays in the SQL backend). ping and close stay the SQL backend's.
 */
export function withOidcRepository(storage: Storage, oidc: OidcPayloadRepository): Storage {
  return {
    kind: storage.kind,
    clients: storage.clients,
    oidc,
    keys: storage.keys,
    audit: storage.audit,
    users: storage.users,
    loginAttempts: storage.loginAttempts,
    registrationTokens: storage.registrationTokens,
    accountTokens: storage.accountTokens,
    userPreferences: storage.userPreferences,
    tenants: storage.tenants,
    tenantConfig: storage.tenantConfig,
    socialIdentities: storage.socialIdentities,
    webauthn: storage.webauthn,
    resources: storage.resources,
    ping: () => storage.ping(),
    close: () => storage.close(),
  };
}
