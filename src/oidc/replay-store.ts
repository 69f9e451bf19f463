/**
 * Single use of client assertion `jti`s. Rows are oidc-provider's own `ReplayDetection` model
 * (id = sha256(iss + jti) base64url, kept until the assertion's exp + clock tolerance), written to
 * the tenant's OIDC artefact storage, so an assertion seen by the actor's fast path is refused by
 * oidc-provider's endpoints and by other instances, and the other way round. An in-process memo in
 * front makes the check-and-set atomic for concurrent requests of this instance, which a storage
 * find-then-write alone is not.
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { OidcPayloadRepository, TenantId } from '../storage/types.js';

export const REPLAY_MODEL = 'ReplayDetection';

export class ReplayStore {
  private readonly seen = new LRUCache<string, true>({ max: 50_000, ttlAutopurge: false });

  constructor(
    private readonly repo: OidcPayloadRepository,
    private readonly tenant: TenantId,
  ) {}

  /** True the first time (iss, jti) is presented before `expiresAt` (seconds since the epoch). */
  async unique(iss: string, jti: string, expiresAt: number): Promise<boolean> {
    const id = createHash('sha256').update(`${iss}${jti}`).digest('base64url');
    const now = Math.floor(Date.now() / 1000);
    if (this.seen.has(id)) return false;
    this.seen.set(id, true, { ttl: Math.max(1, expiresAt - now) * 1000 });
    try {
      if (await this.repo.find(this.tenant, REPLAY_MODEL, id)) return false;
      await this.repo.upsert(this.tenant, REPLAY_MODEL, id, { iat: now, exp: expiresAt, jti: id, iss, kind: REPLAY_MODEL }, expiresAt);
      return true;
    } catch (err) {
      // Not recorded: the assertion may be tried again once storage is back.
      this.seen.delete(id);
      throw err;
    }
  }
}
