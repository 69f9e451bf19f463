/** A real SQLite storage on a file in a temp dir, and record factories for repository tests. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStorage } from '../../src/storage/sqlite/index.js';
import type { AuditEntry, ClientMetadata, ClientRecord, SigningKeyRecord } from '../../src/storage/types.js';

export interface TempStorage {
  storage: SqliteStorage;
  path: string;
  /** Closes and opens the same file again (migrations run again on open). */
  reopen(): Promise<SqliteStorage>;
  close(): Promise<void>;
}

export function openTempStorage(): TempStorage {
  const dir = mkdtempSync(join(tmpdir(), 'svc-storage-'));
  const path = join(dir, 'nested', 'svc.db');
  const t: TempStorage = {
    storage: SqliteStorage.open(path),
    path,
    async reopen() {
      await t.storage.close();
      t.storage = SqliteStorage.open(path);
      return t.storage;
    },
    async close() {
      await t.storage.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return t;
}

export function clientMetadata(over: Partial<ClientMetadata> = {}): ClientMetadata {
  return {
    client_name: 'Client',
    application_type: 'web',
    redirect_uris: [],
    post_logout_redirect_uris: [],
    grant_types: ['client_credentials'],
    response_types: [],
    token_endpoint_auth_method: 'client_secret_basic',
    contacts: [],
    tags: [],
    require_pkce: false,
    first_party: false,
    ...over,
  };
}

export function clientRecord(id: string, over: Partial<Omit<ClientRecord, 'metadata'>> & { metadata?: Partial<ClientMetadata> } = {}): ClientRecord {
  const { metadata, ...rest } = over;
  return {
    client_id: id,
    secret_hash: '$sha256$hash',
    secret_sealed: null,
    secret_generation: 0,
    metadata: clientMetadata({ client_name: `Client ${id}`, ...metadata }),
    active: true,
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    last_used_at: null,
    tokens_issued: 0,
    ...rest,
  };
}

export function keyRecord(kid: string, over: Partial<SigningKeyRecord> = {}): SigningKeyRecord {
  return {
    kid,
    alg: 'RS256',
    use: 'sig',
    status: 'active',
    promoted: true,
    public_jwk: { kty: 'RSA', n: `n-${kid}`, e: 'AQAB', kid },
    private_sealed: `v1.sealed.${kid}`,
    created_at: '2026-01-01T00:00:00.000Z',
    rotated_at: null,
    expires_at: null,
    retire_requested: false,
    ...over,
  };
}

export function auditEntry(id: string, over: Partial<AuditEntry> = {}): AuditEntry {
  return {
    id,
    type: 'client.created',
    status: 'success',
    username: null,
    user_id: null,
    client_id: null,
    ip_address: '127.0.0.1',
    user_agent: 'vitest',
    tenant_id: 'default',
    details: {},
    timestamp: '2026-01-01T00:00:00.000Z',
    ...over,
  };
}

/** ISO timestamps one second apart from a base, for predictable ordering. */
export function at(second: number, base = Date.UTC(2026, 0, 1)): string {
  return new Date(base + second * 1000).toISOString();
}
