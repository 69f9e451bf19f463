/**
 * The refresh_token grant answered in the actor (issue 17), the way client_credentials and
 * userinfo are (access-tokens.ts, userinfo.ts): no Koa context, no model instances. It serves the
 * common case only and serves it as oidc-provider 9 would (lib/actions/grants/refresh_token.js,
 * helpers/grant_common.js, models/id_token.js, helpers/claims.js, models/formats/opaque.js), with
 * this product's configuration (provider.ts): rotation on every use, an opaque access token for
 * userinfo, an ID token when `openid` was granted.
 *
 * Served: a form with exactly grant_type, refresh_token and the client's authentication, no DPoP
 * or attestation headers; a stored refresh token that is live, unconsumed, of this client, bound
 * to no key (`jkt`, `x5t#S256`, `attestationJkt`), without a resource, authorization details or
 * `claims` request; its session alive and holding the grant when it expires with the session; a
 * live grant of this client and account; a user who may sign in; a client allowed the grant whose
 * ID token is signed with one of the tenant's keys (never HS*, never encrypted).
 *
 * Everything else returns undefined before anything is written, and oidc-provider answers: every
 * refusal (so status, error and description stay its own: invalid_grant for a consumed token,
 * which also revokes the grant), a `scope` or `resource` parameter, a tenant whose oidc-provider
 * is not built yet (the claim settings come from that build, so both answers always agree).
 * Client authentication runs only once the request is known to be served, so a client assertion
 * is never spent here and then presented again to oidc-provider; its failures are the shared
 * client-auth.ts answers.
 *
 * Crash safety is oidc-provider's: the old token is consumed, then the new refresh and access
 * tokens are written, each awaited before the answer leaves.
 */
import { randomBytes } from 'node:crypto';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { signJwt } from '../keys/jwt.js';
import { claimSourceFields, customClaimValues } from '../resources/custom-claims.js';
import type { ClientRecord, OidcPayloadRepository, OidcPayloadRow, UserRecord } from '../storage/types.js';
import type { SigningAlg } from '../config/schema.js';
import type { TokenContext } from './access-tokens.js';
import { accountClaims, canSignIn } from './accounts.js';
import { authenticateClient } from './client-auth.js';
import { parseForm } from './form.js';
import { opaquePayloadValid } from './opaque-introspection.js';
import { pairwiseSubject, redirectSector } from './pairwise.js';
import { OIDC_ROUTES } from './provider.js';
import type { UserinfoSetup } from './userinfo.js';

/** What the tenant's oidc-provider build adds for this path (tenancy/actor.ts buildProvider). */
export interface RefreshSetup extends UserinfoSetup {
  /** The build's storage, with refresh tokens and sessions under keyed ids (bearer-at-rest.ts). */
  readonly repo: OidcPayloadRepository;
  /** oidc-provider's `conformIdTokenClaims` of this build (provider.ts). */
  readonly conformIdTokenClaims: boolean;
}

export interface RefreshHost extends TokenContext {
  readonly tenant: string;
  /** The setup of the tenant's built oidc-provider; undefined while it is not built. */
  refreshSetup(): RefreshSetup | undefined;
  findTokenUser(sub: string): Promise<UserRecord | undefined>;
}

type Payload = Record<string, unknown>;

/** The parameters a served request may carry: the grant's and client authentication's. */
const SERVED_PARAMS = new Set(['grant_type', 'refresh_token', 'client_id', 'client_secret', 'client_assertion', 'client_assertion_type']);
/** oidc-provider's noCache middleware, then its JSON body. */
const HEADERS = { 'cache-control': 'no-store', 'content-type': 'application/json; charset=utf-8' };
const GTY = 'refresh_token';

const isObject = (v: unknown): v is Payload => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

/** oidc-provider's opaque token values: 256 bits of randomness, base64url (formats/opaque.js). */
function tokenValue(): string {
  return randomBytes(32).toString('base64url');
}

/** Stored, of its kind and valid as oidc-provider's find checks it; `exp` checked by the caller. */
function stored(row: OidcPayloadRow | undefined, kind: string, now: number): Payload | undefined {
  const p = row?.payload;
  if (!p || row.consumed || p.kind !== kind || !opaquePayloadValid(p, now)) return undefined;
  return p;
}

const expired = (p: Payload, now: number) => typeof p.exp === 'number' && p.exp <= now;

/** Grant#getOIDCScope: the granted OIDC scope without the rejected ones (openid stays). */
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

/** Grant#getRejectedOIDCClaims. */
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

/** oidc-provider's checkSessionBinding for a token that expires with its session. */
async function sessionHolds(repo: OidcPayloadRepository, tenant: string, token: Payload, now: number): Promise<boolean> {
  if (!token.expiresWithSession) return true;
  if (typeof token.sessionUid !== 'string') return false;
  const session = stored(await repo.findByUid(tenant, 'Session', token.sessionUid), 'Session', now);
  if (!session || expired(session, now) || session.accountId !== token.accountId) return false;
  const auth = isObject(session.authorizations) ? session.authorizations[token.clientId as string] : undefined;
  return isObject(auth) && auth.grantId === token.grantId;
}

/**
 * The claims a masked claim set releases (helpers/claims.js): the claims of each scope in order,
 * less the rejected ones, picked from what the account offers; the pairwise `sub` for pairwise clients.
 */
function masked(setup: UserinfoSetup, offered: Payload, scope: string, rejected: readonly string[], sector: string | undefined): Payload {
  const mask = new Set<string>();
  for (const s of scope.split(' ')) {
    if (Object.hasOwn(setup.claimsByScope, s)) for (const c of setup.claimsByScope[s]!) mask.add(c);
  }
  for (const c of rejected) mask.delete(c);
  const claims: Payload = {};
  for (const c of mask) if (Object.hasOwn(offered, c)) claims[c] = offered[c];
  if (sector !== undefined && claims.sub) claims.sub = pairwiseSubject(setup.pairwiseKey, sector, claims.sub as string);
  return claims;
}

/** The request this path serves: its form, or undefined. */
function servedForm(host: RefreshHost, req: HttpRequest): URLSearchParams | undefined {
  if (req.headers.dpop !== undefined || req.headers['oauth-client-attestation'] !== undefined) return undefined;
  const form = parseForm(req, host.config.oidc.path);
  if (form.get('grant_type') !== GTY) return undefined;
  for (const name of form.keys()) if (!SERVED_PARAMS.has(name)) return undefined;
  return form;
}

/**
 * The token response for `req`, or undefined to let oidc-provider answer. Client authentication
 * failures throw the same OAuth errors as oidc-provider's.
 */
export async function refreshGrant(host: RefreshHost, req: HttpRequest): Promise<HttpResponse | undefined> {
  const setup = host.refreshSetup();
  if (!setup) return undefined;
  const form = servedForm(host, req);
  const value = form?.get('refresh_token');
  if (!form || !value) return undefined;
  const now = Math.floor(Date.now() / 1000);
  const { repo } = setup;
  const tenant = host.tenant;

  const token = stored(await repo.find(tenant, 'RefreshToken', value), 'RefreshToken', now);
  if (!token || expired(token, now)) return undefined;
  if (token.jkt !== undefined || token['x5t#S256'] !== undefined || token.attestationJkt !== undefined) return undefined;
  if (token.resource !== undefined || token.rar !== undefined || token.claims !== undefined) return undefined;
  const { clientId, accountId, grantId, scope } = token;
  if (typeof clientId !== 'string' || typeof accountId !== 'string' || typeof grantId !== 'string' || typeof scope !== 'string') return undefined;

  const auth = await authenticateClient(host, req, form, host.issuer + OIDC_ROUTES.token, 'fallback');
  if (auth === 'fallback') return undefined;
  const client = auth.record;
  if (client.client_id !== clientId || !client.metadata.grant_types.includes(GTY)) return undefined;
  const alg = (client.metadata.id_token_signed_response_alg ?? 'RS256') as SigningAlg;
  const key = host.keys.signing.get(alg);
  const pairwise = client.metadata.subject_type === 'pairwise';
  const sector = pairwise ? redirectSector(client.metadata) : undefined;
  if (!key || (pairwise && sector === undefined)) return undefined;

  const [grantRow, user, bound] = await Promise.all([repo.find(tenant, 'Grant', grantId), host.findTokenUser(accountId), sessionHolds(repo, tenant, token, now)]);
  const grant = stored(grantRow, 'Grant', now);
  if (!bound || !grant || expired(grant, now) || grant.clientId !== clientId || grant.accountId !== accountId) return undefined;
  if (!user || !canSignIn(user) || user.id !== accountId) return undefined;
  const granted = grantOidcScope(grant);
  const rejected = grantRejectedClaims(grant);
  if (granted === undefined || rejected === undefined) return undefined;

  const scopes = new Set(scope.split(' '));
  const atScope = granted.split(' ').filter((s) => scopes.has(s)).join(' ');
  // The signature runs on libuv's pool while the writes below run here; a failed signature is
  // seen at the await (the catch only keeps it from counting as unhandled meanwhile).
  const signing = scopes.has('openid') ? issueIdToken(host, setup, { token, user, client, key, atScope, rejected, scopes, sector, now }) : undefined;
  signing?.catch(() => undefined);

  // Rotation (provider.ts rotateRefreshToken: true): the used token is consumed, its successor saved.
  const gty = typeof token.gty === 'string' && !token.gty.endsWith(GTY) ? `${token.gty} ${GTY}` : token.gty;
  const rtTtl = host.config.oidc.ttl.refresh_token;
  const rtValue = tokenValue();
  const successor = defined({
    iat: now,
    exp: now + rtTtl,
    accountId,
    acr: token.acr,
    amr: token.amr,
    authTime: token.authTime,
    expiresWithSession: token.expiresWithSession,
    iiat: token.iiat ?? token.iat ?? now,
    grantId,
    gty,
    nonce: token.nonce,
    rotations: typeof token.rotations === 'number' ? token.rotations + 1 : 1,
    scope,
    sessionUid: token.sessionUid,
    sid: token.sid,
    kind: 'RefreshToken',
    jti: rtValue,
    clientId,
  });
  const atTtl = host.config.oidc.ttl.access_token;
  const atValue = tokenValue();
  const extra = accessTokenExtra(setup, client, user, granted, atScope);
  const access = defined({
    iat: now,
    exp: now + atTtl,
    accountId,
    expiresWithSession: token.expiresWithSession,
    grantId,
    gty,
    sessionUid: token.sessionUid,
    sid: token.sid,
    kind: 'AccessToken',
    jti: atValue,
    clientId,
    scope: atScope,
    extra,
  });
  await repo.consume(tenant, 'RefreshToken', value);
  await repo.upsert(tenant, 'RefreshToken', rtValue, successor, now + rtTtl);
  await repo.upsert(tenant, 'AccessToken', atValue, access, now + atTtl);
  const idToken = await signing;
  host.tokenIssued(clientId, GTY);

  const body = defined({
    access_token: atValue,
    expires_in: atTtl,
    id_token: idToken,
    refresh_token: rtValue,
    scope: atScope,
    token_type: 'Bearer',
  });
  return { status: 200, headers: { ...HEADERS }, body: JSON.stringify(body) };
}

/** The object without its undefined members (oidc-provider's payloads skip them the same way). */
function defined<T extends Payload>(obj: T): T {
  for (const k of Object.keys(obj)) if (obj[k] === undefined) delete obj[k];
  return obj;
}

/**
 * provider.ts extraTokenClaims for a user's access token without a resource: the client's secret
 * generation, the roles claim when `roles` was granted, the tenant's custom claims.
 */
function accessTokenExtra(setup: RefreshSetup, client: ClientRecord, user: UserRecord, granted: string, atScope: string): Payload | undefined {
  const extra: Payload = client.secret_generation > 0 ? { sgen: client.secret_generation } : {};
  if (granted.split(' ').includes('roles') || atScope.split(' ').includes('roles')) extra.roles = [user.role];
  if (setup.customClaims.length) Object.assign(extra, customClaimValues(setup.customClaims, claimSourceFields(user)));
  return Object.keys(extra).length ? extra : undefined;
}

interface IdTokenInput {
  token: Payload;
  user: UserRecord;
  client: ClientRecord;
  key: Parameters<typeof signJwt>[1];
  /** The grant's OIDC scope filtered by the token's (Grant#getOIDCScopeFiltered). */
  atScope: string;
  rejected: readonly string[];
  scopes: ReadonlySet<string>;
  sector: string | undefined;
  now: number;
}

/** grant_common.js issueIdToken for a refresh token (scope override: the token's scopes; no `claims` request). */
function issueIdToken(host: RefreshHost, setup: RefreshSetup, input: IdTokenInput): Promise<string> {
  const { token, user, client, key, atScope, rejected, scopes, sector, now } = input;
  const available: Payload = {
    ...(setup.customClaims.length ? customClaimValues(setup.customClaims, claimSourceFields(user)) : {}),
    ...accountClaims(user, [...scopes].join(' ')),
    sub: user.id,
    acr: token.acr,
    amr: token.amr,
    auth_time: token.authTime,
  };
  // conformIdTokenClaims with userinfo on and an access token without audience: openid's claims only.
  const scope = setup.conformIdTokenClaims ? 'openid' : atScope;
  const payload = masked(setup, available, scope, rejected, sector);
  if (token.nonce !== undefined) payload.nonce = token.nonce;
  if (token.sid !== undefined) payload.sid = token.sid;
  payload.aud = client.client_id;
  payload.exp = now + host.config.oidc.ttl.id_token;
  payload.iat = now;
  payload.iss = host.issuer;
  // helpers/jwt.js sign assigns aud, exp, iat, iss and sub in this order; sub, the masked claims'
  // own, keeps its place.
  return signJwt(defined(payload), key, null);
}
