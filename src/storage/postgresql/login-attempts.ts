import type { LoginAttemptRepository, TenantId } from '../types.js';
import type { TenantDb } from './tenant-db.js';

/**
 * The brute-force guard counts failures per key. Prune, insert and count run in one transaction
 * under an advisory lock on the key: without it, two failures arriving together under READ
 * COMMITTED could both count N instead of N and N+1 and let an attacker past the limit (SQLite gets
 * the same effect from its single writer).
 */
const ATTEMPT_LOCK = "SELECT pg_advisory_xact_lock(hashtext('svc.login_attempts'), hashtext($1 || ' ' || $2))";

export class PgLoginAttempts implements LoginAttemptRepository {
  constructor(private readonly db: TenantDb) {}

  recordFailure(tenant: TenantId, key: string, atIso: string, sinceIso: string): Promise<number> {
    return this.db.withTenant(tenant, async (q) => {
      await q(ATTEMPT_LOCK, [tenant, key]);
      await q('DELETE FROM login_attempts WHERE tenant_id = $1 AND key = $2 AND at < $3', [tenant, key, sinceIso]);
      await q('INSERT INTO login_attempts (tenant_id, key, at) VALUES ($1, $2, $3)', [tenant, key, atIso]);
      const { rows } = await q<{ n: number }>('SELECT count(*) AS n FROM login_attempts WHERE tenant_id = $1 AND key = $2 AND at >= $3', [tenant, key, sinceIso]);
      return rows[0]!.n;
    });
  }

  async clear(tenant: TenantId, key: string): Promise<void> {
    await this.db.statement(tenant, 'DELETE FROM login_attempts WHERE tenant_id = $1 AND key = $2', [tenant, key]);
  }
}
