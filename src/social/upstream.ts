/**
 * The upstream side of a social sign-in: the authorization URL (code + PKCE S256 + state + nonce)
 * and, at the callback, the code exchanged for the user's verified identity.
 *
 * OpenID Connect (generic `type: "oidc"` and the Google, Microsoft, Apple, GitLab presets):
 * discovery (its `issuer` must be the configured one), the token endpoint, the ID token verified
 * with jose against the upstream's JWKS (signature, `iss`, `aud` = our client_id, `azp`, `exp`,
 * `nonce`), the user info endpoint when there is one (its `sub` must match). Microsoft's multi-tenant
 * endpoints (common / organizations / consumers) advertise the issuer `.../{tenantid}/v2.0`: the
 * token's `iss` must be exactly that template with the token's own `tid`.
 * GitHub and Facebook (OAuth 2.0): the token endpoint, then their user APIs; from GitHub only the
 * verified primary address of /user/emails counts as a verified e-mail; Facebook's Graph API
 * returns `email` only for a confirmed address, and is called with `appsecret_proof`.
 * Every request goes through upstreamFetch (http.ts).
 */
import { createHash, createHmac } from 'node:crypto';
import { SignJWT, createLocalJWKSet, errors as joseErrors, importPKCS8, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose';
import QuickLRU from 'quick-lru';
import type { AppContext } from '../context.js';
import { UpstreamError, jsonObject, upstreamFetch } from './http.js';
import type { SocialProvider } from './providers.js';
import { validEmail } from '../users/schema.js';

export { UpstreamError } from './http.js';

/** What the upstream vouches for. */
export interface UpstreamIdentity {
  /** The upstream's stable user id (`sub`, GitHub/Facebook `id`). */
  subject: string;
  email: string | null;
  emailVerified: boolean;
  /** Every claim the upstream returned (ID token, user info or user API), for the attribute mapping. */
  claims: Record<string, unknown>;
}

interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  userinfo_endpoint?: string;
  id_token_signing_alg_values_supported?: string[];
  token_endpoint_auth_methods_supported?: string[];
  authorization_response_iss_parameter_supported?: boolean;
}

const DISCOVERY_TTL_MS = 3600_000;
const JWKS_TTL_MS = 600_000;
/** An unknown `kid` refetches the key set, at most this often (a token cannot force a fetch per request). */
const JWKS_REFETCH_MS = 60_000;
const CLOCK_TOLERANCE_S = 60;
const ASYMMETRIC = /^(RS|PS|ES)(256|384|512)$|^EdDSA$|^ES256K$/;

// Shared by every tenant of the instance: discovery documents and key sets are public.
const discoveries = new QuickLRU<string, { doc: Discovery; until: number }>({ maxSize: 1000 });
const keySets = new QuickLRU<string, { jwks: ReturnType<typeof createLocalJWKSet>; fetched: number }>({ maxSize: 1000 });

export function pkceChallenge(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

async function discover(ctx: AppContext, p: SocialProvider, timeoutMs: number): Promise<Discovery> {
  const issuer = p.issuer!;
  const cached = discoveries.get(issuer);
  if (cached && cached.until > Date.now()) return cached.doc;
  const url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
  const raw = jsonObject(await upstreamFetch(ctx, url, { headers: { accept: 'application/json' }, timeoutMs }), 'discovery');
  const doc = {
    issuer: str(raw.issuer),
    authorization_endpoint: str(raw.authorization_endpoint),
    token_endpoint: str(raw.token_endpoint),
    jwks_uri: str(raw.jwks_uri),
    userinfo_endpoint: str(raw.userinfo_endpoint),
    id_token_signing_alg_values_supported: Array.isArray(raw.id_token_signing_alg_values_supported) ? raw.id_token_signing_alg_values_supported.filter((a): a is string => typeof a === 'string') : undefined,
    token_endpoint_auth_methods_supported: Array.isArray(raw.token_endpoint_auth_methods_supported) ? raw.token_endpoint_auth_methods_supported.filter((a): a is string => typeof a === 'string') : undefined,
    authorization_response_iss_parameter_supported: raw.authorization_response_iss_parameter_supported === true,
  };
  if (!doc.issuer || !doc.authorization_endpoint || !doc.token_endpoint || !doc.jwks_uri) throw new UpstreamError('invalid', 'discovery: issuer, authorization_endpoint, token_endpoint or jwks_uri missing');
  // OpenID Connect Discovery 1.0 section 4.3: the document must name the issuer it was fetched for.
  const expected = p.tidIssuer ? 'https://login.microsoftonline.com/{tenantid}/v2.0' : issuer;
  if (doc.issuer !== expected && !(p.tidIssuer && doc.issuer === issuer)) throw new UpstreamError('invalid', `discovery: issuer ${doc.issuer} is not ${expected}`);
  const full = doc as Discovery;
  discoveries.set(issuer, { doc: full, until: Date.now() + DISCOVERY_TTL_MS });
  return full;
}

async function keySet(ctx: AppContext, uri: string, timeoutMs: number, refresh: boolean): Promise<ReturnType<typeof createLocalJWKSet>> {
  const cached = keySets.get(uri);
  const now = Date.now();
  if (cached && now - cached.fetched < (refresh ? JWKS_REFETCH_MS : JWKS_TTL_MS)) return cached.jwks;
  const raw = jsonObject(await upstreamFetch(ctx, uri, { headers: { accept: 'application/json' }, timeoutMs }), 'jwks');
  if (!Array.isArray(raw.keys)) throw new UpstreamError('invalid', 'jwks: no keys');
  const jwks = createLocalJWKSet(raw as unknown as JSONWebKeySet);
  keySets.set(uri, { jwks, fetched: now });
  return jwks;
}

/** The URL that sends the browser to the upstream. */
export async function authorizationUrl(ctx: AppContext, p: SocialProvider, o: { redirectUri: string; state: string; nonce: string; verifier: string; timeoutMs: number }): Promise<string> {
  const endpoint = p.kind === 'oidc' ? (await discover(ctx, p, o.timeoutMs)).authorization_endpoint : p.endpoints!.authorization;
  const url = new URL(endpoint);
  const params: Record<string, string> = {
    response_type: 'code',
    client_id: p.clientId,
    redirect_uri: o.redirectUri,
    scope: p.scopes.join(p.kind === 'facebook' ? ',' : ' '),
    state: o.state,
    code_challenge: pkceChallenge(o.verifier),
    code_challenge_method: 'S256',
  };
  if (p.kind === 'oidc') params.nonce = o.nonce;
  if (p.responseMode === 'form_post') params.response_mode = 'form_post';
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.href;
}

/** Apple's client secret: an ES256 JWT signed with the team's key (valid for minutes, made per use). */
export async function appleClientSecret(p: SocialProvider, nowS = Math.floor(Date.now() / 1000)): Promise<string> {
  if (!p.apple) throw new UpstreamError('invalid', 'apple: team_id and key_id are required');
  let key: Awaited<ReturnType<typeof importPKCS8>>;
  try {
    key = await importPKCS8(p.clientSecret, 'ES256');
  } catch {
    throw new UpstreamError('invalid', 'apple: client_secret is not a PKCS #8 EC private key');
  }
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: p.apple.keyId })
    .setIssuer(p.apple.teamId)
    .setSubject(p.clientId)
    .setAudience('https://appleid.apple.com')
    .setIssuedAt(nowS)
    .setExpirationTime(nowS + 300)
    .sign(key);
}

async function tokenRequest(ctx: AppContext, p: SocialProvider, endpoint: string, o: { code: string; redirectUri: string; verifier: string; timeoutMs: number }, basic: boolean): Promise<Record<string, unknown>> {
  const form = new URLSearchParams({ grant_type: 'authorization_code', code: o.code, redirect_uri: o.redirectUri, code_verifier: o.verifier });
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  const secret = p.name === 'apple' ? await appleClientSecret(p) : p.clientSecret;
  if (basic) {
    // RFC 6749 2.3.1: both parts form-urlencoded before the Basic encoding.
    headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(p.clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
  } else {
    form.set('client_id', p.clientId);
    form.set('client_secret', secret);
  }
  return jsonObject(await upstreamFetch(ctx, endpoint, { method: 'POST', headers, body: form.toString(), timeoutMs: o.timeoutMs }), 'token');
}

/** The `iss` an ID token must carry (Microsoft's multi-tenant template filled with the token's `tid`). */
export function idTokenIssuer(p: Pick<SocialProvider, 'tidIssuer'>, doc: Pick<Discovery, 'issuer'>, payload: JWTPayload): string {
  if (!p.tidIssuer || !doc.issuer.includes('{tenantid}')) return doc.issuer;
  const tid = payload.tid;
  // A directory id is a GUID; anything else cannot fill the template.
  if (typeof tid !== 'string' || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(tid)) throw new UpstreamError('invalid', 'id_token: no valid tid claim for the multi-tenant issuer');
  return doc.issuer.replace('{tenantid}', tid);
}

/** Verifies an ID token: signature by the upstream's key, issuer, audience, authorized party, time, nonce. */
export async function verifyIdToken(ctx: AppContext, p: SocialProvider, doc: Discovery, idToken: string, nonce: string, timeoutMs: number): Promise<JWTPayload> {
  const algorithms = (doc.id_token_signing_alg_values_supported ?? ['RS256']).filter((a) => ASYMMETRIC.test(a));
  if (!algorithms.length) throw new UpstreamError('invalid', 'discovery: no asymmetric ID token algorithm');
  const verify = async (refresh: boolean) => jwtVerify(idToken, await keySet(ctx, doc.jwks_uri, timeoutMs, refresh), { audience: p.clientId, algorithms, clockTolerance: CLOCK_TOLERANCE_S, requiredClaims: ['iss', 'sub', 'aud', 'exp', 'iat'] });
  let payload: JWTPayload;
  try {
    try {
      payload = (await verify(false)).payload;
    } catch (err) {
      if (!(err instanceof joseErrors.JWKSNoMatchingKey)) throw err;
      payload = (await verify(true)).payload; // the upstream rotated its keys
    }
  } catch (err) {
    if (err instanceof UpstreamError) throw err;
    throw new UpstreamError('invalid', `id_token: ${err instanceof Error ? err.message : String(err)}`);
  }
  // jose checks `iat` is a number but not that it is past: a token minted in the future (a forged or
  // clock-broken upstream) is refused, with the same tolerance as exp and nbf.
  if (typeof payload.iat === 'number' && payload.iat > Date.now() / 1000 + CLOCK_TOLERANCE_S) throw new UpstreamError('invalid', 'id_token: issued in the future (iat)');
  const iss = idTokenIssuer(p, doc, payload);
  if (payload.iss !== iss) throw new UpstreamError('invalid', `id_token: issuer ${String(payload.iss).slice(0, 200)} is not ${iss}`);
  if (Array.isArray(payload.aud) && payload.aud.length > 1 && payload.azp !== p.clientId) throw new UpstreamError('invalid', 'id_token: azp is not our client_id');
  if (payload.azp !== undefined && payload.azp !== p.clientId) throw new UpstreamError('invalid', 'id_token: azp is not our client_id');
  if (payload.nonce !== nonce) throw new UpstreamError('invalid', 'id_token: nonce does not match');
  return payload;
}

/** `email_verified` as upstreams send it (Apple sends the string "true"). */
function verifiedFlag(v: unknown): boolean {
  return v === true || v === 'true';
}

async function oidcIdentity(ctx: AppContext, p: SocialProvider, o: ExchangeInput): Promise<UpstreamIdentity> {
  const doc = await discover(ctx, p, o.timeoutMs);
  // RFC 9207: an `iss` on the callback names the upstream that answered (mix-up defence); one whose
  // discovery says it always sends it must (2.4: a response without it is refused).
  if (!p.tidIssuer) {
    if (o.iss !== undefined && o.iss !== doc.issuer) throw new UpstreamError('invalid', `callback iss ${o.iss.slice(0, 200)} is not ${doc.issuer}`);
    if (o.iss === undefined && doc.authorization_response_iss_parameter_supported) throw new UpstreamError('invalid', 'callback without the iss parameter the upstream announces (RFC 9207)');
  }
  const methods = doc.token_endpoint_auth_methods_supported;
  const basic = p.name !== 'apple' && (!methods || methods.includes('client_secret_basic'));
  const tokens = await tokenRequest(ctx, p, doc.token_endpoint, o, basic);
  const idToken = str(tokens.id_token);
  if (!idToken) throw new UpstreamError('invalid', 'token: no id_token');
  const payload = await verifyIdToken(ctx, p, doc, idToken, o.nonce, o.timeoutMs);
  let claims: Record<string, unknown> = { ...payload };
  const accessToken = str(tokens.access_token);
  if (doc.userinfo_endpoint && accessToken && p.name !== 'apple') {
    const info = jsonObject(await upstreamFetch(ctx, doc.userinfo_endpoint, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' }, timeoutMs: o.timeoutMs }), 'userinfo');
    // OpenID Connect Core 5.3.2: a user info response for another subject is discarded.
    if (info.sub !== payload.sub) throw new UpstreamError('invalid', 'userinfo: sub does not match the id_token');
    claims = { ...info, ...payload };
  }
  const email = str(claims.email) ?? null;
  // Microsoft does not vouch for the `email` claim (any directory admin can set it): only with
  // its "e-mail domain owner verified" claim does it count.
  const emailVerified = email !== null && (p.name === 'microsoft' ? verifiedFlag(claims.email_verified) || verifiedFlag(claims.xms_edov) : verifiedFlag(claims.email_verified));
  if (o.appleUser && p.name === 'apple') {
    // Apple sends the name once, on the first sign-in, in the form post (not in the ID token).
    const name = o.appleUser.name;
    if (name) claims = { given_name: name.firstName, family_name: name.lastName, ...claims };
  }
  return { subject: String(payload.sub), email, emailVerified, claims };
}

async function githubIdentity(ctx: AppContext, p: SocialProvider, o: ExchangeInput): Promise<UpstreamIdentity> {
  const e = p.endpoints!;
  const tokens = await tokenRequest(ctx, p, e.token, o, false);
  // GitHub answers errors to the token request with 200 and an `error` field.
  if (tokens.error !== undefined) throw new UpstreamError('status', `token: ${String(tokens.error).slice(0, 100)}`);
  const accessToken = str(tokens.access_token);
  if (!accessToken) throw new UpstreamError('invalid', 'token: no access_token');
  const headers = { authorization: `Bearer ${accessToken}`, accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' };
  const user = jsonObject(await upstreamFetch(ctx, e.user, { headers, timeoutMs: o.timeoutMs }), 'user');
  if (typeof user.id !== 'number' && typeof user.id !== 'string') throw new UpstreamError('invalid', 'user: no id');
  const res = await upstreamFetch(ctx, e.emails!, { headers, timeoutMs: o.timeoutMs });
  let emails: unknown;
  try {
    emails = JSON.parse(res.body.toString('utf8'));
  } catch {
    emails = undefined;
  }
  if (res.status !== 200 || !Array.isArray(emails)) throw new UpstreamError(res.status === 200 ? 'invalid' : 'status', `emails: HTTP ${res.status}`);
  const primary = emails.find((m): m is { email: string; verified?: unknown } => !!m && typeof m === 'object' && (m as { primary?: unknown }).primary === true && typeof (m as { email?: unknown }).email === 'string');
  const claims: Record<string, unknown> = { ...user, sub: String(user.id), email: primary?.email ?? null };
  return { subject: String(user.id), email: primary?.email ?? null, emailVerified: primary?.verified === true, claims };
}

async function facebookIdentity(ctx: AppContext, p: SocialProvider, o: ExchangeInput): Promise<UpstreamIdentity> {
  const e = p.endpoints!;
  const tokens = await tokenRequest(ctx, p, e.token, o, false);
  const accessToken = str(tokens.access_token);
  if (!accessToken) throw new UpstreamError('invalid', 'token: no access_token');
  // appsecret_proof (Graph API "Securing Requests"): a token taken elsewhere is useless without our
  // app secret, and an app set to "Require App Secret" refuses calls without it.
  const me = new URL(e.user);
  me.searchParams.set('appsecret_proof', createHmac('sha256', p.clientSecret).update(accessToken).digest('hex'));
  const user = jsonObject(await upstreamFetch(ctx, me.href, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' }, timeoutMs: o.timeoutMs }), 'user');
  const id = str(user.id);
  if (!id) throw new UpstreamError('invalid', 'user: no id');
  // The Graph API returns `email` only when the person has confirmed it (docs/decisions.md).
  const email = str(user.email) ?? null;
  return { subject: id, email, emailVerified: email !== null, claims: { ...user, sub: id } };
}

export interface ExchangeInput {
  code: string;
  redirectUri: string;
  verifier: string;
  nonce: string;
  /** The callback's `iss` parameter, when the upstream sent one. */
  iss?: string;
  /** Apple's one-time `user` form field (name on the first sign-in). */
  appleUser?: { name?: { firstName?: string; lastName?: string } };
  timeoutMs: number;
}

/** The authorization code exchanged and the identity verified, or an UpstreamError. */
export async function exchangeCode(ctx: AppContext, p: SocialProvider, o: ExchangeInput): Promise<UpstreamIdentity> {
  const identity = mappedEmail(p, p.kind === 'github' ? await githubIdentity(ctx, p, o) : p.kind === 'facebook' ? await facebookIdentity(ctx, p, o) : await oidcIdentity(ctx, p, o));
  // An address the Management API would refuse (markup, 300 characters, a leading space that looks
  // like another user's) is no address: it neither finds nor creates an account.
  const email = identity.email?.trim();
  return email && validEmail(email) ? { ...identity, email } : { ...identity, email: null, emailVerified: false };
}

/**
 * `attribute_mapping.email` naming another claim than `email` (a directory's `mail` or `upn`): the
 * address is that claim's. It is never verified: `email_verified` (and GitHub's primary flag) vouch
 * for the `email` claim only, so such an address never links an existing account.
 */
export function mappedEmail(p: Pick<SocialProvider, 'mapping'>, identity: UpstreamIdentity): UpstreamIdentity {
  const claim = p.mapping.email;
  if (claim === undefined || claim === 'email') return identity;
  const value = identity.claims[claim];
  return { ...identity, email: typeof value === 'string' && value.length > 0 ? value : null, emailVerified: false };
}

/** Forgets cached discovery documents and key sets (tests; an operator changing an issuer). */
export function clearUpstreamCaches(): void {
  discoveries.clear();
  keySets.clear();
}
