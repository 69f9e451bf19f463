/**
 * The refresh_token grant answered in the actor (issue 17), the way client_credentials and
 * userinfo are (access-tokens.ts, userinfo.ts): no Koa context, no model instances. It serves the
 * common case only and serves it as oidc-provider 9 would (lib/actions/grants/refresh_token.js),
 * with this product's configuration (provider.ts): rotation on every use, an opaque access token
 * for userinfo, an ID token when `openid` was granted. The checks and token shapes it shares with
 * the code exchange are in user-tokens.ts.
 *
 * Served: a form with exactly grant_type, refresh_token and the client's authentication (by its
 * registered method), no DPoP or attestation headers; a stored refresh token that is live,
 * unconsumed, of this client, bound to no key, without a resource, authorization details or
 * `claims` request; its session alive and holding the grant when it expires with the session; a
 * live grant of this client and account; a user who may sign in; a client allowed the grant whose
 * ID token is signed with one of the tenant's keys.
 *
 * Everything else returns undefined before anything is written, and oidc-provider answers: every
 * refusal (so status, error and description stay its own: invalid_grant for a consumed token,
 * which also revokes the grant), a `scope` or `resource` parameter, a tenant whose oidc-provider
 * is not built yet (the claim settings come from that build, so both answers always agree). The
 * one exception is a resource oidc-provider would refuse only after consuming the token: that is
 * answered invalid_target first (refresh-resource.ts), for every refresh request.
 * Client authentication runs only once the token is known to be served, so a client assertion is
 * never spent here and then presented again to oidc-provider; its failures are client-auth.ts's,
 * the same as oidc-provider's.
 *
 * Crash safety is oidc-provider's: the used token is consumed and its successor and the access
 * token written before the answer leaves.
 */
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { corsJsonHeaders } from './grant-claims.js';
import { parseForm } from './form.js';
import { findWithGrant } from './grant-reads.js';
import { consumeAndUpsert } from './issue-together.js';
import { refusedResource } from './refresh-resource.js';
import { accessToken, idToken, parties, replayed, servedForm, servedSource, tokenValue, type UserTokenHost } from './user-tokens.js';

const GTY = 'refresh_token';
const PARAMS = new Set(['refresh_token']);

/** The token response for `req`, or undefined to let oidc-provider answer. */
export async function refreshGrant(host: UserTokenHost, req: HttpRequest): Promise<HttpResponse | undefined> {
  const ready = host.userTokenSetup();
  const request = parseForm(req, host.config.oidc.path);
  const value = request.get('grant_type') === GTY ? request.get('refresh_token') : null;
  if (!value) return undefined;
  // The resource check (refresh-resource.ts) needs the token before oidc-provider runs, built or not.
  const setup = ready ?? (await host.userTokenSetupBuilt());
  const now = Math.floor(Date.now() / 1000);
  const { repo } = setup;
  const found = await findWithGrant(repo, host.tenant, 'RefreshToken', value);
  const refused = await refusedResource(host, setup, req, request, found, now);
  if (refused) return refused;

  const form = ready && servedForm(host, req, GTY, PARAMS);
  const source = form && servedSource(found, 'RefreshToken', now);
  const p = form && source && (await parties(host, setup, req, form, source, GTY, now));
  if (!form || !source || !p) return undefined;
  const token = source.payload;

  // The ID token's signature runs on libuv's pool while the writes below run here; a failure is
  // seen at the await (the catch only keeps it from counting as unhandled meanwhile).
  const scopes = new Set(source.scope.split(' '));
  const signing = scopes.has('openid') ? idToken(host, setup, source, p, [...scopes].join(' '), now) : undefined;
  signing?.catch(() => undefined);

  // Rotation (provider.ts rotateRefreshToken: true): the used token is consumed, its successor saved
  // with the same members in oidc-provider's order.
  const gty = typeof token.gty === 'string' && !token.gty.endsWith(GTY) ? `${token.gty} ${GTY}` : token.gty;
  const rtTtl = host.config.oidc.ttl.refresh_token;
  const rtValue = tokenValue();
  const successor = {
    iat: now,
    exp: now + rtTtl,
    accountId: source.accountId,
    acr: token.acr,
    amr: token.amr,
    authTime: token.authTime,
    expiresWithSession: token.expiresWithSession,
    iiat: token.iiat ?? token.iat ?? now,
    grantId: source.grantId,
    gty,
    nonce: token.nonce,
    rotations: typeof token.rotations === 'number' ? token.rotations + 1 : 1,
    scope: source.scope,
    sessionUid: token.sessionUid,
    sid: token.sid,
    kind: 'RefreshToken',
    jti: rtValue,
    clientId: source.clientId,
  };
  const at = accessToken(host, setup, source, p, gty, now);
  // Issued together (issue-together.ts; one script on Redis): nothing is answered unless the
  // consume and both writes succeed.
  const consumed = await consumeAndUpsert(repo, host.tenant, { model: 'RefreshToken', id: value }, [
    { model: 'RefreshToken', id: rtValue, payload: successor, expiresAt: now + rtTtl },
    { model: 'AccessToken', id: at.value, payload: at.payload, expiresAt: now + at.ttl },
  ]);
  if (!consumed) return replayed(host, repo, source.grantId);
  const id = await signing;
  host.tokenIssued(source.clientId, GTY);

  const body = { access_token: at.value, expires_in: at.ttl, id_token: id, refresh_token: rtValue, scope: p.atScope, token_type: 'Bearer' };
  return { status: 200, headers: corsJsonHeaders(p.origin), body: JSON.stringify(body) };
}
