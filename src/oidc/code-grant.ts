/**
 * The authorization_code grant (the code exchange) answered in the actor (issue 17), as
 * oidc-provider 9 answers it (lib/actions/grants/authorization_code.js, helpers/grant_common.js
 * issueTokens) with this product's configuration: an opaque access token for userinfo, a refresh
 * token when the client may refresh and `offline_access` was granted (oidc-provider's default
 * issueRefreshToken), an ID token when `openid` was. The checks and token shapes it shares with
 * the refresh grant are in user-tokens.ts.
 *
 * Served: a form with exactly grant_type, code, redirect_uri, code_verifier (optional) and the
 * client's authentication by its registered method, no DPoP or attestation headers; a stored code
 * that is live, unconsumed, of this client, for this redirect_uri, whose PKCE challenge (S256)
 * the verifier meets (or neither is there), without DPoP binding, resource, authorization details
 * or `claims` request; the session, grant, user and client as for the refresh grant.
 *
 * Everything else returns undefined before anything is written, and oidc-provider answers: every
 * refusal (a reused code is invalid_grant there, and revokes the grant), an omitted redirect_uri,
 * other parameters. The code is consumed and the tokens written before the answer leaves.
 */
import { timingSafeEqual } from 'node:crypto';
import { redirectUriRegistered } from '../clients/rules.js';
import { OAuthError } from '../http/problem.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import type { OidcUpsert } from '../storage/types.js';
import { pkceChallenge } from '../social/upstream.js';
import { corsJsonHeaders } from './grant-claims.js';
import { findWithGrant } from './grant-reads.js';
import { consumeAndUpsert } from './issue-together.js';
import { accessToken, idToken, parties, replayed, servedForm, servedSource, tokenValue, type UserTokenHost } from './user-tokens.js';

const GTY = 'authorization_code';
const PARAMS = new Set(['code', 'redirect_uri', 'code_verifier']);
/** RFC 7636 4.1 (oidc-provider's pkce_format.js); anything else is its invalid_request. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

/** helpers/pkce.js: with a challenge or a verifier, both, and the S256 of the verifier equal to the challenge. */
function pkceHolds(verifier: string | undefined, challenge: unknown, method: unknown): boolean {
  if (verifier === undefined && challenge === undefined) return true;
  if (verifier === undefined || typeof challenge !== 'string' || method !== 'S256') return false;
  const expected = Buffer.from(pkceChallenge(verifier));
  const given = Buffer.from(challenge);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** The token response for `req`, or undefined to let oidc-provider answer. */
export async function authorizationCodeGrant(host: UserTokenHost, req: HttpRequest): Promise<HttpResponse | undefined> {
  const setup = host.userTokenSetup();
  const form = setup && servedForm(host, req, GTY, PARAMS);
  const value = form?.get('code');
  const redirectUri = form?.get('redirect_uri');
  const verifier = form?.get('code_verifier') ?? undefined;
  if (!setup || !form || !value || !redirectUri || (verifier !== undefined && !VERIFIER.test(verifier))) return undefined;
  const now = Math.floor(Date.now() / 1000);
  const { repo } = setup;

  const source = servedSource(await findWithGrant(repo, host.tenant, 'AuthorizationCode', value), 'AuthorizationCode', now);
  if (!source || source.payload.redirectUri !== redirectUri || !pkceHolds(verifier, source.payload.codeChallenge, source.payload.codeChallengeMethod)) return undefined;
  const p = await parties(host, setup, req, form, source, GTY, now);
  if (!p) return undefined;
  // A redirect URI the client lost while the user signed in (oidc-provider issues the code for the
  // URI the request named): refused, as its authorization endpoint now refuses that URI.
  if (!redirectUriRegistered(p.client.metadata, redirectUri)) throw new OAuthError(400, 'invalid_grant', 'redirect_uri is no longer registered for the client');
  const code = source.payload;

  // The ID token's signature runs on libuv's pool while the writes below run here.
  const scopes = new Set(source.scope.split(' '));
  const signing = scopes.has('openid') ? idToken(host, setup, source, p, source.scope, now) : undefined;
  signing?.catch(() => undefined);

  const at = accessToken(host, setup, source, p, GTY, now);
  let refresh: { value: string; payload: Record<string, unknown>; ttl: number } | undefined;
  if (p.client.metadata.grant_types.includes('refresh_token') && scopes.has('offline_access')) {
    const ttl = host.config.oidc.ttl.refresh_token;
    const rtValue = tokenValue();
    // grant_common.js issueTokens' RefreshToken, members in its order (iiat last: the model sets it).
    const payload = {
      iat: now,
      exp: now + ttl,
      accountId: source.accountId,
      acr: code.acr,
      amr: code.amr,
      authTime: code.authTime,
      expiresWithSession: code.expiresWithSession,
      grantId: source.grantId,
      gty: GTY,
      nonce: code.nonce,
      rotations: 0,
      scope: source.scope,
      sessionUid: code.sessionUid,
      sid: code.sid,
      kind: 'RefreshToken',
      jti: rtValue,
      clientId: source.clientId,
      iiat: now,
    };
    refresh = { value: rtValue, payload, ttl };
  }
  // Issued together (see refresh-grant.ts): answered only once all succeeded.
  const rows: OidcUpsert[] = [{ model: 'AccessToken', id: at.value, payload: at.payload, expiresAt: now + at.ttl }];
  if (refresh) rows.push({ model: 'RefreshToken', id: refresh.value, payload: refresh.payload, expiresAt: now + refresh.ttl });
  const consumed = await consumeAndUpsert(repo, host.tenant, { model: 'AuthorizationCode', id: value }, rows);
  if (!consumed) return replayed(host, repo, source.grantId);
  const id = await signing;
  host.tokenIssued(source.clientId, GTY);

  const body = { access_token: at.value, expires_in: at.ttl, id_token: id, refresh_token: refresh?.value, scope: p.atScope, token_type: 'Bearer' };
  return { status: 200, headers: corsJsonHeaders(p.origin), body: JSON.stringify(body) };
}
