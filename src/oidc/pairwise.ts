/**
 * Pairwise subjects (OIDC Core 8.1): `sub` is the account id keyed per sector, so two sectors
 * cannot correlate a user. oidc-provider's pairwiseIdentifier (sign-in-config.ts) and the direct
 * userinfo path (userinfo.ts) both compute it here.
 */
import { createHmac } from 'node:crypto';
import type { Sealer } from '../keys/sealer.js';
import type { ClientMetadata, TenantId } from '../storage/types.js';

/** The tenant's pairwise key: every pairwise subject of the tenant is keyed with it. */
export function pairwiseKeyOf(sealer: Sealer, tenant: TenantId): Buffer {
  return sealer.derive(`pairwise:${tenant}`);
}

export function pairwiseSubject(key: Buffer, sector: string, accountId: string): string {
  return createHmac('sha256', key).update(`${sector}|${accountId}`).digest('base64url');
}

/**
 * The sector of a pairwise client as oidc-provider determines it (helpers/sector_identifier.js)
 * for the metadata client-metadata.ts gives it (never a sector_identifier_uri): the host of the
 * first redirect URI when the client has response types; undefined otherwise (oidc-provider takes
 * the jwks_uri host for device-flow clients, or refuses the client).
 */
export function redirectSector(metadata: Pick<ClientMetadata, 'redirect_uris' | 'response_types'>): string | undefined {
  // client-metadata.ts drops the response types of a client without redirect URIs.
  if (!metadata.redirect_uris.length || !metadata.response_types.length) return undefined;
  try {
    return new URL(metadata.redirect_uris[0]!).host;
  } catch {
    return undefined;
  }
}
