/**
 * The authorization request of a silent re-authentication (`prompt=none`, issue 17) answered in
 * the actor, as oidc-provider 9 answers it (lib/actions/authorization: the middleware stack of the
 * `authorization` route, the default interaction policy and loadExistingGrant, the code response
 * type and the query response mode) with this product's configuration (provider.ts).
 *
 * Served: GET with only client_id, redirect_uri, response_type=code, scope, state, nonce,
 * prompt=none, code_challenge, code_challenge_method=S256 and response_mode=query, each once and
 * non-empty; a scope of openid, profile, email, roles (offline_access is dropped, as oidc-provider's
 * checkScope drops it without prompt=consent); an Accept header oidc-provider's redirect answers
 * with HTML (none, or text/html or *\/* listed); the signed session cookie (session-cookie.ts) of a
 * live, non-transient stored Session with an account and an authorization of this client (sid and
 * grant); an active web client allowed the code response type and grant, with this exact redirect_uri, no
 * default_max_age, the scopes in its own scope list if it has one, and PKCE (S256) where
 * provider.ts requires it; a live grant of this client and account, nothing rejected, whose OIDC
 * scope holds every requested scope (so the consent prompt has nothing to ask); a user who may sign
 * in; under required MFA, a session that proved a second factor (sign-in-config.ts asks again otherwise). Answered: the AuthorizationCode with oidc-provider's members in its order, the Session saved
 * again (sliding expiry, members in the order oidc-provider's model re-saves them), the 303 to the
 * redirect_uri with code, state and iss, and the session cookies re-set.
 *
 * Everything else returns undefined before anything is written, and oidc-provider answers it:
 * login_required, consent_required, every invalid request, other parameters, other response types
 * and modes.
 */
import type { Config } from '../config/index.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import type { ClientRecord, OidcPayloadRepository, UserWithoutSecrets } from '../storage/types.js';
import { canSignIn } from './accounts.js';
import { sessionMeetsMfaPolicy } from './passkey-steps.js';
import { expired, grantOidcScope, isObject, stored, type Payload } from './grant-claims.js';
import { upsertTogether } from './issue-together.js';
import { sessionSetCookies, signedSessionCookie } from './session-cookie.js';
import { defined, tokenValue } from './user-tokens.js';

/** What the tenant's oidc-provider build adds for this path (tenancy/actor.ts buildProvider). */
export interface SilentAuthSetup {
  /** The build's storage, with sessions under keyed ids (bearer-at-rest.ts). */
  readonly repo: OidcPayloadRepository;
  /** The build's cookie keys (provider.ts `cookies.keys`). */
  readonly cookieKeys: readonly string[];
}

export interface SilentAuthHost {
  readonly tenant: string;
  readonly issuer: string;
  readonly config: Config;
  /** The setup of the tenant's built oidc-provider; undefined while it is not built. */
  silentAuthSetup(): SilentAuthSetup | undefined;
  loadClient(clientId: string): Promise<ClientRecord | undefined>;
  findTokenUser(sub: string): Promise<UserWithoutSecrets | undefined>;
}

const PARAMS = new Set(['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'nonce', 'prompt', 'code_challenge', 'code_challenge_method', 'response_mode']);
/** The OIDC scopes served (no resource server's): with these, oidc-provider resolves no resource. */
const SCOPES = new Set(['openid', 'profile', 'email', 'roles', 'offline_access']);
/** helpers/pkce_format.js. */
const CHALLENGE = /^[\w.\-~]{43,128}$/;
/** What Koa's redirect leaves as it is (encodeurl's allowed characters, `%` only as an escape). */
const URL_STABLE = /^(?:[\x21\x23-\x24\x26-\x3B\x3D\x3F-\x5F\x61-\x7A\x7C\x7E]|%[0-9A-Fa-f]{2})*$/;
/** The members oidc-provider's Session model keeps (models/session.js IN_PAYLOAD). */
const SESSION_MEMBERS = new Set(['iat', 'exp', 'jti', 'kind', 'uid', 'acr', 'amr', 'accountId', 'loginTs', 'transient', 'state', 'authorizations']);

/**
 * Whether Koa's `ctx.accepts('html')` is certainly true: no Accept header, or one listing
 * text/html or *\/* without parameters and nothing refused (q=0). Anything else is declined.
 */
function acceptsHtml(accept: string | undefined): boolean {
  if (accept === undefined) return true;
  if (/q\s*=\s*0(?:\.0*)?\s*(?:[,;]|$)/i.test(accept)) return false;
  return accept.split(',').some((e) => {
    const type = e.trim().toLowerCase();
    return type === 'text/html' || type === '*/*';
  });
}

/** escape-html's entities, as Koa writes the redirect's HTML body. */
const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

interface AuthRequest {
  clientId: string;
  redirectUri: string;
  /** The requested scopes as checkScope leaves them (offline_access dropped). */
  scopes: string[];
  state: string | undefined;
  nonce: string | undefined;
  challenge: string | undefined;
}

/** The request's parameters when they are the common case this path serves, else undefined. */
function servedRequest(req: HttpRequest): AuthRequest | undefined {
  if (req.method !== 'GET' || !acceptsHtml(req.headers.accept)) return undefined;
  const query = new URLSearchParams(req.rawQuery);
  const p = new Map<string, string>();
  for (const [name, value] of query) {
    if (!PARAMS.has(name) || p.has(name) || !value) return undefined;
    p.set(name, value);
  }
  const clientId = p.get('client_id');
  const redirectUri = p.get('redirect_uri');
  const scope = p.get('scope');
  const challenge = p.get('code_challenge');
  const method = p.get('code_challenge_method');
  if (!clientId || !redirectUri || !scope || p.get('prompt') !== 'none' || p.get('response_type') !== 'code') return undefined;
  if ((p.has('response_mode') && p.get('response_mode') !== 'query') || (challenge === undefined) !== (method === undefined)) return undefined;
  if (challenge !== undefined && (method !== 'S256' || !CHALLENGE.test(challenge))) return undefined;
  const requested = scope.split(' ');
  if (new Set(requested).size !== requested.length || requested.some((s) => !SCOPES.has(s)) || !requested.includes('openid')) return undefined;
  const scopes = requested.filter((s) => s !== 'offline_access');
  return { clientId, redirectUri, scopes, state: p.get('state'), nonce: p.get('nonce'), challenge };
}

/** The client as oidc-provider would take it for this request (checkClient to checkPKCE), or undefined. */
function clientServes(client: ClientRecord | undefined, a: AuthRequest): client is ClientRecord {
  if (!client?.active) return false;
  const m = client.metadata;
  // A code client without the authorization_code grant is metadata oidc-provider refuses to load.
  if (m.application_type === 'native' || m.default_max_age !== undefined || !m.response_types.includes('code') || !m.grant_types.includes('authorization_code')) return false;
  if (!m.redirect_uris.includes(a.redirectUri)) return false;
  if (m.scope !== undefined) {
    const allowed = new Set(m.scope.split(' '));
    if (a.scopes.some((s) => !allowed.has(s))) return false;
  }
  // provider.ts pkce.required: public clients always, confidential ones when require_pkce says so.
  return a.challenge !== undefined || (m.token_endpoint_auth_method !== 'none' && m.require_pkce !== true);
}

/**
 * The Session's payload as oidc-provider saves it again: its model's members in the order its
 * instance holds them (the found ones but jti and kind, then kind, then jti), after iat and the
 * new exp; repo.upsert then replaces jti by its sealed copy (bearer-at-rest.ts).
 */
function resavedSession(found: Payload, exp: number): Payload {
  const members: Payload = {};
  for (const [k, v] of Object.entries(found)) if (SESSION_MEMBERS.has(k) && k !== 'jti' && k !== 'kind') members[k] = v;
  // save() sets the instance's exp (in its place); iat stays.
  members.exp = exp;
  members.kind = found.kind;
  members.jti = found.jti;
  return defined({ iat: found.iat, exp, ...members });
}

/** The redirect for `req`, or undefined to let oidc-provider answer. */
export async function silentAuthorization(host: SilentAuthHost, req: HttpRequest): Promise<HttpResponse | undefined> {
  const setup = host.silentAuthSetup();
  const a = setup && servedRequest(req);
  const cookie = a && signedSessionCookie(req.headers.cookie, setup.cookieKeys);
  if (!setup || !a || !cookie) return undefined;
  const sessionId = cookie.id;
  const now = Math.floor(Date.now() / 1000);
  const { repo } = setup;

  const [sessionRow, client] = await Promise.all([repo.find(host.tenant, 'Session', sessionId), host.loadClient(a.clientId)]);
  const session = stored(sessionRow, 'Session', now);
  if (!session || expired(session, now) || !clientServes(client, a)) return undefined;
  const { accountId, uid } = session;
  const auth = isObject(session.authorizations) ? session.authorizations[a.clientId] : undefined;
  if (typeof accountId !== 'string' || !accountId || typeof uid !== 'string' || session.jti !== sessionId || typeof session.iat !== 'number' || session.transient !== undefined) return undefined;
  if (!isObject(auth) || typeof auth.grantId !== 'string' || typeof auth.sid !== 'string') return undefined;

  const [grantRow, user] = await Promise.all([repo.find(host.tenant, 'Grant', auth.grantId), host.findTokenUser(accountId)]);
  const grant = stored(grantRow, 'Grant', now);
  if (!grant || expired(grant, now) || grant.clientId !== a.clientId || grant.accountId !== accountId || grant.rejected !== undefined) return undefined;
  if (!user || !canSignIn(user) || user.id !== accountId) return undefined;
  // A session without the second factor the MFA policy requires: oidc-provider answers login_required.
  if (!sessionMeetsMfaPolicy(host.config.security.mfa, session.amr)) return undefined;
  // The consent prompt's op_scopes_missing: every requested scope already granted.
  const granted = grantOidcScope(grant)?.split(' ');
  if (!granted || a.scopes.some((s) => !granted.includes(s))) return undefined;
  // combinedScope: the grant's OIDC scope (in its order) filtered by the requested ones.
  const scope = granted.filter((s) => a.scopes.includes(s)).join(' ');

  const code = tokenValue();
  const location = new URL(a.redirectUri);
  location.searchParams.set('code', code);
  if (a.state !== undefined) location.searchParams.set('state', a.state);
  location.searchParams.set('iss', host.issuer);
  const href = location.href;
  if (!/^https?:$/.test(location.protocol) || !URL_STABLE.test(href)) return undefined;

  const { ttl } = host.config.oidc;
  // process_response_types.js codeHandler: the AuthorizationCode's members in the order its instance holds them.
  const codePayload = defined({
    iat: now,
    exp: now + ttl.authorization_code,
    accountId,
    acr: session.acr,
    amr: session.amr,
    authTime: session.loginTs,
    codeChallenge: a.challenge,
    codeChallengeMethod: a.challenge === undefined ? undefined : 'S256',
    grantId: auth.grantId,
    nonce: a.nonce,
    redirectUri: a.redirectUri,
    scope,
    sessionUid: uid,
    kind: 'AuthorizationCode',
    jti: code,
    clientId: a.clientId,
    // expiresWithSession's default: no offline_access in the code's scope.
    expiresWithSession: true,
    // Client#includeSid: a back-channel logout URI (provider metadata requires the session with it).
    sid: client.metadata.backchannel_logout_uri ? auth.sid : undefined,
  });
  const sessionExp = now + ttl.session;
  // Written together and awaited before the answer: a crash loses only a code never handed out.
  await upsertTogether(repo, host.tenant, [
    { model: 'AuthorizationCode', id: code, payload: codePayload, expiresAt: now + ttl.authorization_code },
    { model: 'Session', id: sessionId, payload: resavedSession(session, sessionExp), expiresAt: sessionExp },
  ]);

  const body = `Redirecting to ${escapeHtml(href)}.`;
  return {
    status: 303,
    headers: {
      'cache-control': 'no-store',
      location: href,
      'content-type': 'text/html; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
      'set-cookie': sessionSetCookies(cookie, sessionExp, host.issuer.startsWith('https:')),
    },
    body,
  };
}
