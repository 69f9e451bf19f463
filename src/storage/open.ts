/** Opens the configured storage backend. */
import { resolve } from 'node:path';
import type { Config } from '../config/index.js';
import { postgresFailed, sqliteOpenFailed } from '../startup-errors.js';
import type { PgLog } from './postgresql/index.js';
import { SqliteStorage } from './sqlite/index.js';
import type { OidcPayloadRepository, Storage } from './types.js';

/** `log` receives the PostgreSQL backend's slow-statement warnings and connection errors. */
export async function openStorage(config: Config, log?: PgLog): Promise<Storage> {
  if (config.storage.adapter === 'sqlite') {
    const path = config.storage.sqlite.path;
    try {
      return SqliteStorage.open(path, log);
    } catch (err) {
      // Issue 18 item 11: name the file and the setting, not only "unable to open database file".
      throw sqliteOpenFailed(path, path === ':memory:' ? path : resolve(path), err);
    }
  }
  const { url, ...settings } = config.storage.postgresql;
  // loadConfig already refuses postgresql without a URL; this keeps the type honest.
  if (!url) throw new Error('STORAGE_POSTGRESQL_URL is required when STORAGE_ADAPTER=postgresql');
  // Loaded only for this backend (issue 17): `pg` and the repositories are ~15 MB resident and
  // ~0.25 s of start-up that an SQLite instance never needs.
  const { PgStorage } = await import('./postgresql/index.js');
  try {
    // Multi-tenant mode: the writes of registered tenants are guarded against their delete
    // (tenant-db.ts); a single tenant has no registry to check.
    return await PgStorage.open({ url, ...settings }, log, { guardTenants: config.multi_tenancy.enabled });
  } catch (err) {
    throw postgresFailed(url, err);
  }
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
    // The artefacts are Redis's now: the SQL reads left in a group are too few to share a transaction.
    readTogether: (reads) => reads(),
    ping: () => storage.ping(),
    close: () => storage.close(),
    ...(storage.userCacheStats ? { userCacheStats: () => storage.userCacheStats!() } : {}),
  };
}
