/**
 * oidc-provider's own outbound requests (a client's `jwks_uri` when oidc-provider authenticates the
 * client itself: introspection, revocation, the device and PAR endpoints, the other grants) go
 * through the product's outbound rule, as the actor's own fetch does (assertion-services.ts).
 * oidc-provider's default refuses every special-use address whatever the operator allowed
 * (`security.outbound.allow_private_networks`, loopback in development), so a client worked at one
 * endpoint and was refused at the next.
 */
import { outboundFetch, type OutboundPolicy } from '../outbound/index.js';

/** oidc-provider's timeout for its requests; the body cap is ours (oidc-provider sets none for jwks_uri). Also the actor's (assertion-services.ts). */
export const CLIENT_FETCH_TIMEOUT_MS = 2500;
export const CLIENT_FETCH_MAX_BYTES = 512 * 1024;
/** Statuses a fetch Response may not carry a body with. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

export function providerFetch(policy: OutboundPolicy): FetchLike {
  return async (url, init = {}) => {
    const method = (init.method ?? 'GET').toUpperCase();
    if (method !== 'GET' && method !== 'POST') throw new TypeError(`unsupported outbound method ${method}`);
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    const body = typeof init.body === 'string' ? init.body : undefined;
    const res = await outboundFetch(url, { method, headers, body, timeoutMs: CLIENT_FETCH_TIMEOUT_MS, maxBytes: CLIENT_FETCH_MAX_BYTES, policy });
    return new Response(NULL_BODY.has(res.status) ? null : new Uint8Array(res.body), { status: res.status, headers: res.headers });
  };
}
