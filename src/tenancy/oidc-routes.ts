/**
 * The OIDC sub-routes a tenant actor answers itself, as a table: path (exact or pattern), methods,
 * and what to do. A route may return undefined to hand the request on to oidc-provider (the token
 * and introspection fast paths decline what they do not serve); anything that matches no route goes
 * to oidc-provider too. Errors become OAuth errors in the actor (handleOidc), the one place for OIDC.
 */
import { etagMatches, publicDocument } from '../http/etag.js';
import { OAuthError, oauthResponse } from '../http/problem.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { clientCredentialsGrant, introspect, type TokenContext } from '../oidc/access-tokens.js';
import { offlineAccessNeedsConsent, withDeviceInterval } from '../oidc/device-and-auth.js';
import { handleInteraction, type InteractionAction, type SignInHost } from '../oidc/interactions.js';
import { handleSocial, type SocialContext } from '../oidc/social-signin.js';
import { OIDC_ROUTES } from '../oidc/provider.js';
import { userinfo, type UserinfoHost } from '../oidc/userinfo.js';
import { refreshGrant } from '../oidc/refresh-grant.js';
import { authorizationCodeGrant } from '../oidc/code-grant.js';
import type { UserTokenHost } from '../oidc/user-tokens.js';
import { silentAuthorization, type SilentAuthHost } from '../oidc/silent-auth.js';
import { autoSubmitHeaders, pageHeaders } from '../ui/html.js';
import { PASSKEY_SCRIPT, PASSKEY_SCRIPT_ETAG } from '../ui/passkey-script.js';
import { STYLESHEET, STYLESHEET_ETAG } from '../ui/style.js';

export const DISCOVERY_PATH = '/.well-known/openid-configuration';
const PUBLIC_CACHE = 'public, max-age=300, must-revalidate';
const JWKS_TYPE = 'application/jwk-set+json; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';

/** What the routes need of the actor. */
export interface OidcRouteHost extends TokenContext, UserinfoHost, UserTokenHost, SilentAuthHost {
  readonly tenant: string;
  discovery(): Promise<{ body: Buffer; etag: string }>;
  signInHost(): Promise<SignInHost>;
  /** Hands a request to oidc-provider. */
  bridge(req: HttpRequest): Promise<HttpResponse>;
  /** The device-flow poll guard: an answer when the poll is refused (slow_down), else undefined. */
  devicePoll(req: HttpRequest): Promise<HttpResponse | undefined>;
  /** The tenant's brand stylesheet (src/ui/branding.ts). */
  brandCss(): { body: string; etag: string };
  /** Dynamic client registration (register-rp.ts) for this tenant. */
  registerClient(req: HttpRequest): Promise<HttpResponse>;
  /** Social login of the tenant's current config; undefined without enabled providers. */
  socialContext(): SocialContext | undefined;
}

type Run = (host: OidcRouteHost, req: HttpRequest, match: RegExpExecArray | null) => Promise<HttpResponse | undefined>;

interface OidcRoute {
  path: string | RegExp;
  /** Methods this route serves; others fall through to the next route (oidc-provider at last). */
  methods?: ReadonlySet<string>;
  run: Run;
}

const GET = new Set(['GET', 'HEAD']);
const POST = new Set(['POST']);
const GET_POST = new Set(['GET', 'POST']);

/** JWKS and discovery headers: public, cacheable, readable from any origin; one object per content type. */
const headersByType = new Map<string, Readonly<Record<string, string>>>();

export function documentResponse(req: Pick<HttpRequest, 'method' | 'headers'>, doc: { body: Buffer; etag: string }, type = JSON_TYPE): HttpResponse {
  let headers = headersByType.get(type);
  if (!headers) headersByType.set(type, (headers = { 'content-type': type, 'cache-control': PUBLIC_CACHE, 'access-control-allow-origin': '*' }));
  return publicDocument(req, doc, headers);
}

export function jwksResponse(host: Pick<TokenContext, 'keys'>, req: Pick<HttpRequest, 'method' | 'headers'>): HttpResponse {
  return documentResponse(req, { body: host.keys.jwksBody, etag: host.keys.jwksEtag }, JWKS_TYPE);
}

/** 303 to the account page on the tenant's origin (a POST to a former action arrives there as a GET: nothing changes). */
function toAccountPage(): HttpResponse {
  return { status: 303, headers: { location: '/account', 'cache-control': 'no-store' } };
}

/** The interaction pages' actions after `/interaction/:uid/` (show has none): the route and its metrics label. */
const INTERACTION_ACTIONS: ReadonlySet<InteractionAction> = new Set<InteractionAction>(['login', 'mfa', 'confirm', 'abort', 'passkey', 'passkey/options', 'mfa/options', 'enrol', 'enrol/options', 'signup', 'resend', 'continue']);
const INTERACTION_ROUTE = new RegExp(`^\\/interaction\\/([A-Za-z0-9_-]{1,128})(?:\\/(${[...INTERACTION_ACTIONS].join('|')}))?$`);
/** Social login inside an interaction (src/oidc/social-signin.ts): start with a provider, link confirmation. */
const INTERACTION_SOCIAL = /^\/interaction\/[A-Za-z0-9_-]{1,128}\/(?:social\/[a-z][a-z0-9-]{0,31}|link|link-cancel)$/;

const ROUTES: readonly OidcRoute[] = [
  { path: DISCOVERY_PATH, methods: GET, run: async (host, req) => documentResponse(req, await host.discovery()) },
  { path: '/jwks', methods: GET, run: async (host, req) => jwksResponse(host, req) },
  { path: '/register-rp', methods: POST, run: (host, req) => host.registerClient(req) },
  {
    // The tenant's brand (palettes, font): its own stylesheet, same origin (CSP style-src 'self').
    path: '/assets/brand.css',
    methods: GET,
    run: async (host, req) => {
      const css = host.brandCss();
      const headers = { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=300', etag: css.etag, 'x-content-type-options': 'nosniff' };
      return etagMatches(req.headers['if-none-match'], css.etag) ? { status: 304, headers } : { status: 200, headers, body: css.body };
    },
  },
  {
    path: '/assets/app.css',
    methods: GET,
    run: async (_host, req) => {
      const headers = { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=86400', etag: STYLESHEET_ETAG, 'x-content-type-options': 'nosniff' };
      return etagMatches(req.headers['if-none-match'], STYLESHEET_ETAG) ? { status: 304, headers } : { status: 200, headers, body: STYLESHEET };
    },
  },
  {
    path: INTERACTION_ROUTE,
    run: async (host, req, m) => {
      const action = (m?.[2] ?? 'show') as InteractionAction;
      // show: GET only; signup: the form (GET) and its submission (POST); the rest: POST only.
      const allow = action === 'show' ? 'GET' : action === 'signup' ? 'GET, POST' : 'POST';
      if (!allow.split(', ').includes(req.method)) return { status: 405, headers: { allow, ...pageHeaders() }, body: 'Method Not Allowed' };
      return handleInteraction(await host.signInHost(), req, m?.[1] ?? '', action);
    },
  },
  // Social login (src/oidc/social-signin.ts): start, callback (GET, form_post), link confirmation; linked accounts.
  { path: /^\/social\/[a-z][a-z0-9-]{0,31}\/callback$/, run: async (host, req, m) => handleSocial(await host.signInHost(), host.socialContext(), req, m?.[0] ?? '') },
  { path: INTERACTION_SOCIAL, run: async (host, req, m) => handleSocial(await host.signInHost(), host.socialContext(), req, m?.[0] ?? '') },
  // The former two-step, passkey and linked-accounts pages: all live on the account page now (src/ui/account/).
  { path: /^\/account\/(?:mfa(?:\/disable)?|passkeys(?:\/(?:options|rename|remove))?|social(?:\/unlink)?)$/, run: async () => toAccountPage() },
  // Passkeys (issue 14): the ceremony script, and the account page's passkey actions.
  {
    path: '/assets/passkey.js',
    methods: GET,
    run: async (_host, req) => {
      const headers = { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=3600', etag: PASSKEY_SCRIPT_ETAG, 'x-content-type-options': 'nosniff' };
      return etagMatches(req.headers['if-none-match'], PASSKEY_SCRIPT_ETAG) ? { status: 304, headers } : { status: 200, headers, body: PASSKEY_SCRIPT };
    },
  },
  // Fast paths: client_credentials for the Management API, the user grants (refresh, code
  // exchange), then the device-flow poll guard.
  { path: '/token', methods: POST, run: async (host, req) => (await clientCredentialsGrant(host, req)) ?? (await refreshGrant(host, req)) ?? (await authorizationCodeGrant(host, req)) ?? (await host.devicePoll(req)) },
  { path: '/token/introspection', methods: POST, run: (host, req) => introspect(host, req) },
  // Userinfo with a plain user access token (oidc/userinfo.ts); anything else to oidc-provider.
  { path: OIDC_ROUTES.userinfo, methods: GET_POST, run: (host, req) => userinfo(host, req) },
  // A silent re-authentication's common case (oidc/silent-auth.ts); anything else to oidc-provider.
  { path: '/auth', run: async (host, req) => (await silentAuthorization(host, req)) ?? secureHtml(await host.bridge(offlineAccessNeedsConsent(req))) },
  { path: '/device/auth', methods: POST, run: async (host, req) => withDeviceInterval(await host.bridge(req), host.config.oidc.device_poll_interval) },
];

/**
 * Every OIDC path with a metrics label of its own: oidc-provider's endpoints (from the one route
 * list it is configured with, so a renamed endpoint cannot drift from its label), its sub-pages,
 * and the routes of the table above.
 */
const LABELLED = new Map<string, string>(
  [
    ...Object.values(OIDC_ROUTES),
    '/session/end/confirm', '/session/end/success', '/device/confirm',
    ...ROUTES.flatMap((r) => (typeof r.path === 'string' ? [r.path] : [])),
    // Each label made once: the metrics look it up by value on every request (app.ts record).
  ].map((sub) => [sub, `oidc${sub}`]),
);

/**
 * oidc-provider's router matches ASCII letters in any case and ignores one trailing slash
 * (lib/helpers/router.js), so `/TOKEN/` is its token endpoint. Everything in front of it (the
 * client-authentication throttle, the device-code limit, this table's fast paths and guards)
 * compares exact paths: each such path is reached under its one spelling (canonicalSub), or
 * `/token/` would skip the throttle and `/device/` the limit on guessing user codes.
 */
const SPELLINGS = new Map<string, string>(
  [...Object.values(OIDC_ROUTES), '/session/end/confirm', '/session/end/success', DISCOVERY_PATH, '/.well-known/oauth-authorization-server'].map((sub) => [sub.toLowerCase(), sub]),
);
/** oidc-provider's routes with a parameter (`/auth/:uid`, `/reg/:clientId`, `/device/:uid`): the head's spelling. */
const PARAMETER_HEADS = new Set<string>([OIDC_ROUTES.authorization, OIDC_ROUTES.registration, OIDC_ROUTES.code_verification]);

/** The spelling of `sub` this table and the throttle know, when oidc-provider would serve `sub` as that path; else `sub`. */
export function canonicalSub(sub: string): string {
  if (SPELLINGS.has(sub)) return sub;
  const trimmed = sub.length > 1 && sub.endsWith('/') ? sub.slice(0, -1) : sub;
  const lower = trimmed.replace(/[A-Z]+/g, (s) => s.toLowerCase());
  const known = SPELLINGS.get(lower);
  if (known !== undefined) return known;
  const slash = lower.indexOf('/', 1);
  if (slash > 0 && !lower.includes('/', slash + 1) && PARAMETER_HEADS.has(lower.slice(0, slash))) return lower.slice(0, slash) + trimmed.slice(slash);
  return sub;
}

/**
 * The route label of an OIDC path (below the mount path): the endpoint, with interaction ids and
 * anything unknown folded, so a client cannot grow the metrics' label sets without bound.
 */
export function oidcRouteLabel(path: string): string {
  const sub = canonicalSub(path);
  const labelled = LABELLED.get(sub);
  if (labelled !== undefined) return labelled;
  if (sub.startsWith('/interaction/')) return interactionLabel(sub);
  if (sub.startsWith('/reg/')) return 'oidc/reg/:client_id';
  if (sub.startsWith('/device/')) return 'oidc/device/:action';
  return 'oidc:other';
}

/**
 * An interaction path's label: the page or one of its known actions, else one `other` label. The
 * suffix is never taken from the path as it is: any text after the uid would be a series of its
 * own, and every request makes one, even one refused before a tenant is resolved.
 */
/** Each label made once (the metrics look it up by value on every request). */
const INTERACTION_LABELS = new Map<string, string>([...INTERACTION_ACTIONS].map((a) => [a, `oidc/interaction/:uid/${a}`]));
function interactionLabel(sub: string): string {
  const m = INTERACTION_ROUTE.exec(sub);
  if (m) return m[2] === undefined ? 'oidc/interaction/:uid' : (INTERACTION_LABELS.get(m[2]) ?? 'oidc/interaction:other');
  if (INTERACTION_SOCIAL.test(sub)) {
    const tail = sub.slice(sub.lastIndexOf('/') + 1);
    return sub.includes('/social/') ? 'oidc/interaction/:uid/social/:provider' : `oidc/interaction/:uid/${tail}`;
  }
  return 'oidc/interaction:other';
}

/** The answer of the first route that serves the request, or oidc-provider's. */
export async function routeOidc(host: OidcRouteHost, req: HttpRequest, sub: string): Promise<HttpResponse> {
  for (const route of ROUTES) {
    if (route.methods && !route.methods.has(req.method)) continue;
    let match: RegExpExecArray | null = null;
    if (typeof route.path === 'string') {
      if (route.path !== sub) continue;
    } else if (!(match = route.path.exec(sub))) continue;
    const res = await route.run(host, req, match);
    if (res) return res;
    break; // declined: oidc-provider answers
  }
  return unrecognizedRoute(req, secureHtml(await host.bridge(req)));
}

/**
 * A path (or method) oidc-provider has no route for gets Koa's bare `404 text/plain "Not Found"`:
 * answered as an OAuth error instead, in the words oidc-provider's own router used for it, like
 * every other error under the OIDC path (docs/decisions.md "Error pages").
 */
function unrecognizedRoute(req: HttpRequest, res: HttpResponse): HttpResponse {
  const type = res.headers?.['content-type'];
  // Koa's answer to HEAD has no body and so no content type.
  const koas = typeof type === 'string' ? type.startsWith('text/plain') : req.method === 'HEAD';
  if (res.status !== 404 || !koas) return res;
  return oauthResponse(new OAuthError(404, 'invalid_request', `unrecognized route or not allowed method (${req.method} on ${req.path})`));
}

/**
 * HTML that oidc-provider rendered without our page headers (its error paths, the form_post
 * response mode) still gets them; form_post's auto-submit script is allowed by its hash. The
 * logout without a session (its auto-submitting form) gets its headers inside the provider,
 * where the validated post_logout_redirect_uri is known (oidc/logout-pages.ts).
 */
export function secureHtml(res: HttpResponse): HttpResponse {
  const type = res.headers?.['content-type'];
  // Redirects carry a tiny HTML body nobody renders: framing headers there would only get in the way.
  if (res.status >= 300 && res.status < 400) return res;
  if (typeof type !== 'string' || !type.startsWith('text/html') || res.headers?.['content-security-policy']) return res;
  res.headers = { ...res.headers, ...autoSubmitHeaders(res.body?.toString() ?? ''), 'content-type': type };
  return res;
}
