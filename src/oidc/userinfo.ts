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
import { claimSourceFields, customClaimValues, type CustomClaim } from '../resources/custom-claims.js';
import type { ClientRecord, OidcPayloadRow, UserRecord } from '../storage/types.js';
import { accountClaims, canSignIn } from './accounts.js';
import { opaquePayloadValid } from './opaque-introspection.js';
import { pairwiseSubject, redirectSector } from './pairwise.js';

/** What oidc-provider was built with for this tenant (provider.ts, sign-in-config.ts). */
export interface UserinfoSetup {
  /** oidc-provider's `claims` setting: the claims each scope releases (provider.ts claimsConfiguration). */
  readonly claimsByScope: Readonly<Record<string, readonly string[]>>;
  /** The tenant's custom claims the account offers (resources/claims-provider.ts). */
  readonly customClaims: readonly CustomClaim[];
  /** The key of pairwise subjects (sign-in-config.ts pairwiseIdentifier). */
  readonly pairwiseKey: Buffer;
}

export interface UserinfoHost {
  /** The setup of the tenant's built oidc-provider; undefined while it is not built. */
  userinfoSetup(): UserinfoSetup | undefined;
  /** A stored oidc-provider artefact by id (the adapter's find, adapter.ts). */
  findArtefact(model: 'AccessToken' | 'Grant', id: string): Promise<OidcPayloadRow | undefined>;
  /** A stored session by its uid (the adapter's findByUid; its `jti` is not needed here). */
  findSessionByUid(uid: string): Promise<OidcPayloadRow | undefined>;
  loadClient(clientId: string): Promise<ClientRecord | undefined>;
  findTokenUser(sub: string): Promise<UserRecord | undefined>;
}

type Payload = Record<string, unknown>;

const FORM_TYPE = 'application/x-www-form-urlencoded';
/** oidc-provider's body limit (shared/selective_body.js). */
const BODY_LIMIT = 56 * 1024;

/**
 * The response headers oidc-provider sets on this path: noCache, then its CORS middleware for
 * userinfo (vary, allow-origin, expose-headers; no DPoP nonces are configured, so only the challenge).
 */
function headers(origin: string): Record<string, string> {
  return {
    'cache-control': 'no-store',
    vary: 'Origin',
    'access-control-allow-origin': origin,
    'access-control-expose-headers': 'WWW-Authenticate',
    'content-type': 'application/json; charset=utf-8',
  };
}

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

/** The CORS allow-origin oidc-provider would answer with, or undefined when it refuses the origin. */
function allowedOrigin(req: HttpRequest, client: ClientRecord): string | undefined {
  const origin = req.headers.origin;
  if (!origin) return '*';
  // provider.ts clientBasedCORS: the origins of the client's redirect and logout URIs.
  for (const uri of [...client.metadata.redirect_uris, ...client.metadata.post_logout_redirect_uris]) {
    try {
      if (new URL(uri).origin === origin) return origin;
    } catch {
      // not a URL with an origin
    }
  }
  return undefined;
}

/** Stored, of its kind, and valid as oidc-provider's find checks it; unexpired (stricter than its clock tolerance). */
function live(row: OidcPayloadRow | undefined, kind: string, now: number, ignoreExpiration = false): Payload | undefined {
  const p = row?.payload;
  if (!p || p.kind !== kind || !opaquePayloadValid(p, now)) return undefined;
  if (!ignoreExpiration && p.exp !== undefined && !((p.exp as number) > now)) return undefined;
  return p;
}

const isObject = (v: unknown): v is Payload => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

/** Grant#getOIDCScope: the granted OIDC scope without the rejected ones (openid stays). */
function grantedScope(grant: Payload): string | undefined {
  const openid = grant.openid;
  if (openid === undefined) return '';
  if (!isObject(openid) || (openid.scope !== undefined && typeof openid.scope !== 'string')) return undefined;
  if (!openid.scope) return '';
  if (grant.rejected === undefined) return openid.scope;
  const rejected = grant.rejected;
  if (!isObject(rejected) || rejected.rejected !== undefined) return undefined;
  const ro = rejected.openid;
  if (ro !== undefined && (!isObject(ro) || (ro.scope !== undefined && typeof ro.scope !== 'string'))) return undefined;
  const granted = new Set(openid.scope.split(' '));
  for (const s of ((ro?.scope as string | undefined) || '').split(' ')) if (s !== 'openid') granted.delete(s);
  return [...granted].join(' ');
}

/** Grant#getRejectedOIDCClaims. */
function rejectedClaims(grant: Payload): string[] | undefined {
  const rejected = grant.rejected;
  if (rejected === undefined) return [];
  if (!isObject(rejected) || rejected.rejected !== undefined) return undefined;
  const ro = rejected.openid;
  if (ro === undefined) return [];
  if (!isObject(ro)) return undefined;
  if (!ro.claims) return [];
  return strings(ro.claims) ? ro.claims : undefined;
}

/**
 * The session a token that expires with its session is bound to (read in parallel with the rest),
 * undefined when the token is not bound to one; null when it names none (declined).
 */
function boundSession(host: UserinfoHost, token: Payload): Promise<OidcPayloadRow | undefined> | null | undefined {
  if (!token.expiresWithSession) return undefined;
  return typeof token.sessionUid === 'string' ? host.findSessionByUid(token.sessionUid) : null;
}

/** oidc-provider's checkSessionBinding: a token that expires with its session needs that session, for this grant. */
function sessionHolds(token: Payload, row: OidcPayloadRow | undefined, now: number): boolean {
  if (!token.expiresWithSession) return true;
  const session = live(row, 'Session', now);
  if (!session || session.accountId !== token.accountId) return false;
  const auth = isObject(session.authorizations) ? session.authorizations[token.clientId as string] : undefined;
  return isObject(auth) && auth.grantId === token.grantId;
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
  const token = live(await host.findArtefact('AccessToken', value), 'AccessToken', now);
  // A user token for userinfo: no audience (a resource server's), no sender binding, no claims request.
  if (!token || token.aud !== undefined || token.jkt !== undefined || token['x5t#S256'] !== undefined || token.claims !== undefined) return undefined;
  const { clientId, accountId, grantId, scope } = token;
  if (typeof clientId !== 'string' || typeof accountId !== 'string' || typeof grantId !== 'string' || typeof scope !== 'string') return undefined;
  const scopes = new Set(scope.split(' '));
  if (!scopes.has('openid')) return undefined;

  const session = boundSession(host, token);
  if (session === null) return undefined;
  const [grantRow, client, user, sessionRow] = await Promise.all([
    host.findArtefact('Grant', grantId),
    host.loadClient(clientId),
    host.findTokenUser(accountId),
    session,
  ]);
  if (!sessionHolds(token, sessionRow, now) || !client?.active || !user || !canSignIn(user)) return undefined;
  const grant = live(grantRow, 'Grant', now, true);
  // Grant#isExpired is exp <= now; the grant must be this token's client's and account's.
  if (!grant || (grant.exp !== undefined && !((grant.exp as number) > now)) || grant.clientId !== clientId || grant.accountId !== accountId) return undefined;

  const origin = allowedOrigin(req, client);
  const pairwise = client.metadata.subject_type === 'pairwise';
  const sector = pairwise ? redirectSector(client.metadata) : undefined;
  const granted = grantedScope(grant);
  const rejected = rejectedClaims(grant);
  if (origin === undefined || (pairwise && sector === undefined) || granted === undefined || rejected === undefined) return undefined;

  // The scope the claims are released for: the grant's OIDC scope, in its order, that the token has.
  const released = granted.split(' ').filter((s) => scopes.has(s)).join(' ');
  const offered: Payload = {
    ...(setup.customClaims.length ? customClaimValues(setup.customClaims, claimSourceFields(user)) : {}),
    ...accountClaims(user, released),
    sub: user.id,
  };
  // helpers/claims.js: the claims of each released scope, in order, less the rejected ones.
  const mask = new Set<string>();
  for (const s of released.split(' ')) {
    if (Object.hasOwn(setup.claimsByScope, s)) for (const c of setup.claimsByScope[s]!) mask.add(c);
  }
  for (const c of rejected) mask.delete(c);
  const claims: Payload = {};
  for (const c of mask) if (Object.hasOwn(offered, c)) claims[c] = offered[c];
  if (pairwise && claims.sub) claims.sub = pairwiseSubject(setup.pairwiseKey, sector!, claims.sub as string);
  return { status: 200, headers: headers(origin), body: JSON.stringify(claims) };
}
