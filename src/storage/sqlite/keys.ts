import type { KeyRepository, SigningKeyRecord, TenantId } from '../types.js';
import { prepared, type Db } from './db.js';

interface Row {
  kid: string;
  alg: string;
  use: string;
  status: SigningKeyRecord['status'];
  promoted: number;
  public_jwk: string;
  private_sealed: string;
  created_at: string;
  rotated_at: string | null;
  expires_at: string | null;
  retire_requested: number;
}

function toRecord(r: Row): SigningKeyRecord {
  return {
    kid: r.kid,
    alg: r.alg,
    use: 'sig',
    status: r.status,
    promoted: r.promoted === 1,
    public_jwk: JSON.parse(r.public_jwk) as Record<string, unknown>,
    private_sealed: r.private_sealed,
    created_at: r.created_at,
    rotated_at: r.rotated_at,
    expires_at: r.expires_at,
    retire_requested: r.retire_requested === 1,
  };
}

const BOOL_COLUMNS = new Set(['promoted', 'retire_requested']);

export class SqliteKeys implements KeyRepository {
  private readonly listStmt;
  private readonly insertStmt;

  constructor(private readonly db: Db) {
    this.listStmt = db.prepare<[string], Row>('SELECT * FROM signing_keys WHERE tenant_id = ? ORDER BY created_at DESC, kid');
    this.insertStmt = db.prepare(
      `INSERT INTO signing_keys (tenant_id, kid, alg, use, status, promoted, public_jwk, private_sealed, created_at, rotated_at, expires_at, retire_requested)
       VALUES (@tenant, @kid, @alg, @use, @status, @promoted, @public_jwk, @private_sealed, @created_at, @rotated_at, @expires_at, @retire_requested)`,
    );
  }

  async list(tenant: TenantId): Promise<SigningKeyRecord[]> {
    return this.listStmt.all(tenant).map(toRecord);
  }

  async insert(tenant: TenantId, keys: SigningKeyRecord[]): Promise<void> {
    this.db.transaction(() => {
      for (const k of keys) {
        this.insertStmt.run({
          tenant,
          ...k,
          promoted: k.promoted ? 1 : 0,
          retire_requested: k.retire_requested ? 1 : 0,
          public_jwk: JSON.stringify(k.public_jwk),
        });
      }
    })();
  }

  async update(tenant: TenantId, kid: string, change: Parameters<KeyRepository['update']>[2]): Promise<void> {
    const entries = Object.entries(change).filter(([, v]) => v !== undefined);
    if (!entries.length) return;
    const params: Record<string, unknown> = { tenant, kid };
    const sets = entries.map(([k, v]) => {
      params[k] = BOOL_COLUMNS.has(k) ? (v ? 1 : 0) : v;
      return `${k} = @${k}`;
    });
    prepared(this.db, `UPDATE signing_keys SET ${sets.join(', ')} WHERE tenant_id = @tenant AND kid = @kid`).run(params);
  }

  async transaction<T>(_tenant: TenantId, fn: () => Promise<T>): Promise<T> {
    // better-sqlite3 transactions are synchronous; the repository calls inside fn are synchronous
    // underneath, so BEGIN/COMMIT around the awaited function keeps them in one transaction.
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = await fn();
      this.db.exec('COMMIT');
      return result;
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
  }
}
