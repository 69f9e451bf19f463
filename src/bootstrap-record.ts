/**
 * What start-up provisioning did, remembered across starts (bootstrap.ts): that the `_platforms`
 * administrator was created, and which secret of the bootstrap client the configured value set.
 *
 * Kept in the home tenant's `tenant_config` rows under document names no configuration section
 * uses, as the custom claims document is (resources/custom-claims.ts): durable, on both backends,
 * no migration. Neither surface of the configuration sees them: loadOverrides reads only the
 * section names, and PUT .../config/:section accepts only those. Nothing secret is kept: the
 * client's entry holds a digest of the stored (keyed) hash, enough to tell whether the stored
 * secret is still the one the bootstrap wrote.
 */
import { createHash } from 'node:crypto';
import type { TenantConfigRepository } from './storage/types.js';

const ADMIN_DOCUMENT = 'bootstrap_admin';
const CLIENT_DOCUMENT = 'bootstrap_client';

/** The administrator was provisioned (created, or found already there) at this time. */
export interface AdminRecord {
  /** The user created or found; null when `_platforms` already had users of its own (an upgrade). */
  user_id: string | null;
  at: string;
}

/** The bootstrap client's secret as the bootstrap last wrote it. */
export interface ClientSecretRecord {
  client_id: string;
  /** secretDigest of the stored secret_hash. */
  secret: string;
  at: string;
}

type Repo = Pick<TenantConfigRepository, 'get' | 'put'>;

/** A digest of a stored secret hash: compares like the hash, useless for anything else. */
export function secretDigest(secretHash: string): string {
  return createHash('sha256').update(secretHash).digest('base64url');
}

export async function readAdminRecord(repo: Repo, tenant: string): Promise<AdminRecord | undefined> {
  const doc = (await repo.get(tenant))[ADMIN_DOCUMENT];
  return doc && typeof doc.at === 'string' ? { user_id: typeof doc.user_id === 'string' ? doc.user_id : null, at: doc.at } : undefined;
}

export async function writeAdminRecord(repo: Repo, tenant: string, userId: string | null): Promise<void> {
  await repo.put(tenant, ADMIN_DOCUMENT, { user_id: userId, at: new Date().toISOString() });
}

export async function readClientSecretRecord(repo: Repo, tenant: string): Promise<ClientSecretRecord | undefined> {
  const doc = (await repo.get(tenant))[CLIENT_DOCUMENT];
  if (!doc || typeof doc.client_id !== 'string' || typeof doc.secret !== 'string') return undefined;
  return { client_id: doc.client_id, secret: doc.secret, at: typeof doc.at === 'string' ? doc.at : '' };
}

export async function writeClientSecretRecord(repo: Repo, tenant: string, clientId: string, secretHash: string): Promise<void> {
  await repo.put(tenant, CLIENT_DOCUMENT, { client_id: clientId, secret: secretDigest(secretHash), at: new Date().toISOString() });
}
