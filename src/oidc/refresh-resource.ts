/**
 * The `resource` of a refresh_token request, checked before oidc-provider consumes anything
 * (RFC 8707 section 2, RFC 6749 section 5.2). oidc-provider 9 (lib/actions/grants/refresh_token.js)
 * rotates the refresh token before it resolves the resource, so a bad `resource` answered
 * invalid_target with the token already consumed, and the client's correct retry was taken for a
 * replay, which revokes the whole grant.
 *
 * The resource is resolved here as oidc-provider resolves it (helpers/resolve_resource.js with this
 * product's hooks in provider.ts: useGrantedResource, defaultResource returning the granted list,
 * getResourceServerInfo refusing a resource the tenant does not have): the requested one, or else
 * the token's own; more than one is refused; it must be among the token's resources and be the
 * Management API or one of the tenant's resources now. A refusal is oidc-provider's invalid_target
 * with its descriptions, answered without consuming the token or touching the grant.
 *
 * Order, as oidc-provider's: the client is authenticated before the grant is looked at, so a bad
 * resource with failing client authentication is invalid_client. The decision whether to answer
 * is made from the stored token before authentication, and the client is authenticated only when
 * this module answers: a request it lets through is authenticated once, by whoever serves it, and
 * a client assertion is never spent here and presented again to oidc-provider. Tokens oidc-provider
 * would refuse anyway without consuming them (unknown, expired, of a missing grant, a `scope` it
 * does not hold) are left to it, and so is a consumed token (its replay rule revokes the grant).
 */
import { OAuthError, oauthResponse } from '../http/problem.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { MANAGEMENT_RESOURCE } from '../resources/management-api.js';
import type { OidcRowWithGrant } from '../storage/types.js';
import { authenticateClient } from './client-auth.js';
import { expired, stored, type Payload } from './grant-claims.js';
import { grantFor } from './grant-reads.js';
import { OIDC_ROUTES } from './provider.js';
import type { UserTokenHost, UserTokenSetup } from './user-tokens.js';

/** oidc-provider's InvalidTarget descriptions (helpers/errors.js, helpers/resolve_resource.js). */
const UNKNOWN = 'resource indicator is missing, or unknown';
const SEVERAL = 'only a single resource indicator value must be requested/resolved during Access Token Request';

/**
 * The invalid_target answer for a refresh request whose resource oidc-provider would refuse after
 * consuming the token; undefined when there is nothing to refuse here (oidc-provider, or the
 * direct path, answers). Throws invalid_client when the client's authentication fails.
 */
export async function refusedResource(
  host: UserTokenHost,
  setup: UserTokenSetup,
  req: HttpRequest,
  form: URLSearchParams,
  found: OidcRowWithGrant | undefined,
  now: number,
): Promise<HttpResponse | undefined> {
  const token = stored(found?.row, 'RefreshToken', now);
  if (!token || expired(token, now) || typeof token.grantId !== 'string' || typeof token.clientId !== 'string') return undefined;
  // oidc-provider checks a `scope` parameter first (invalid_scope, nothing consumed).
  const held = new Set(typeof token.scope === 'string' ? token.scope.split(' ') : []);
  if ((form.get('scope') ?? '').split(' ').some((s) => s && !held.has(s))) return undefined;

  const description = await resourceProblem(host, form, token);
  if (description === undefined) return undefined;

  // validateGrant's refusals (grant not found, expired, of another client) come before the
  // resource and consume nothing: oidc-provider's.
  const grant = stored(await grantFor(found?.grant, token.grantId, () => setup.repo.find(host.tenant, 'Grant', token.grantId as string)), 'Grant', now);
  if (!grant || expired(grant, now) || grant.clientId !== token.clientId) return undefined;

  const auth = await authenticateClient(host, req, form, host.issuer + OIDC_ROUTES.token);
  // A method other than the registered one: oidc-provider refuses it before the grant runs.
  if (auth === 'fallback') return undefined;
  const client = auth.record;
  // Authenticated here, so answered here as oidc-provider would (token.js allowedGrantTypeCheck,
  // refresh_token.js client mismatch): nothing is consumed either way.
  if (!client.metadata.grant_types.includes('refresh_token')) return oauthResponse(new OAuthError(400, 'invalid_request', 'requested grant type is not allowed for this client'));
  if (client.client_id !== token.clientId) return oauthResponse(new OAuthError(400, 'invalid_grant', 'grant request is invalid'));
  return oauthResponse(new OAuthError(400, 'invalid_target', description));
}

/** The invalid_target description oidc-provider would answer for this request's resource, if any. */
async function resourceProblem(host: UserTokenHost, form: URLSearchParams, token: Payload): Promise<string | undefined> {
  const requested = form.getAll('resource');
  const param = requested.length > 1 ? requested : requested[0];
  const granted = token.resource;
  const grantedEmpty = granted === undefined || granted === null || (Array.isArray(granted) && granted.length === 0);
  const resource: unknown = param ? param : grantedEmpty ? undefined : granted;
  if (resource === undefined) return undefined;
  if (Array.isArray(resource)) return SEVERAL;
  if (typeof resource !== 'string') return UNKNOWN;
  if (!(Array.isArray(granted) ? granted : [granted]).includes(resource)) return UNKNOWN;
  if (resource !== MANAGEMENT_RESOURCE && !(await host.resourceIndex()).get(resource)) return UNKNOWN;
  return undefined;
}
