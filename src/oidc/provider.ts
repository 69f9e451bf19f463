/**
 * Builds the oidc-provider instance of one tenant actor. Defaults that CONTRACT.md fixes
 * (lifetimes, routes, resource, PKCE) live here, in one place.
 */
import { timingSafeEqual } from 'node:crypto';
import Provider, { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import type { Config } from '../config/index.js';
import { defaultIdTokenAlg } from '../config/schema.js';
import type { LogoutTarget } from './backchannel.js';
import type { KeySet } from '../keys/keystore.js';
import type { OidcPayloadRepository, TenantId } from '../storage/types.js';
import { adapterFactory, type ClientLoader } from './adapter.js';
import { outboundPolicy } from '../outbound/index.js';
import { providerFetch } from './provider-fetch.js';
import { CLIENT_AUTH_SIGNING_ALGS } from './client-keys.js';
import { isSecretHash, secretMatches } from '../clients/secrets.js';
import { AUTH_METHODS } from '../clients/schema.js';
import { MANAGEMENT_RESOURCE, MANAGEMENT_SCOPES, isManagementScope } from './scopes.js';
import { managementOnly, type ResourceIndex } from '../resources/index-cache.js';
import { tenantResourceServer } from '../resources/resource-server.js';
import { isResourceScope } from '../resources/provider-scopes.js';
import { rolesClaimFor } from '../resources/roles-claim.js';
import { customAccessTokenClaims, withCustomClaims } from '../resources/claims-provider.js';
import type { CustomClaim } from '../resources/custom-claims.js';
import { preciseErrorCodes, unsavedSessionRefusal } from './error-codes.js';
import { narrowToRole } from '../users/roles.js';

/** The platform tenant's name (tenancy/resolver.ts PLATFORM_TENANT; not imported: a surface does not reach up to the wiring). */
const PLATFORM = '_platforms';

export interface ProviderOptions {
  tenant: TenantId;
  issuer: string;
  config: Config;
  keys: KeySet;
  oidcRepo: OidcPayloadRepository;
  loadClient: ClientLoader;
  /** Secret(s) for oidc-provider's signed cookies, derived per tenant. */
  cookieKeys: string[];
  /** Extra configuration layered on top (accounts, interactions, device and logout pages). */
  extend?: (conf: Configuration) => void;
  /** The tenant's own API resources (issue 19): more token audiences and scopes. */
  resources?: ResourceIndex;
  /** The tenant's custom claims (issue 19). */
  customClaims?: readonly CustomClaim[];
  /** Replaces oidc-provider's back-channel logout delivery (ours retries and audits). */
  backchannelLogout?: (client: LogoutTarget, sub: string, sid: string | undefined) => Promise<void>;
}

export const OIDC_ROUTES = {
  authorization: '/auth',
  backchannel_authentication: '/backchannel',
  code_verification: '/device',
  device_authorization: '/device/auth',
  end_session: '/session/end',
  introspection: '/token/introspection',
  jwks: '/jwks',
  pushed_authorization_request: '/request',
  registration: '/reg',
  revocation: '/token/revocation',
  token: '/token',
  userinfo: '/userinfo',
} as const;

/**
 * Which claims each scope releases (oidc-provider's `claims` setting). The direct userinfo path
 * (userinfo.ts) filters with the very same map, so both answers release the same claims.
 */
export function claimsConfiguration(customClaims: readonly CustomClaim[]): Record<string, string[]> {
  return {
    // `roles` under openid too: the account returns it only when the roles scope was granted
    // (accounts.ts), and the ID token of a code flow carries openid's claims only.
    openid: ['sub', 'amr', 'roles', ...customClaims.map((c) => c.name)],
    roles: ['roles'],
    profile: ['name', 'given_name', 'family_name', 'nickname', 'preferred_username', 'updated_at'],
    email: ['email', 'email_verified'],
  };
}

function accessTokenTtl(config: Config) {
  return config.oidc.ttl.access_token;
}

/** The scopes of oidc-provider itself (the only ones a token without an audience may carry). */
const PROVIDER_SCOPES: readonly string[] = ['openid', 'offline_access', 'profile', 'email', 'roles'];

export function createProvider(opts: ProviderOptions): Provider {
  const { config, keys } = opts;
  const ttl = config.oidc.ttl;
  const algs = config.security.key_store.algorithms;
  const configuration: Configuration = {
    adapter: adapterFactory(opts.oidcRepo, opts.tenant, opts.loadClient),
    clients: [],
    jwks: keys.providerJwks() as Configuration['jwks'],
    cookies: { keys: opts.cookieKeys, long: { signed: true }, short: { signed: true } },
    fetch: providerFetch(outboundPolicy(config)) as Configuration['fetch'],
    routes: OIDC_ROUTES,
    // The code flow only: no client can register another response type (clients/schema.ts), so
    // discovery must not advertise `none`.
    responseTypes: ['code'],
    scopes: [...PROVIDER_SCOPES, ...MANAGEMENT_SCOPES, ...(opts.resources?.scopeNames ?? [])],
    claims: claimsConfiguration(opts.customClaims ?? []),
    ttl: {
      AccessToken: (_ctx, token) => (token.resourceServer?.accessTokenTTL as number | undefined) ?? ttl.access_token,
      ClientCredentials: (_ctx, token) => (token.resourceServer?.accessTokenTTL as number | undefined) ?? ttl.access_token,
      AuthorizationCode: ttl.authorization_code,
      IdToken: ttl.id_token,
      RefreshToken: ttl.refresh_token,
      DeviceCode: ttl.device_code,
      Session: ttl.session,
      Grant: ttl.refresh_token,
      Interaction: ttl.interaction,
    },
    enabledJWA: {
      idTokenSigningAlgValues: [...algs],
      userinfoSigningAlgValues: [...algs],
      introspectionSigningAlgValues: [...algs],
      authorizationSigningAlgValues: [...algs],
      // The actor's fast path checks client assertions with the same list (client-assertion.ts).
      clientAuthSigningAlgValues: [...CLIENT_AUTH_SIGNING_ALGS],
    },
    // The methods a client may register (clients/schema.ts), at every endpoint that authenticates it.
    clientAuthMethods: [...AUTH_METHODS],
    // oidc-provider 9 announces them for the token endpoint only; by RFC 8414 2 an omitted
    // introspection or revocation list means client_secret_basic alone, where all of them work.
    discovery: {
      introspection_endpoint_auth_methods_supported: [...AUTH_METHODS],
      introspection_endpoint_auth_signing_alg_values_supported: [...CLIENT_AUTH_SIGNING_ALGS],
      revocation_endpoint_auth_methods_supported: [...AUTH_METHODS],
      revocation_endpoint_auth_signing_alg_values_supported: [...CLIENT_AUTH_SIGNING_ALGS],
    },
    // oidc-provider's defaults, but the ID token algorithm of a client that names none where the
    // key store has no RS256 key (defaultIdTokenAlg): oidc-provider's RS256 left such a client
    // unable to sign in or start the device flow.
    clientDefaults: {
      grant_types: ['authorization_code'],
      id_token_signed_response_alg: defaultIdTokenAlg(algs),
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
    extraClientMetadata: {
      properties: ['require_pkce', 'first_party', 'secret_generation'],
    },
    pkce: {
      // Public clients always; confidential ones when their require_pkce setting says so.
      required: (_ctx, client) => client.clientAuthMethod === 'none' || client.require_pkce === true,
    },
    rotateRefreshToken: true,
    // Issue 18 item 2: scope claims in the ID token unless the (tenant's) setting asks for the
    // strict OIDC Core 5.4 behaviour.
    conformIdTokenClaims: config.oidc.id_token_claims === 'conform',
    clientBasedCORS: (_ctx, origin, client) => {
      const origins = new Set<string>();
      for (const uri of [...(client.redirectUris ?? []), ...(client.postLogoutRedirectUris ?? [])]) {
        try {
          origins.add(new URL(uri).origin);
        } catch {
          // not a URL with an origin (custom scheme): no CORS for it
        }
      }
      return origins.has(origin);
    },
    extraTokenClaims: (ctx, token) => {
      const gen = (token as { client?: { secret_generation?: unknown } }).client?.secret_generation;
      const extra: Record<string, unknown> = typeof gen === 'number' && gen > 0 ? { sgen: gen } : {};
      // A user's JWT access token names its grant, so the service's own verifiers (the Management
      // API, introspection) can tell it was revoked (session ended, account locked, refresh token
      // revoked) as oidc-provider tells it for an opaque one (token-verification.ts).
      const t = token as { kind?: unknown; grantId?: unknown; resourceServer?: { accessTokenFormat?: unknown } };
      if (t.kind === 'AccessToken' && typeof t.grantId === 'string' && t.resourceServer?.accessTokenFormat === 'jwt') extra.grant_id = t.grantId;
      const roles = rolesClaimFor(ctx, token, opts.resources);
      if (roles) extra.roles = roles;
      Object.assign(extra, customAccessTokenClaims(ctx, token, opts.customClaims ?? []));
      return Object.keys(extra).length ? extra : undefined;
    },
    features: {
      devInteractions: { enabled: false as never },
      clientCredentials: { enabled: true },
      introspection: {
        enabled: true,
        // oidc-provider's default (a public client learns only about its own tokens), and: a token
        // whose client is gone or deactivated is inactive (CONTRACT: tokens live until the client
        // is deactivated or deleted). Without this, another client introspecting a user's token
        // of such a client got a 500 (oidc-provider looks the token's client up for pairwise subs).
        allowedPolicy: async (ctx, client, token) => {
          // A token for a resource since deleted (or for the predecessor of one with its identifier) is
          // inactive, as on the direct introspection path (access-tokens.ts audienceLive).
          const aud = (token as { aud?: unknown }).aud;
          if (!managementOnly(aud) && !(opts.resources?.tokenLive(aud, token.iat) ?? false)) return false;
          if (token.clientId === client.clientId) return true;
          if (client.clientAuthMethod === 'none') return false;
          return token.clientId !== undefined && (await ctx.oidc.provider.Client.find(token.clientId)) !== undefined;
        },
      },
      revocation: { enabled: true },
      userinfo: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (ctx, _client, oneOf) => {
          if (oneOf) return oneOf;
          // Asking for svc:* scopes without a resource means the Management API.
          const scopes = String(ctx.oidc.params?.scope ?? '').split(' ').filter(Boolean);
          if (scopes.some(isManagementScope)) return MANAGEMENT_RESOURCE;
          if (ctx.oidc.route === 'token' && ctx.oidc.params?.grant_type === 'client_credentials') refuseAudiencelessScopes(scopes, opts.resources);
          return undefined as unknown as string;
        },
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource, client) => {
          if (resource !== MANAGEMENT_RESOURCE) {
            if (!opts.resources) throw new errors.InvalidTarget();
            return tenantResourceServer(ctx, opts.resources, resource, client.scope, algs);
          }
          let allowed = (client.scope ?? '').split(' ').filter(isManagementScope);
          // A user's token (authorization code, refresh, device flow: oidc-provider has loaded the
          // account by now) carries no more than the user's role grants (users/roles.ts). Without
          // an account (the authorization request, client_credentials) the client's list applies;
          // the token endpoint narrows it, and the Management API checks the role again at use.
          const account = ctx.oidc.account as { role?: unknown } | undefined;
          if (account) allowed = narrowToRole(allowed.join(' '), typeof account.role === 'string' ? account.role : '', opts.tenant === PLATFORM).split(' ').filter(Boolean);
          const alg = algs.includes(client.idTokenSignedResponseAlg as (typeof algs)[number]) ? client.idTokenSignedResponseAlg : algs[0];
          return {
            scope: allowed.join(' '),
            audience: MANAGEMENT_RESOURCE,
            accessTokenTTL: accessTokenTtl(config),
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: alg as 'RS256' } },
          };
        },
      },
    },
  };
  opts.extend?.(configuration);
  if (configuration.findAccount && opts.customClaims?.length) configuration.findAccount = withCustomClaims(configuration.findAccount, opts.customClaims);

  const provider = new Provider(opts.issuer, configuration);
  provider.proxy = true;
  provider.use(unsavedSessionRefusal(configuration.renderError as Parameters<typeof unsavedSessionRefusal>[0]));
  provider.use(preciseErrorCodes);

  // A resource's scopes are in `scopes` (a client's metadata may only name those), so oidc-provider
  // would grant them as OIDC scopes, into the access token without an audience (userinfo's) that
  // every user flow without `resource` gets. The OIDC scope a grant gives out leaves them out;
  // they come only from the grant's resource scopes, into that resource's token (user-tokens.ts
  // atScope does the same on the direct paths).
  const GrantClass = provider.Grant as unknown as { prototype: { getOIDCScopeFiltered(this: unknown, filter: Set<string> | string[]): string } };
  const oidcScopeFiltered = GrantClass.prototype.getOIDCScopeFiltered;
  GrantClass.prototype.getOIDCScopeFiltered = function getOIDCScopeFiltered(filter: Set<string> | string[]) {
    return oidcScopeFiltered.call(this, filter).split(' ').filter((s) => !isResourceScope(s, opts.resources)).join(' ');
  };

  // Stored secrets are hashes (see client-metadata.ts): compare the hash of what was presented.
  const ClientClass = provider.Client as unknown as { prototype: { compareClientSecret(this: { clientSecret?: string }, actual: string): Promise<boolean> } };
  ClientClass.prototype.compareClientSecret = async function compareClientSecret(actual: string) {
    const stored = this.clientSecret ?? '';
    if (isSecretHash(stored)) return secretMatches(actual, stored);
    const a = Buffer.from(actual);
    const b = Buffer.from(stored);
    return a.length === b.length && timingSafeEqual(a, b);
  };
  if (opts.backchannelLogout) {
    const send = opts.backchannelLogout;
    type LogoutClient = { clientId: string; backchannelLogoutUri: string; idTokenSignedResponseAlg?: string; subjectType?: string; sectorIdentifier?: string };
    const proto = provider.Client.prototype as unknown as { backchannelLogout(this: LogoutClient, sub: string, sid: string): Promise<void> };
    proto.backchannelLogout = function backchannelLogout(sub: string, sid: string) {
      // The sector as sign-in-config.ts's pairwiseIdentifier takes it, so the logout token's sub is the ID tokens'.
      const pairwiseSector = this.subjectType === 'pairwise' ? String(this.sectorIdentifier ?? this.clientId) : undefined;
      return send({ clientId: this.clientId, backchannelLogoutUri: this.backchannelLogoutUri, idTokenSignedResponseAlg: this.idTokenSignedResponseAlg, pairwiseSector }, sub, sid);
    };
  }
  return provider;
}

export type { KoaContextWithOIDC };


/**
 * client_credentials without `resource` (and without svc:* scopes): a scope of an API resource is
 * `invalid_scope` naming the way to ask for it, since a token without that resource's audience,
 * lifetime and format must not carry it; a scope nobody defines is `invalid_scope` too (CONTRACT:
 * asking for a scope the client is not allowed), where oidc-provider would drop it silently.
 */
function refuseAudiencelessScopes(scopes: readonly string[], resources: ResourceIndex | undefined): void {
  for (const scope of scopes) {
    if (resources?.scopeNames.has(scope)) throw new errors.InvalidScope(`requested scope belongs to an API resource: ask for it with resource=<the API's identifier>`, scope);
    if (!PROVIDER_SCOPES.includes(scope)) throw new errors.InvalidScope('requested scope is not allowed', scope);
  }
}
