/**
 * oidc-provider storage adapter bound to one tenant. Every actor gets its own class, so no two
 * tenants ever share artefacts (the stock in-memory adapter is one process-wide LRU).
 * The Client model is served from the clients repository instead (see client-metadata.ts).
 */
import { errors, type Adapter, type AdapterPayload } from 'oidc-provider';
import { isUnavailable } from '../errors.js';
import type { OidcPayloadRepository, TenantId } from '../storage/types.js';
import { revokeGrant } from './grant-reads.js';

/** Lifetime of a stored session without an account (see upsert). */
export const ANONYMOUS_SESSION_SECONDS = 3600;

/**
 * Storage that is down (Redis) is `temporarily_unavailable` with 503 for the client (RFC 6749
 * 4.1.2.1), not oidc-provider's generic server_error 500. The original error stays the cause.
 */
async function guard<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (!isUnavailable(err)) throw err;
    const e = new errors.TemporarilyUnavailable('the service is temporarily unavailable; retry shortly', { cause: err });
    e.status = e.statusCode = 503;
    throw e;
  }
}

export type ClientLoader = (clientId: string) => Promise<AdapterPayload | undefined>;

export function adapterFactory(repo: OidcPayloadRepository, tenant: TenantId, loadClient: ClientLoader) {
  return class TenantAdapter implements Adapter {
    constructor(readonly model: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      if (this.model === 'Client') return; // clients are written through the Management API only
      // Device codes outlive their expiry a little so a late poll gets expired_token, not invalid_grant.
      const grace = this.model === 'DeviceCode' ? 600 : 0;
      // A session nobody signed in to (the device page keeps its form secret in one for every
      // visitor) is kept for an hour, not the session lifetime: an anonymous GET must not buy
      // weeks of storage. Signing in saves it again with the full lifetime.
      const ttl = this.model === 'Session' && !payload.accountId && expiresIn ? Math.min(expiresIn, ANONYMOUS_SESSION_SECONDS) : expiresIn;
      const expiresAt = ttl ? Math.floor(Date.now() / 1000) + ttl + grace : null;
      await guard(repo.upsert(tenant, this.model, id, payload as Record<string, unknown>, expiresAt));
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      if (this.model === 'Client') return loadClient(id);
      const row = await guard(repo.find(tenant, this.model, id));
      if (!row) return undefined;
      return row.consumed ? { ...row.payload, consumed: true } : row.payload;
    }

    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      const row = await guard(repo.findByUserCode(tenant, this.model, userCode));
      if (!row) return undefined;
      return row.consumed ? { ...row.payload, consumed: true } : row.payload;
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      const row = await guard(repo.findByUid(tenant, this.model, uid));
      if (!row) return undefined;
      return row.consumed ? { ...row.payload, consumed: true } : row.payload;
    }

    /**
     * oidc-provider consumes a code, refresh token, device code or pushed request after finding it
     * unconsumed; two requests presenting it at the same moment both find it so. The store's
     * consume decides (types.ts): the one that did not consume it fails as a replay would, a grant's
     * artefact revoking its grant as oidc-provider's revoke helper does for a replay (the grant's
     * artefacts and the Grant itself, so tokens the other request writes after this are refused
     * too: every use of a token reads its grant) and answering invalid_grant, a pushed request
     * invalid_request_uri.
     */
    async consume(id: string): Promise<void> {
      if (await guard(repo.consume(tenant, this.model, id))) return;
      if (this.model === 'PushedAuthorizationRequest') throw new errors.InvalidRequestUri('request_uri is invalid, expired, or was already used');
      const row = await guard(repo.find(tenant, this.model, id));
      const grantId = row?.payload.grantId;
      if (typeof grantId === 'string' && grantId) await guard(revokeGrant(repo, tenant, grantId));
      throw new errors.InvalidGrant(`${this.model} already consumed`);
    }

    async destroy(id: string): Promise<void> {
      await guard(repo.destroy(tenant, this.model, id));
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await guard(repo.revokeByGrantId(tenant, grantId));
    }
  };
}
