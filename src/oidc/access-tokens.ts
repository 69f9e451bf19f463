/**
 * The actor's hot paths for access tokens: client_credentials issuance for the Management API
 * resource and introspection (JWT access tokens through token-verification.ts, opaque
 * client_credentials tokens through opaque-introspection.ts). Output is the same as
 * oidc-provider's for these tokens (JWT header typ at+jwt, claims iss/sub/aud/iat/exp/jti/scope/
 * client_id; introspection members and their order), so either path may serve a request.
 * Client authentication (all five methods) is client-auth.ts.
 */
import type { Config } from '../config/index.js';
import type { SigningAlg } from '../config/schema.js';
import { OAuthError } from '../http/problem.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { decodeJwt, isStructuredToken, signJwt } from '../keys/jwt.js';
import type { KeySet } from '../keys/keystore.js';
import { managementOnly, type ResourceIndex } from '../resources/index-cache.js';
import type { ClientRecord, OidcPayloadRow, ResourceRecord } from '../storage/types.js';
import { authenticateClient, type AuthenticatedClient, type ClientAuthHost } from './client-auth.js';
import { parseForm } from './form.js';
import { pooledRandom } from './random-ids.js';
import { opaqueIntrospection } from './opaque-introspection.js';
import { OIDC_ROUTES } from './provider.js';
import { MANAGEMENT_RESOURCE, isManagementScope } from './scopes.js';
import { checkAccessToken, clientRevoked, type AccessTokenClaims, type VerifierHost } from './token-verification.js';

export interface TokenContext extends ClientAuthHost, VerifierHost {
  readonly config: Config;
  readonly keys: KeySet;
  /** Counts an issued token for client stats and metrics. */
  tokenIssued(clientId: string, grantType: string): void;
  /** oidc-provider's stored `ClientCredentials` artefact with this id (an opaque token), if any. */
  findClientCredentials(id: string): Promise<OidcPayloadRow | undefined>;
  /** The tenant's own API resources (issue 19). */
  resourceIndex(): Promise<ResourceIndex>;
}

/** oidc-provider's noCache middleware sets exactly this. */
const NO_STORE = { 'cache-control': 'no-store' };
const JSON_TYPE = 'application/json; charset=utf-8';

/** The Management scopes a client may ask for, computed once per cached client record. */
const allowedScopes = new WeakMap<ClientRecord, ReadonlySet<string>>();
function managementScopesOf(client: ClientRecord): ReadonlySet<string> {
  let set = allowedScopes.get(client);
  if (!set) allowedScopes.set(client, (set = new Set((client.metadata.scope ?? '').split(' ').filter(isManagementScope))));
  return set;
}

/** 128-bit token ids (random-ids.ts). */
const newJti = pooledRandom(16, 256);

function signingAlg(ctx: TokenContext, client: ClientRecord, resource?: ResourceRecord): SigningAlg {
  const wanted = (resource?.signing_alg ?? client.metadata.id_token_signed_response_alg) as SigningAlg | undefined;
  return wanted && ctx.keys.signing.has(wanted) ? wanted : ctx.config.security.key_store.algorithms[0]!;
}

/**
 * client_credentials for the Management API resource. Returns undefined when the request is not
 * one this path serves (other grants, other resources, client attestation): oidc-provider answers
 * those. The decision is made before client authentication, so a client assertion is never spent
 * here and then presented again to oidc-provider.
 */
export async function clientCredentialsGrant(ctx: TokenContext, req: HttpRequest): Promise<HttpResponse | undefined> {
  const form = parseForm(req, ctx.config.oidc.path);
  if (form.get('grant_type') !== 'client_credentials') return undefined;
  // Issue 18 item 8: a DPoP proof goes to oidc-provider, which checks it (typ, alg, htm, htu, iat,
  // jti single use in its ReplayDetection store, nonce) and binds the token (cnf.jkt, token_type DPoP).
  if (req.headers.dpop !== undefined) return undefined;
  const resources = form.getAll('resource');
  const requested = (form.get('scope') ?? '').split(' ').filter(Boolean);
  if (resources.length > 1) return undefined;
  const resource = resources[0] ?? (requested.some(isManagementScope) ? MANAGEMENT_RESOURCE : undefined);
  if (resource === undefined) return undefined;
  // A tenant's own API (issue 19) with JWT tokens is served here too; unknown resources
  // (invalid_target) and opaque tokens (stored by oidc-provider for introspection) are not.
  let index: ResourceIndex | undefined;
  let target: ResourceRecord | undefined;
  if (resource !== MANAGEMENT_RESOURCE) {
    index = await ctx.resourceIndex();
    target = index.get(resource);
    if (!target || target.token_format !== 'jwt') return undefined;
  }

  const auth = await authenticateClient(ctx, req, form, ctx.issuer + OIDC_ROUTES.token);
  if (auth === 'fallback') return undefined;
  const client = auth.record;
  // A public client never has the grant (clients/rules.ts); refused the same way regardless.
  if (auth.method === 'none' || !client.metadata.grant_types.includes('client_credentials')) {
    throw new OAuthError(400, 'unauthorized_client', 'requested grant type is not allowed for this client');
  }
  const allowed = target && index ? new Set(index.allowedFor(target, client.metadata.scope)) : managementScopesOf(client);
  const denied = requested.filter((s) => !allowed.has(s));
  if (denied.length) throw new OAuthError(400, 'invalid_scope', `requested scope is not allowed: ${denied.join(' ')}`);
  const scope = [...new Set(requested)].join(' ');

  const now = Math.floor(Date.now() / 1000);
  const ttl = target ? target.access_token_ttl : ctx.config.oidc.ttl.access_token;
  const claims: AccessTokenClaims = {
    iss: ctx.issuer,
    sub: client.client_id,
    aud: target ? target.identifier : MANAGEMENT_RESOURCE,
    iat: now,
    exp: now + ttl,
    jti: newJti(),
    client_id: client.client_id,
  };
  if (scope) claims.scope = scope;
  if (client.secret_generation > 0) claims.sgen = client.secret_generation;
  const key = ctx.keys.signingKey(signingAlg(ctx, client, target));
  const token = await signJwt(claims as unknown as Record<string, unknown>, key, 'at+jwt');
  ctx.tokenIssued(client.client_id, 'client_credentials');

  const body: Record<string, unknown> = { access_token: token, expires_in: ttl, token_type: 'Bearer' };
  if (scope) body.scope = scope;
  return { status: 200, headers: { 'content-type': JSON_TYPE, ...NO_STORE }, body: JSON.stringify(body) };
}

/**
 * Introspection in the actor: JWT access tokens of this tenant, and opaque tokens stored as
 * oidc-provider `ClientCredentials`. Anything else (user access tokens and refresh tokens with
 * their grant, session and pairwise-subject rules; unknown opaque values; client attestation)
 * returns undefined for oidc-provider, decided before the client is authenticated. The client is
 * authenticated by oidc-provider's method rule, as oidc-provider does for the tokens it answers:
 * with the stricter rule the status told a caller whether a string was one of these tokens.
 */
export async function introspect(ctx: TokenContext, req: HttpRequest): Promise<HttpResponse | undefined> {
  const form = parseForm(req, ctx.config.oidc.path);
  const token = form.get('token');
  if (!token) return undefined;
  const endpoint = ctx.issuer + OIDC_ROUTES.introspection;
  if (!decodeJwt(token)) {
    const row = await ctx.findClientCredentials(token);
    // A JWT this service cannot have issued (unsigned `alg: none`, an empty signature): inactive
    // for an authenticated caller (RFC 7662 2.2), where oidc-provider would answer 400
    // unsupported_token_type because it is structured.
    if (!row && isStructuredToken(token)) {
      const auth = await authenticateClient(ctx, req, form, endpoint);
      return auth === 'fallback' ? undefined : introspectionResponse({ active: false });
    }
    if (!row) return undefined;
    const auth = await authenticateClient(ctx, req, form, endpoint);
    if (auth === 'fallback') return undefined;
    const body = opaqueIntrospection(row.payload, auth, ctx.issuer);
    if (!body) return undefined;
    // The same client rules as a JWT access token (checkAccessToken): oidc-provider stored the
    // secret generation with the token's extra claims (provider.ts extraTokenClaims).
    if (body.active === true) {
      const extra = row.payload.extra && typeof row.payload.extra === 'object' ? (row.payload.extra as Record<string, unknown>) : {};
      if (await clientRevoked(ctx, row.payload.clientId as string, extra.sgen)) return introspectionResponse({ active: false });
      if (!(await audienceLive(ctx, row.payload.aud, row.payload.iat))) return introspectionResponse({ active: false });
    }
    return introspectionResponse(body);
  }
  const auth = await authenticateClient(ctx, req, form, endpoint);
  if (auth === 'fallback') return undefined;
  const check = await checkAccessToken(ctx, token);
  const live = check.active && allowedPolicy(auth, check.claims.client_id) && (await audienceLive(ctx, check.claims.aud, check.claims.iat));
  return introspectionResponse(live && check.active ? jwtIntrospection(check.claims) : { active: false });
}

/**
 * Whether a token's audience still exists: the Management API, no audience (oidc-provider's own
 * userinfo tokens), or a resource the tenant has now. A deleted resource's tokens introspect as
 * inactive (issue 19); self-contained JWTs stay verifiable by signature until they expire.
 */
async function audienceLive(ctx: TokenContext, aud: unknown, iat: unknown): Promise<boolean> {
  return managementOnly(aud) || (await ctx.resourceIndex()).tokenLive(aud, iat);
}

/** oidc-provider's default introspection policy: a public client only learns about its own tokens. */
export function allowedPolicy(caller: AuthenticatedClient, tokenClientId: unknown): boolean {
  return !(caller.method === 'none' && tokenClientId !== caller.record.client_id);
}

function jwtIntrospection(claims: AccessTokenClaims): Record<string, unknown> {
  return {
    active: true,
    sub: claims.sub,
    client_id: claims.client_id,
    scope: claims.scope,
    exp: claims.exp,
    iat: claims.iat,
    iss: claims.iss,
    aud: claims.aud,
    jti: claims.jti,
    // RFC 9449 6.2 / RFC 7662: a bound token says so, with its key thumbprint.
    ...(claims.cnf?.jkt ? { cnf: { jkt: claims.cnf.jkt } } : {}),
    token_type: claims.cnf?.jkt ? 'DPoP' : 'Bearer',
  };
}

function introspectionResponse(body: Record<string, unknown>): HttpResponse {
  return { status: 200, headers: { 'content-type': JSON_TYPE, ...NO_STORE }, body: JSON.stringify(body) };
}
