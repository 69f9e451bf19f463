/**
 * What oidc-provider 9 derives from stored artefacts and a client when it answers with a user's
 * claims or tokens, as pure functions over the stored payloads: whether an artefact is valid as its
 * find checks it (models/formats/opaque.js), its session binding (models/token_helpers.js), the
 * granted OIDC scope and rejected claims (models/grant.js), the claims a scope releases
 * (helpers/claims.js, with the pairwise subject) and the CORS origin its clientBasedCORS setting
 * allows (provider.ts).
 * Shared by the actor's direct userinfo (userinfo.ts) and user grants (user-tokens.ts), so both
 * release exactly what oidc-provider releases.
 */
import type { HttpRequest } from '../http/types.js';
import { claimSourceFields, customClaimValues, type CustomClaim } from '../resources/custom-claims.js';
import type { ClientRecord, OidcPayloadRow, UserWithoutSecrets } from '../storage/types.js';
import { accountClaims } from './accounts.js';
import { opaquePayloadValid } from './opaque-introspection.js';
import { pairwiseSubject } from './pairwise.js';

export type Payload = Record<string, unknown>;

/** What the tenant's oidc-provider was built with for claims (provider.ts, sign-in-config.ts). */
export interface ClaimSettings {
  /** oidc-provider's `claims` setting: the claims each scope releases (provider.ts claimsConfiguration). */
  readonly claimsByScope: Readonly<Record<string, readonly string[]>>;
  /** The tenant's custom claims the account offers (resources/claims-provider.ts). */
  readonly customClaims: readonly CustomClaim[];
  /** The key of pairwise subjects (sign-in-config.ts pairwiseIdentifier). */
  readonly pairwiseKey: Buffer;
}

export const isObject = (v: unknown): v is Payload => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

/** Grant#getOIDCScope: the granted OIDC scope without the rejected ones (openid stays); undefined if malformed. */
export function grantOidcScope(grant: Payload): string | undefined {
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

/** Grant#getRejectedOIDCClaims; undefined if malformed. */
export function grantRejectedClaims(grant: Payload): string[] | undefined {
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
 * The claims released for `scope` (helpers/claims.js): the claims of each scope in order, less the
 * rejected ones, picked from what the account offers; the pairwise `sub` for a pairwise `sector`.
 */
export function releasedClaims(settings: ClaimSettings, offered: Payload, scope: string, rejected: readonly string[], sector: string | undefined): Payload {
  const mask = new Set<string>();
  for (const s of scope.split(' ')) {
    if (Object.hasOwn(settings.claimsByScope, s)) for (const c of settings.claimsByScope[s]!) mask.add(c);
  }
  for (const c of rejected) mask.delete(c);
  const claims: Payload = {};
  for (const c of mask) if (Object.hasOwn(offered, c)) claims[c] = offered[c];
  if (sector !== undefined && claims.sub) claims.sub = pairwiseSubject(settings.pairwiseKey, sector, claims.sub as string);
  return claims;
}

/**
 * The CORS origin oidc-provider answers with (provider.ts clientBasedCORS: the origins of the
 * client's redirect and logout URIs; `*` without an Origin), or undefined when it refuses the origin.
 */
export function allowedOrigin(req: HttpRequest, client: ClientRecord): string | undefined {
  const origin = req.headers.origin;
  if (!origin) return '*';
  for (const uri of [...client.metadata.redirect_uris, ...client.metadata.post_logout_redirect_uris]) {
    try {
      if (new URL(uri).origin === origin) return origin;
    } catch {
      // not a URL with an origin
    }
  }
  return undefined;
}

/**
 * The headers oidc-provider answers userinfo and the token endpoint with: noCache, its CORS
 * middleware (vary, the allowed origin or `*`, WWW-Authenticate exposed; no DPoP nonces are
 * configured), then its JSON body. Browsers (SPAs, the admin console) read the answers by them.
 */
export function corsJsonHeaders(origin: string): Record<string, string> {
  return {
    'cache-control': 'no-store',
    vary: 'Origin',
    'access-control-allow-origin': origin,
    'access-control-expose-headers': 'WWW-Authenticate',
    'content-type': 'application/json; charset=utf-8',
  };
}

/** Stored, unconsumed, of its kind and valid as oidc-provider's find checks it; its expiry is `expired`'s. */
export function stored(row: OidcPayloadRow | undefined, kind: string, now: number): Payload | undefined {
  const p = row?.payload;
  if (!p || row.consumed || p.kind !== kind || !opaquePayloadValid(p, now)) return undefined;
  return p;
}

/** BaseModel#isExpired (exp <= now): stricter than find's clock tolerance, so a doubt is declined. */
export const expired = (p: Payload, now: number): boolean => typeof p.exp === 'number' && p.exp <= now;

/**
 * The read of the session a token that expires with its session is bound to (so callers can run
 * it beside their other reads), undefined when the token is not bound; null when it names none.
 */
export function boundSession(token: Payload, findByUid: (uid: string) => Promise<OidcPayloadRow | undefined>): Promise<OidcPayloadRow | undefined> | null | undefined {
  if (!token.expiresWithSession) return undefined;
  return typeof token.sessionUid === 'string' ? findByUid(token.sessionUid) : null;
}

/** checkSessionBinding: a token that expires with its session needs that session, live, of its account, holding its grant. */
export function sessionHolds(token: Payload, row: OidcPayloadRow | undefined, now: number): boolean {
  if (!token.expiresWithSession) return true;
  const session = stored(row, 'Session', now);
  if (!session || expired(session, now) || session.accountId !== token.accountId) return false;
  const auth = isObject(session.authorizations) ? session.authorizations[token.clientId as string] : undefined;
  return isObject(auth) && auth.grantId === token.grantId;
}

/** What the account offers for `scope` (accounts.ts findAccount's claims, with the tenant's custom claims): the claims mask then picks. */
export function accountOffer(settings: ClaimSettings, user: UserWithoutSecrets, scope: string): Payload {
  return {
    ...(settings.customClaims.length ? customClaimValues(settings.customClaims, claimSourceFields(user)) : {}),
    ...accountClaims(user, scope),
    sub: user.id,
  };
}
