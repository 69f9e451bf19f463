/**
 * A token and the Grant behind it, read together where the store can (issue 17). The direct token
 * paths (userinfo, the refresh and code grants) read a token, then its grant. On PostgreSQL
 * OidcPayloadRepository.findWithGrant answers both in one statement, a statement less per request
 * (each costs the database more than the read itself). SQLite reads the grant after the token, in
 * the same read transaction as the session and user; Redis after it too (as one script it saved
 * nothing and cost Redis more: docs/decisions.md).
 */
import type { OidcPayloadRepository, OidcPayloadRow, OidcRowWithGrant, TenantId } from '../storage/types.js';

/** The row of `id`, with the Grant it names when the store reads both at once. */
export async function findWithGrant(repo: OidcPayloadRepository, tenant: TenantId, model: string, id: string): Promise<OidcRowWithGrant | undefined> {
  if (repo.findWithGrant) return repo.findWithGrant(tenant, model, id);
  const row = await repo.find(tenant, model, id);
  return row && { row };
}

/**
 * The Grant `grantId`: the one read with the token when it is that grant (the store indexed the
 * token under the payload's grantId, so it is, unless the payload changed between two reads of a
 * hostile writer), otherwise `read()`.
 */
export function grantFor(found: OidcRowWithGrant, grantId: string, read: () => Promise<OidcPayloadRow | undefined>): OidcPayloadRow | undefined | Promise<OidcPayloadRow | undefined> {
  return found.grant?.id === grantId ? found.grant.row : read();
}
