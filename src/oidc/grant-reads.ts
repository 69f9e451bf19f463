/**
 * A token and the Grant behind it, read together where the store can (issue 17). The direct token
 * paths (userinfo, the refresh and code grants) read a token, then its grant. On PostgreSQL
 * OidcPayloadRepository.findWithGrant answers both in one statement, a statement less per request
 * (each costs the database more than the read itself). SQLite reads the grant after the token, in
 * the same read transaction as the session and user; Redis after it too (as one script it saved
 * nothing and cost Redis more: docs/decisions.md). Also here: revokeGrant, the revocation of a
 * replayed code's or refresh token's grant, shared by the direct grants and the adapter.
 */
import type { OidcPayloadRepository, OidcPayloadRow, OidcRowWithGrant, TenantId } from '../storage/types.js';

/** The row of `id`, with the Grant it names when the store reads both at once. */
export async function findWithGrant(repo: OidcPayloadRepository, tenant: TenantId, model: string, id: string): Promise<OidcRowWithGrant | undefined> {
  if (repo.findWithGrant) return repo.findWithGrant(tenant, model, id);
  const row = await repo.find(tenant, model, id);
  return row && { row };
}

/**
 * The Grant `grantId`: the one read with the token (`readWith`, OidcRowWithGrant.grant) when it is
 * that grant (the store read it under the row's indexed grant id, which is the payload's unless the
 * row was altered), otherwise `read()`.
 */
export function grantFor(readWith: OidcRowWithGrant['grant'], grantId: string, read: () => Promise<OidcPayloadRow | undefined>): OidcPayloadRow | undefined | Promise<OidcPayloadRow | undefined> {
  return readWith?.id === grantId ? readWith.row : read();
}

/**
 * What oidc-provider's revoke helper does for a replayed code or refresh token (its default
 * revokeGrantPolicy: true at the token endpoint): every artefact of the grant, and the Grant.
 */
export async function revokeGrant(repo: OidcPayloadRepository, tenant: TenantId, grantId: string): Promise<void> {
  await Promise.all([repo.revokeByGrantId(tenant, grantId), repo.destroy(tenant, 'Grant', grantId)]);
}
