/**
 * When a user write moves `updated_at`. OpenID Connect Core 5.1 defines the claim as the "time the
 * End-User's information was last updated", and relying parties re-sync profiles on it: the sign-in
 * stamp alone is not such an update (it moved `updated_at` on every sign-in).
 */
const BOOKKEEPING = new Set(['last_login_at']);

/** False when the change supplies only bookkeeping columns; an empty change still stamps (as before). */
export function stampsUpdatedAt(change: Record<string, unknown>): boolean {
  const supplied = Object.keys(change).filter((k) => change[k] !== undefined);
  return supplied.length === 0 || supplied.some((k) => !BOOKKEEPING.has(k));
}
