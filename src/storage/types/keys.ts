/**
 * Storage interfaces: signing keys.
 * Imported through the index, ../types.ts, which also states the rules every repository follows.
 */
import type { TenantId } from './common.js';

export type KeyStatus = 'active' | 'expiring' | 'retired';

export interface SigningKeyRecord {
  kid: string;
  alg: string;
  use: 'sig';
  status: KeyStatus;
  promoted: boolean;
  public_jwk: Record<string, unknown>;
  /** AES-GCM sealed private JWK (JSON). */
  private_sealed: string;
  created_at: string;
  rotated_at: string | null;
  /** When an expiring key leaves the JWKS (end of the overlap window). */
  expires_at: string | null;
  /** Marked by DELETE /api/v1/jwks/:kid: retired at the next rotation or retire-expired. */
  retire_requested: boolean;
}

export interface KeyRepository {
  list(tenant: TenantId): Promise<SigningKeyRecord[]>;
  insert(tenant: TenantId, keys: SigningKeyRecord[]): Promise<void>;
  update(tenant: TenantId, kid: string, change: Partial<Omit<SigningKeyRecord, 'kid' | 'alg' | 'public_jwk' | 'private_sealed'>>): Promise<void>;
  /** Runs fn atomically (rotation replaces several rows at once). */
  transaction<T>(tenant: TenantId, fn: () => Promise<T>): Promise<T>;
}
