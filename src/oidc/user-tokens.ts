/**
 * What the actor's direct user-token grants (refresh-grant.ts, code-grant.ts; issue 17) share: the
 * checks oidc-provider 9 makes of the stored artefacts, the client, grant, session and account
 * behind a grant request, and the tokens it issues, built as its models build them
 * (models/formats/opaque.js payloads, helpers/grant_common.js issueIdToken, helpers/claims.js) with
 * this product's configuration (provider.ts). Anything these checks do not accept is declined
 * (undefined) by the grants, and oidc-provider answers it with its own refusal.
 */
import { defaultIdTokenAlg, type SigningAlg } from '../config/schema.js';
import type { HttpRequest } from '../http/types.js';
import { signJwt } from '../keys/jwt.js';
import { claimSourceFields, customClaimValues } from '../resources/custom-claims.js';
import { isResourceScope } from '../resources/provider-scopes.js';
import type { ResourceIndex } from '../resources/index-cache.js';
import type { ClientRecord, OidcPayloadRepository, OidcPayloadRow, OidcRowWithGrant, Storage, UserWithoutSecrets } from '../storage/types.js';
import type { TokenContext } from './access-tokens.js';
import { canSignIn } from './accounts.js';
import { authenticateClient } from './client-auth.js';
import { parseForm } from './form.js';
import {
  accountOffer,
  allowedOrigin,
  boundSession,
  expired,
  grantOidcScope,
  grantRejectedClaims,
  releasedClaims,
  sessionHolds,
  stored,
  type ClaimSettings,
  type Payload,
} from './grant-claims.js';
import { grantFor, revokeGrant } from './grant-reads.js';
import { redirectSector } from './pairwise.js';
import { pooledRandom, timeOrderedValue } from './random-ids.js';
import { OIDC_ROUTES } from './provider.js';

/** What the tenant's oidc-provider build adds for these paths (tenancy/actor.ts buildProvider). */
export interface UserTokenSetup extends ClaimSettings {
  /** The build's storage, with refresh tokens and sessions under keyed ids (bearer-at-rest.ts). */
  readonly repo: OidcPayloadRepository;
  /** oidc-provider's `conformIdTokenClaims` of this build (provider.ts). */
  readonly conformIdTokenClaims: boolean;
  /** The tenant's API resources (the build's index): their scopes stay out of the token without an audience. */
  readonly resources: ResourceIndex | undefined;
}

export interface UserTokenHost extends TokenContext {
  readonly tenant: string;
  /** The setup of the tenant's built oidc-provider; undefined while it is not built. */
  userTokenSetup(): UserTokenSetup | undefined;
  /** The same setup, once the tenant's oidc-provider is built (building it now if it is not). */
  userTokenSetupBuilt(): Promise<UserTokenSetup>;
  findTokenUser(sub: string): Promise<UserWithoutSecrets | undefined>;
  /**
   * A stored session by its uid, as stored: only whether it is live and holds the grant matters
   * here, so its `jti` is not unsealed (bearer-at-rest.ts; an AES-GCM decryption per request).
   */
  findSessionByUid(uid: string): Promise<OidcPayloadRow | undefined>;
  readTogether: Storage['readTogether'];
}

/** Client authentication's parameters (besides each grant's own). */
const AUTH_PARAMS = ['client_id', 'client_secret', 'client_assertion', 'client_assertion_type'];

/**
 * The opaque values these paths issue (access and refresh tokens, codes): 43 base64url characters
 * like oidc-provider's (formats/opaque.js), ordered by issue time (random-ids.ts), so the rows a
 * group commit writes share index pages. Access tokens and codes are stored under the value;
 * refresh tokens under a keyed hash that keeps the value's time prefix (bearer-at-rest.ts).
 */
export const tokenValue = timeOrderedValue(pooledRandom(27, 128));

/**
 * A code or refresh token another request consumed at the same moment (the store's consume said
 * so: storage/types.ts): a replay. Its grant is revoked here as oidc-provider revokes it for a
 * replay (the tokens just written belong to it, and so do the other request's), then oidc-provider
 * answers the request as it answers any replay (it finds the token consumed: invalid_grant).
 */
export async function replayed(host: Pick<UserTokenHost, 'tenant'>, repo: OidcPayloadRepository, grantId: string): Promise<undefined> {
  await revokeGrant(repo, host.tenant, grantId);
  return undefined;
}

/**
 * The object without its undefined members (oidc-provider's payloads skip them the same way). Not
 * needed for what only JSON.stringify reads (stored payloads, token bodies, JWT claims), which
 * leaves undefined members out by itself: deleting members turns an object into a slow dictionary,
 * which every later copy and serialisation pays for (issue 17).
 */
export function defined<T extends Payload>(obj: T): T {
  for (const k of Object.keys(obj)) if (obj[k] === undefined) delete obj[k];
  return obj;
}

/**
 * The form of a request one of these grants serves, or undefined: `grant_type` as given, no
 * parameter but the grant's own and client authentication's, no DPoP proof, no client attestation.
 */
export function servedForm(host: UserTokenHost, req: HttpRequest, grantType: string, params: ReadonlySet<string>): URLSearchParams | undefined {
  if (req.headers.dpop !== undefined || req.headers['oauth-client-attestation'] !== undefined) return undefined;
  const form = parseForm(req, host.config.oidc.path);
  if (form.get('grant_type') !== grantType) return undefined;
  for (const name of form.keys()) if (name !== 'grant_type' && !params.has(name) && !AUTH_PARAMS.includes(name)) return undefined;
  return form;
}

/** A grant source's members both grants need, typed; undefined when one is missing. */
export interface Source {
  payload: Payload;
  clientId: string;
  accountId: string;
  grantId: string;
  scope: string;
  /** The grant the store read with the source, if it did (grant-reads.ts). */
  grantReadWith: OidcRowWithGrant['grant'];
}

/**
 * A stored grant source (refresh token, authorization code) this path may serve: live, of its
 * kind, bound to no key, without a resource, authorization details or `claims` request.
 */
export function servedSource(found: OidcRowWithGrant | undefined, kind: string, now: number): Source | undefined {
  const payload = stored(found?.row, kind, now);
  if (!payload || expired(payload, now)) return undefined;
  for (const bound of ['jkt', 'x5t#S256', 'attestationJkt', 'dpopJkt', 'resource', 'rar', 'claims']) if (payload[bound] !== undefined) return undefined;
  const { clientId, accountId, grantId, scope } = payload;
  if (typeof clientId !== 'string' || typeof accountId !== 'string' || typeof grantId !== 'string' || typeof scope !== 'string') return undefined;
  return { payload, clientId, accountId, grantId, scope, grantReadWith: found?.grant };
}

/** Everything behind a served grant request, checked. */
export interface Parties {
  client: ClientRecord;
  user: UserWithoutSecrets;
  /** The grant's OIDC scope (Grant#getOIDCScope). */
  granted: string;
  rejected: string[];
  /** The grant's OIDC scope filtered by the source's (Grant#getOIDCScopeFiltered): the access token's scope. */
  atScope: string;
  /** The ID token's signing key (the client's id_token_signed_response_alg, by default defaultIdTokenAlg's as in provider.ts). */
  key: Parameters<typeof signJwt>[1];
  /** The pairwise sector, for pairwise clients. */
  sector: string | undefined;
  /** The answer's CORS origin (the request's, or `*` without one). */
  origin: string;
}

/**
 * Authenticates the client by oidc-provider's rule (Basic and client_secret_post stand in for each
 * other; another method than the registered one goes to oidc-provider) and checks client, grant, session and user
 * as oidc-provider would; undefined when any of them is not as this path serves it.
 */
export async function parties(host: UserTokenHost, setup: UserTokenSetup, req: HttpRequest, form: URLSearchParams, source: Source, grantType: string, now: number): Promise<Parties | undefined> {
  const auth = await authenticateClient(host, req, form, host.issuer + OIDC_ROUTES.token);
  if (auth === 'fallback') return undefined;
  const client = auth.record;
  if (client.client_id !== source.clientId || !client.metadata.grant_types.includes(grantType)) return undefined;
  const key = host.keys.signing.get((client.metadata.id_token_signed_response_alg ?? defaultIdTokenAlg(host.config.security.key_store.algorithms)) as SigningAlg);
  const sector = client.metadata.subject_type === 'pairwise' ? redirectSector(client.metadata) : undefined;
  // An origin the client's CORS rule refuses is oidc-provider's invalid_request.
  const origin = allowedOrigin(req, client);
  if (!key || origin === undefined || (client.metadata.subject_type === 'pairwise' && sector === undefined)) return undefined;

  const { repo } = setup;
  // The session, grant and user are read at once, in one read of the storage where it can.
  const reads = host.readTogether(() => {
    const session = boundSession(source.payload, (uid) => host.findSessionByUid(uid));
    if (session === null) return null;
    return Promise.all([grantFor(source.grantReadWith, source.grantId, () => repo.find(host.tenant, 'Grant', source.grantId)), host.findTokenUser(source.accountId), session]);
  });
  if (reads === null) return undefined;
  const [grantRow, user, sessionRow] = await reads;
  const grant = stored(grantRow, 'Grant', now);
  if (!sessionHolds(source.payload, sessionRow, now) || !grant || expired(grant, now) || grant.clientId !== client.client_id || grant.accountId !== source.accountId) return undefined;
  if (!user || !canSignIn(user) || user.id !== source.accountId) return undefined;
  const granted = grantOidcScope(grant);
  const rejected = grantRejectedClaims(grant);
  if (granted === undefined || rejected === undefined) return undefined;
  const scopes = new Set(source.scope.split(' '));
  // provider.ts getOIDCScopeFiltered: no resource's scope in the token without an audience.
  const atScope = granted.split(' ').filter((s) => scopes.has(s) && !isResourceScope(s, setup.resources)).join(' ');
  return { client, user, granted, rejected, atScope, key, sector, origin };
}

/**
 * The stored payload of a user's opaque access token (grant_common.js createAccessToken, then
 * resolveAndApplyResource without a resource and provider.ts extraTokenClaims), its value and ttl.
 */
export function accessToken(host: UserTokenHost, setup: UserTokenSetup, source: Source, p: Parties, gty: unknown, now: number) {
  const ttl = host.config.oidc.ttl.access_token;
  const value = tokenValue();
  const payload = {
    iat: now,
    exp: now + ttl,
    accountId: source.accountId,
    expiresWithSession: source.payload.expiresWithSession,
    grantId: source.grantId,
    gty,
    sessionUid: source.payload.sessionUid,
    sid: source.payload.sid,
    kind: 'AccessToken',
    jti: value,
    clientId: source.clientId,
    scope: p.atScope,
    extra: accessTokenExtra(setup, p),
  };
  return { value, payload, ttl };
}

/** provider.ts extraTokenClaims: the client's secret generation, the roles claim when `roles` was granted, the tenant's custom claims. */
function accessTokenExtra(setup: UserTokenSetup, p: Parties): Payload | undefined {
  const extra: Payload = p.client.secret_generation > 0 ? { sgen: p.client.secret_generation } : {};
  if (p.granted.split(' ').includes('roles') || p.atScope.split(' ').includes('roles')) extra.roles = [p.user.role];
  if (setup.customClaims.length) Object.assign(extra, customClaimValues(setup.customClaims, claimSourceFields(p.user)));
  return Object.keys(extra).length ? extra : undefined;
}

/**
 * grant_common.js issueIdToken without a `claims` request: the account's claims for `accountScope`
 * masked by the granted scope (openid's only under conformIdTokenClaims, the access token having
 * no audience), then nonce and sid, then jwt.js sign's aud, exp, iat, iss (sub keeps its place).
 * Signed on libuv's pool.
 */
export function idToken(host: UserTokenHost, setup: UserTokenSetup, source: Source, p: Parties, accountScope: string, now: number): Promise<string> {
  const token = source.payload;
  const available: Payload = {
    ...accountOffer(setup, p.user, accountScope),
    acr: token.acr,
    amr: token.amr,
    auth_time: token.authTime,
  };
  const payload = releasedClaims(setup, available, setup.conformIdTokenClaims ? 'openid' : p.atScope, p.rejected, p.sector);
  if (token.nonce !== undefined) payload.nonce = token.nonce;
  if (token.sid !== undefined) payload.sid = token.sid;
  payload.aud = p.client.client_id;
  payload.exp = now + host.config.oidc.ttl.id_token;
  payload.iat = now;
  payload.iss = host.issuer;
  // oidc-provider's ID tokens carry no `typ`.
  return signJwt(payload, p.key, null);
}
