/**
 * Single use of client assertion `jti`s. Rows are oidc-provider's own `ReplayDetection` model
 * (id = sha256(iss + jti) base64url, kept until the assertion's exp + clock tolerance), written to
 * the tenant's OIDC artefact storage, so an assertion seen by the actor's fast path is refused by
 * oidc-provider's endpoints and the other way round. An in-process memo in front makes the
 * check-and-set atomic for concurrent requests of this instance, which a storage find-then-write
 * alone is not.
 *
 * With Redis (several instances behind a balancer), the claim itself is one atomic
 * `SET <prefix>:<tenant>:jti:<client>:<jti> 1 NX PX <ms until exp + tolerance>` shared by every
 * instance: concurrent requests with one assertion on two instances cannot both pass the
 * find-then-write. Redis unreachable is a 503 (redisCall), never an accepted assertion.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import QuickLRU from 'quick-lru';
import { redisCall, tenantKeyPrefix } from '../storage/redis/client.js';
import type { OidcPayloadRepository, TenantId } from '../storage/types.js';

export const REPLAY_MODEL = 'ReplayDetection';

/** The Redis connection and first key segment (config redis.key_prefix) of a shared store. */
export interface SharedReplayOptions {
  readonly client: Redis;
  readonly prefix: string;
}

export class ReplayStore {
  // quick-lru grows as used (lru-cache preallocates `max` slots for every actor built); it keeps
  // between maxSize and 2 x maxSize of the most recent ids, never fewer than lru-cache did.
  private readonly seen = new QuickLRU<string, true>({ maxSize: 50_000 });

  constructor(
    private readonly repo: OidcPayloadRepository,
    private readonly tenant: TenantId,
    private readonly shared?: SharedReplayOptions,
  ) {}

  /** The cross-instance claim of (iss, jti); iss is a client_id, encoded so ':' cannot shift the jti. */
  private sharedKey(iss: string, jti: string): string | undefined {
    if (!this.shared) return undefined;
    return `${tenantKeyPrefix(this.shared.prefix, this.tenant)}jti:${encodeURIComponent(iss)}:${jti}`;
  }

  /** True the first time (iss, jti) is presented before `expiresAt` (seconds since the epoch). */
  async unique(iss: string, jti: string, expiresAt: number): Promise<boolean> {
    const id = createHash('sha256').update(`${iss}${jti}`).digest('base64url');
    const nowMs = Date.now();
    const now = Math.floor(nowMs / 1000);
    if (this.seen.has(id)) return false;
    this.seen.set(id, true, { maxAge: Math.max(1, expiresAt - now) * 1000 });
    let claimed: string | undefined;
    try {
      const key = this.sharedKey(iss, jti);
      if (this.shared && key !== undefined) {
        const { client } = this.shared;
        const ttlMs = Math.max(1000, expiresAt * 1000 - nowMs);
        // One round trip for both: the atomic claim, and oidc-provider's row (an assertion its own
        // endpoints accepted, which never takes the claim).
        const [set, found] = await Promise.allSettled([redisCall(() => client.set(key, '1', 'PX', ttlMs, 'NX')), this.repo.find(this.tenant, REPLAY_MODEL, id)]);
        if (set.status === 'rejected') throw set.reason;
        if (set.value === null) return false;
        claimed = key;
        if (found.status === 'rejected') throw found.reason;
        if (found.value) return false;
      } else if (await this.repo.find(this.tenant, REPLAY_MODEL, id)) {
        return false;
      }
      await this.repo.upsert(this.tenant, REPLAY_MODEL, id, { iat: now, exp: expiresAt, jti: id, iss, kind: REPLAY_MODEL }, expiresAt);
      return true;
    } catch (err) {
      // Not recorded: the assertion may be tried again once storage is back.
      this.seen.delete(id);
      // Our claim too (best effort: Redis may be what failed; the claim expires with the assertion).
      if (claimed !== undefined) await this.shared!.client.del(claimed).catch(() => undefined);
      throw err;
    }
  }
}
