/** The shared storage contract (contract.ts) against the SQLite reference backend. */
import { SqliteStorage } from '../../src/storage/sqlite/index.js';
import { openTempStorage } from '../helpers/storage.js';
import { describeStorageContract } from './contract.js';

describeStorageContract('sqlite', async () => {
  const temp = openTempStorage();
  const db = () => temp.storage.db;
  return {
    storage: temp.storage,
    openAnother: async () => SqliteStorage.open(temp.path),
    probe: {
      expiredPayloads: async (now) => db().prepare('SELECT count(*) FROM oidc_payloads WHERE expires_at <= ?').pluck().get(now) as number,
      accountTokenHashes: async (tenant) => db().prepare('SELECT token_hash FROM account_tokens WHERE tenant_id = ? ORDER BY token_hash').pluck().all(tenant) as string[],
      loginAttemptTimes: async (tenant, key) => db().prepare('SELECT at FROM login_attempts WHERE tenant_id = ? AND key = ? ORDER BY at').pluck().all(tenant, key) as string[],
    },
    close: () => temp.close(),
  };
});
