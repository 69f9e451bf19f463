/**
 * What one tenant actor needs to check client assertions itself: the key cache (secrets unsealed
 * with the tenant's sealer, jwks_uri fetched under the product's outbound rule) and the replay
 * store on the tenant's OIDC artefact storage (claims shared through Redis when it is configured).
 */
import type { AppContext } from '../context.js';
import { parseJson } from '../http/json.js';
import type { TenantId } from '../storage/types.js';
import { outboundFetch, outboundPolicy } from '../outbound/index.js';
import type { AssertionServices } from './client-assertion.js';
import { ClientKeyCache, freshUntilOf, type JwksFetchResult } from './client-keys.js';
import { CLIENT_FETCH_MAX_BYTES, CLIENT_FETCH_TIMEOUT_MS } from './provider-fetch.js';
import { ReplayStore } from './replay-store.js';


export function jwksFetcher(ctx: AppContext): (uri: string) => Promise<JwksFetchResult> {
  return async (uri) => {
    // oidc-provider refuses special-use addresses outright; the product's rule for every outbound
    // call applies instead (src/outbound: checked address, no redirects, size and time bounded).
    const res = await outboundFetch(uri, {
      headers: { accept: 'application/json' },
      timeoutMs: CLIENT_FETCH_TIMEOUT_MS,
      maxBytes: CLIENT_FETCH_MAX_BYTES,
      policy: outboundPolicy(ctx.config),
    });
    const freshUntil = freshUntilOf({ get: (name) => res.header(name) });
    const raw = res.body;
    let body: unknown;
    try {
      body = parseJson(raw.toString('utf8'));
    } catch {
      body = undefined;
    }
    return { status: res.status, body, freshUntil };
  };
}

export function assertionServices(ctx: AppContext, tenant: TenantId): AssertionServices {
  const keys = new ClientKeyCache({
    secretOf: (record) => (record.secret_sealed ? ctx.sealer.unseal(record.secret_sealed, `${tenant}:client:${record.client_id}`) : undefined),
    fetchJwks: jwksFetcher(ctx),
  });
  // With Redis, every instance claims a jti in one place (SET NX), not only in its own memory.
  const shared = ctx.redis ? { client: ctx.redis.client, prefix: ctx.config.redis.key_prefix } : undefined;
  return { keys, replay: new ReplayStore(ctx.storage.oidc, tenant, shared) };
}
