/**
 * The write step of the refresh grant and the code exchange (issue 17): the presented refresh token
 * or code is consumed and the new tokens are written, and nothing is answered unless all of it
 * succeeded. Every store does it as one atomic step (OidcPayloadRepository.consumeAndUpsert: a
 * Redis script, one PostgreSQL statement, one write of SQLite's group commit) and writes the new
 * tokens only when the consume was this call's; a failure stores neither, so the client's retry
 * finds its token unspent. A store without the step gets the consume and the upserts side by side,
 * and tokens written beside a failed consume are never handed out: the caller revokes the grant,
 * which takes them too.
 */
import type { OidcPayloadRepository, OidcUpsert, TenantId } from '../storage/types.js';

/** True when this call consumed `used` (and `rows` are written). */
export async function consumeAndUpsert(repo: OidcPayloadRepository, tenant: TenantId, used: { model: string; id: string }, rows: OidcUpsert[]): Promise<boolean> {
  if (repo.consumeAndUpsert) return repo.consumeAndUpsert(tenant, used, rows);
  return consumeBesideUpserts(repo, tenant, used, rows);
}

/** Every row written before the answer: in one step where the store can (upsertMany), else side by side. */
export async function upsertTogether(repo: OidcPayloadRepository, tenant: TenantId, rows: OidcUpsert[]): Promise<void> {
  if (repo.upsertMany) return repo.upsertMany(tenant, rows);
  await Promise.all(rows.map((r) => repo.upsert(tenant, r.model, r.id, r.payload, r.expiresAt)));
}

/** The consume and the upserts side by side, through the repository's own methods. */
export async function consumeBesideUpserts(repo: OidcPayloadRepository, tenant: TenantId, used: { model: string; id: string }, rows: OidcUpsert[]): Promise<boolean> {
  const [consumed] = await Promise.all([repo.consume(tenant, used.model, used.id), upsertTogether(repo, tenant, rows)]);
  return consumed;
}
