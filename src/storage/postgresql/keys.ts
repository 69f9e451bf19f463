import type { KeyRepository, SigningKeyRecord, TenantId } from '../types.js';
import { Params, json } from './sql.js';
import type { TenantDb } from './tenant-db.js';

type KeyChange = Parameters<KeyRepository['update']>[2];

const COLUMNS = 'kid, alg, use, status, promoted, public_jwk, private_sealed, created_at, rotated_at, expires_at, retire_requested';

/** Columns update() may set (the type allows these; anything else never reaches SQL). */
const UPDATABLE = new Set<string>(['use', 'status', 'promoted', 'created_at', 'rotated_at', 'expires_at', 'retire_requested']);

/** Names the advisory lock of key rotation (tenant-db.ts: two-key lock, this is the first key). */
const ROTATION_LOCK = 'svc.signing_keys';

export class PgKeys implements KeyRepository {
  constructor(private readonly db: TenantDb) {}

  async list(tenant: TenantId): Promise<SigningKeyRecord[]> {
    const { rows } = await this.db.statement<SigningKeyRecord>(tenant, `SELECT ${COLUMNS} FROM signing_keys WHERE tenant_id = $1 ORDER BY created_at DESC, kid`, [tenant]);
    return rows;
  }

  async insert(tenant: TenantId, keys: SigningKeyRecord[]): Promise<void> {
    if (!keys.length) return;
    // One multi-row INSERT: all keys or none.
    const p = new Params();
    const tuples = keys.map(
      (k) =>
        `(${[tenant, k.kid, k.alg, k.use, k.status, k.promoted, json(k.public_jwk), k.private_sealed, k.created_at, k.rotated_at, k.expires_at, k.retire_requested]
          .map((v) => p.add(v))
          .join(', ')})`,
    );
    await this.db.statement(tenant, `INSERT INTO signing_keys (tenant_id, ${COLUMNS}) VALUES ${tuples.join(', ')}`, p.values);
  }

  async update(tenant: TenantId, kid: string, change: KeyChange): Promise<void> {
    const p = new Params();
    const sets = Object.entries(change)
      .filter(([column, value]) => value !== undefined && UPDATABLE.has(column))
      .map(([column, value]) => `${column} = ${p.add(value)}`);
    if (!sets.length) return;
    await this.db.statement(tenant, `UPDATE signing_keys SET ${sets.join(', ')} WHERE tenant_id = ${p.add(tenant)} AND kid = ${p.add(kid)}`, p.values);
  }

  /**
   * Every repository call inside fn runs in this one transaction, which holds a per-tenant advisory
   * lock: rotations of one tenant by several instances run one after the other, and the re-check
   * inside fn sees what the previous one committed (src/keys/rotation.ts).
   */
  transaction<T>(tenant: TenantId, fn: () => Promise<T>): Promise<T> {
    return this.db.transaction(tenant, ROTATION_LOCK, fn);
  }
}
