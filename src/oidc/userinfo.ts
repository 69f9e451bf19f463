/**
 * The userinfo endpoint answered in the actor (issue 17), the way the client_credentials and
 * introspection fast paths are (access-tokens.ts): no Koa context, no model instances, no error
 * objects. It serves one case only, the common one, and serves it exactly as oidc-provider 9
 * (lib/actions/userinfo.js, shared/access_token.js, helpers/claims.js) would: an opaque user
 * access token for userinfo (no audience), sent as `Authorization: Bearer`, with a live grant,
 * session (when the token expires with it), client and account, answered as plain JSON.
 *
 * Everything else returns undefined and oidc-provider answers: every error (so its status,
 * WWW-Authenticate challenge and body stay its own), DPoP- or mTLS-bound tokens, a token in the
 * body or the query, a `scope` parameter, the `claims` request parameter, an origin the client's
 * CORS rule refuses, unusual bodies, storage failures, and a tenant whose oidc-provider is not
 * built yet (its claim settings are taken from the build, so both answers always agree).
 */
import { parse as parseQuery } from 'node:querystring';
import { bearerToken } from '../http/bearer.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import type { ClientRecord, OidcPayloadRow, OidcRowWithGrant, Storage, UserWithoutSecrets } from '../storage/types.js';
import { canSignIn } from './accounts.js';
import {
  accountOffer,
  allowedOrigin,
  boundSession,
  corsJsonHeaders,
  expired,
  grantOidcScope,
  grantRejectedClaims,
  releasedClaims,
  sessionHolds,
  stored,
  type ClaimSettings,
} from './grant-claims.js';
import { grantFor } from './grant-reads.js';
import { redirectSector } from './pairwise.js';

/** What the direct userinfo path needs of the tenant's oidc-provider build: its claim settings. */
export type UserinfoSetup = ClaimSettings;

export interface UserinfoHost {
  /** The setup of the tenant's built oidc-provider; undefined while it is not built. */
  userinfoSetup(): UserinfoSetup | undefined;
  /** A stored oidc-provider artefact by id (the adapter's find, adapter.ts). */
  findArtefact(model: 'AccessToken' | 'Grant', id: string): Promise<OidcPayloadRow | undefined>;
  /** An access token, with its grant where the store reads both at once (grant-reads.ts). */
  findAccessToken(id: string): Promise<OidcRowWithGrant | undefined>;
  /** A stored session by its uid (the adapter's findByUid; its `jti` is not needed here). */
  findSessionByUid(uid: string): Promise<OidcPayloadRow | undefined>;
  loadClient(clientId: string): Promise<ClientRecord | undefined>;
  findTokenUser(sub: string): Promise<UserWithoutSecrets | undefined>;
  readTogether: Storage['readTogether'];
}


const FORM_TYPE = 'application/x-www-form-urlencoded';
/** oidc-provider's body limit (shared/selective_body.js). */
const BODY_LIMIT = 56 * 1024;

/**
 * The bearer token of a request this path serves, or undefined: GET or POST, no query string
 * (access_token, scope), no DPoP proof, exactly `Bearer <token>` (oidc-provider splits the header
 * on one space), and a POST body oidc-provider would read as empty of access_token and scope.
 */
function servedToken(req: HttpRequest): string | undefined {
  if (req.rawQuery !== '' || req.headers.dpop !== undefined) return undefined;
  const token = bearerToken(req);
  if (!token || req.headers.authorization!.length !== token.length + 7) return undefined;
  if (req.method === 'POST' && !bodyHarmless(req)) return undefined;
  return token;
}

/** A POST body that carries neither access_token nor scope, read as oidc-provider reads it (selective_body.js). */
function bodyHarmless(req: HttpRequest): boolean {
  const type = req.headers['content-type'];
  if (type === undefined || type === '') return req.body.length === 0;
  const [mime, ...params] = type.split(';').map((p) => p.trim().toLowerCase());
  if (mime !== FORM_TYPE || params.some((p) => p !== 'charset=utf-8')) return false;
  // Koa reads a body only with a length; without one oidc-provider refuses the content type.
  if (req.headers['content-length'] === undefined || req.body.length > BODY_LIMIT) return false;
  const text = params.length ? new TextDecoder('utf-8').decode(req.body) : req.body.toString();
  const form = parseQuery(text);
  return !Object.hasOwn(form, 'access_token') && !Object.hasOwn(form, 'scope');
}

/**
 * The userinfo answer for `req`, or undefined to let oidc-provider answer. Any error on the way
 * (storage down, ...) declines too: oidc-provider then meets the same condition and answers it.
 */
export async function userinfo(host: UserinfoHost, req: HttpRequest): Promise<HttpResponse | undefined> {
  const setup = host.userinfoSetup();
  const value = setup && servedToken(req);
  if (!setup || !value) return undefined;
  try {
    return await answer(host, setup, req, value);
  } catch {
    return undefined;
  }
}

async function answer(host: UserinfoHost, setup: UserinfoSetup, req: HttpRequest, value: string): Promise<HttpResponse | undefined> {
  const now = Math.floor(Date.now() / 1000);
  const found = await host.findAccessToken(value);
  const token = stored(found?.row, 'AccessToken', now);
  const grantReadWith = found?.grant;
  // A user token for userinfo: no audience (a resource server's), no sender binding, no claims request.
  if (!token || expired(token, now) || token.aud !== undefined || token.jkt !== undefined || token['x5t#S256'] !== undefined || token.claims !== undefined) return undefined;
  const { clientId, accountId, grantId, scope } = token;
  if (typeof clientId !== 'string' || typeof accountId !== 'string' || typeof grantId !== 'string' || typeof scope !== 'string') return undefined;
  const scopes = new Set(scope.split(' '));
  if (!scopes.has('openid')) return undefined;

  // The session, grant, client and user are read at once, in one read of the storage where it can.
  const reads = host.readTogether(() => {
    const session = boundSession(token, (uid) => host.findSessionByUid(uid));
    if (session === null) return null;
    return Promise.all([grantFor(grantReadWith, grantId, () => host.findArtefact('Grant', grantId)), host.loadClient(clientId), host.findTokenUser(accountId), session]);
  });
  if (reads === null) return undefined;
  const [grantRow, client, user, sessionRow] = await reads;
  if (!sessionHolds(token, sessionRow, now) || !client?.active || !user || !canSignIn(user)) return undefined;
  const grant = stored(grantRow, 'Grant', now);
  // The grant must be live, and this token's client's and account's.
  if (!grant || expired(grant, now) || grant.clientId !== clientId || grant.accountId !== accountId) return undefined;

  const origin = allowedOrigin(req, client);
  const pairwise = client.metadata.subject_type === 'pairwise';
  const sector = pairwise ? redirectSector(client.metadata) : undefined;
  const granted = grantOidcScope(grant);
  const rejected = grantRejectedClaims(grant);
  if (origin === undefined || (pairwise && sector === undefined) || granted === undefined || rejected === undefined) return undefined;

  // The scope the claims are released for: the grant's OIDC scope, in its order, that the token has.
  const released = granted.split(' ').filter((s) => scopes.has(s)).join(' ');
  const claims = releasedClaims(setup, accountOffer(setup, user, released), released, rejected, sector);
  return { status: 200, headers: corsJsonHeaders(origin), body: JSON.stringify(claims) };
}
