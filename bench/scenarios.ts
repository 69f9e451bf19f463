/**
 * The scenarios. Each says what it sends to each server (a scenario the baseline cannot serve has
 * no baseline request and prints as "product only") and how to recognise a correct answer; the
 * check runs once before and once after the load (not per response, which would cost
 * load-generator CPU on a machine where it shares cores with the servers), so a scenario that
 * quietly measures an error path is caught.
 *
 * Most requests are the same every time. Two are not: a refresh token is rotated on every use, and
 * password logins replay the sign-in forms of several browser sessions; their `feed` supplies the
 * next request per connection (autocannon's setupRequest/onResponse hooks, see load.ts).
 * A scenario may run a `background` load on the same server during its measured window (the mixed
 * scenario: client_credentials while password logins run). A multi-tenant mix fits the same shape:
 * a feed that spreads requests over tenants (x-tenant-id or host) through setupRequest.
 */
import { OIDC_PATH, RESOURCE, SCOPE, type SigningAlg } from './constants.js';
import { basicAuth, form, jsonField, jwtHeader, type ClientCredentials, type PlainResponse } from './http.js';
import type { RequestFeed, RequestSpec } from './load.js';

export type { FedRequest, RequestFeed, RequestSpec } from './load.js';

export type Target = 'product' | 'baseline';
export const TARGETS: readonly Target[] = ['product', 'baseline'];

export interface BackgroundLoad {
  label: string;
  spec: RequestSpec;
  connections: number;
}

export interface Scenario {
  /** Short id, for --only. */
  name: string;
  /** Row label in the table. */
  label: string;
  /** How the two sides differ, when they do. */
  note?: string;
  /** A baseline request is absent when stock oidc-provider has no counterpart. */
  request: { product: RequestSpec; baseline?: RequestSpec };
  /** Connections of this scenario (default: the run's). */
  connections?: number;
  /** Requests per second over all connections (default: as fast as answered). */
  rate?: number;
  /** Load on the same server during the measured window (warm-up included). */
  background?: BackgroundLoad;
}

/** What the scenarios need from each server, prepared by targets.ts. */
export interface TargetCredentials {
  /** Client whose access tokens are RS256 (the product: the bootstrap client). */
  rs256: ClientCredentials;
  es256: ClientCredentials;
  eddsa: ClientCredentials;
  /** The token the introspection scenario asks about, and the client that asks. */
  introspection: { token: string; client: ClientCredentials; kind: 'jwt' | 'opaque' };
  /** An opaque client_credentials token (no resource), on both servers. */
  opaqueToken: string;
  refresh: { client: ClientCredentials; feed: RequestFeed };
  /** A signed-in user's access token (code flow, scope openid) for the userinfo endpoint. */
  userinfoToken: string;
  /** The userinfo endpoint under OIDC_PATH: the product's `/userinfo`, stock oidc-provider's `/me`. */
  userinfoPath: string;
  /** prompt=none authorization with a session cookie, then the code exchange (two steps). */
  silentAuth: RequestFeed;
  /** The mixed profile's feed (client_credentials, introspection, refresh, userinfo by weight). */
  mixed: RequestFeed;
}

export interface ProductExtras {
  /** A Management API token with svc:clients:read. */
  managementToken: string;
  /** A client id GET /api/v1/clients/:id reads. */
  clientId: string;
  login: { feed: RequestFeed; connections: number };
}

const FORM = 'application/x-www-form-urlencoded';

function status200(res: PlainResponse): string | undefined {
  return res.status === 200 ? undefined : `HTTP ${res.status}: ${res.body.slice(0, 200)}`;
}

function discovery(): RequestSpec {
  return {
    method: 'GET',
    path: `${OIDC_PATH}/.well-known/openid-configuration`,
    headers: {},
    check: (res) => status200(res) ?? (typeof jsonField(res.body, 'issuer') === 'string' ? undefined : 'no issuer in discovery document'),
  };
}

function jwks(): RequestSpec {
  return {
    method: 'GET',
    path: `${OIDC_PATH}/jwks`,
    headers: {},
    check: (res) => status200(res) ?? (Array.isArray(jsonField(res.body, 'keys')) ? undefined : 'no keys array'),
  };
}

export function clientCredentials(client: ClientCredentials, alg: SigningAlg): RequestSpec {
  return {
    method: 'POST',
    path: `${OIDC_PATH}/token`,
    headers: { authorization: basicAuth(client), 'content-type': FORM },
    body: form({ grant_type: 'client_credentials', resource: RESOURCE, scope: SCOPE }),
    check: (res) => {
      const bad = status200(res);
      if (bad) return bad;
      const token = jsonField(res.body, 'access_token');
      if (typeof token !== 'string') return 'no access_token';
      const header = jwtHeader(token);
      if (!header) return 'access token is not a JWT';
      return header.alg === alg ? undefined : `access token signed ${String(header.alg)}, expected ${alg}`;
    },
  };
}

function introspection(token: string, client: ClientCredentials): RequestSpec {
  return {
    method: 'POST',
    path: `${OIDC_PATH}/token/introspection`,
    headers: { authorization: basicAuth(client), 'content-type': FORM },
    body: form({ token }),
    check: (res) => status200(res) ?? (jsonField(res.body, 'active') === true ? undefined : `token not active: ${res.body.slice(0, 200)}`),
  };
}

function refresh({ client, feed }: TargetCredentials['refresh']): RequestSpec {
  return {
    method: 'POST',
    path: `${OIDC_PATH}/token`,
    headers: { authorization: basicAuth(client), 'content-type': FORM },
    feed,
    check: (res) => {
      const bad = status200(res);
      if (bad) return bad;
      return typeof jsonField(res.body, 'refresh_token') === 'string' && typeof jsonField(res.body, 'id_token') === 'string' ? undefined : 'no rotated refresh_token / id_token';
    },
  };
}

function userinfo(token: string, path: string): RequestSpec {
  return {
    method: 'GET',
    path: `${OIDC_PATH}${path}`,
    headers: { authorization: `Bearer ${token}` },
    check: (res) => status200(res) ?? (typeof jsonField(res.body, 'sub') === 'string' ? undefined : 'no sub in the userinfo answer'),
  };
}

function silentAuth(feed: RequestFeed): RequestSpec {
  return {
    method: 'GET',
    path: `${OIDC_PATH}/auth`, // replaced per request by the feed
    headers: {},
    // The authorization answer is a redirect (oidc-provider: 303 on the product's bridge, 302/303 on node:http); the exchange a 200.
    okStatus: [200, 302, 303],
    feed,
    check: (res) => status200(res) ?? (typeof jsonField(res.body, 'id_token') === 'string' ? undefined : 'no id_token from the code exchange'),
  };
}

function mixed(feed: RequestFeed): RequestSpec {
  return { method: 'POST', path: `${OIDC_PATH}/token`, headers: {}, feed, check: status200 };
}

/** The mixed profile's weights (an IdP's traffic: APIs calling, apps refreshing, pages asking who the user is). */
export const MIXED_WEIGHTS = { cc: 20, introspection: 30, refresh: 20, userinfo: 30 } as const;

/** The fed requests of the mixed profile, for one server. */
export function mixedParts(c: Pick<TargetCredentials, 'rs256' | 'introspection' | 'userinfoToken' | 'userinfoPath'> & { refreshClient: ClientCredentials }) {
  const cc = clientCredentials(c.rs256, 'RS256');
  const intro = introspection(c.introspection.token, c.introspection.client);
  const ui = userinfo(c.userinfoToken, c.userinfoPath);
  return [
    { name: 'cc', weight: MIXED_WEIGHTS.cc, request: () => ({ method: 'POST' as const, path: cc.path, headers: cc.headers, body: cc.body! }) },
    { name: 'introspection', weight: MIXED_WEIGHTS.introspection, request: () => ({ method: 'POST' as const, path: intro.path, headers: intro.headers, body: intro.body! }) },
    { name: 'refresh', weight: MIXED_WEIGHTS.refresh, request: () => ({ method: 'POST' as const, path: `${OIDC_PATH}/token`, headers: { authorization: basicAuth(c.refreshClient), 'content-type': FORM } }) },
    { name: 'userinfo', weight: MIXED_WEIGHTS.userinfo, request: () => ({ method: 'GET' as const, path: ui.path, headers: ui.headers }) },
  ];
}

function management(path: string, token: string, check: (data: unknown) => string | undefined): RequestSpec {
  return {
    method: 'GET',
    path,
    headers: { authorization: `Bearer ${token}` },
    check: (res) => status200(res) ?? check(jsonField(res.body, 'data')),
  };
}

function passwordLogin(feed: RequestFeed): RequestSpec {
  return {
    method: 'POST',
    path: `${OIDC_PATH}/interaction/-/login`, // replaced per request by the feed
    headers: { 'content-type': FORM },
    okStatus: 303,
    feed,
    check: (res) => (res.status === 303 && /\/auth\//.test(res.location ?? '') ? undefined : `HTTP ${res.status} (expected 303 to the resume URL): ${res.body.slice(0, 200)}`),
  };
}

/** The fixed rate of the mixed scenario's client_credentials load: well below capacity, so latency shows interference, not queueing. */
export const MIXED_CC_RATE = 200;

export function buildScenarios(creds: Record<Target, TargetCredentials>, product: ProductExtras): Scenario[] {
  const both = (make: (t: Target) => RequestSpec) => ({ product: make('product'), baseline: make('baseline') });
  const login = passwordLogin(product.login.feed);
  return [
    { name: 'discovery', label: 'discovery', request: both(discovery) },
    { name: 'jwks', label: 'jwks', request: both(jwks) },
    { name: 'cc-rs256', label: 'client_credentials RS256', request: both((t) => clientCredentials(creds[t].rs256, 'RS256')) },
    { name: 'cc-es256', label: 'client_credentials ES256', request: both((t) => clientCredentials(creds[t].es256, 'ES256')) },
    { name: 'cc-eddsa', label: 'client_credentials EdDSA', request: both((t) => clientCredentials(creds[t].eddsa, 'EdDSA')) },
    {
      name: 'introspection',
      label: 'introspection (JWT vs opaque)',
      note: `token introspected: product ${creds.product.introspection.kind}, baseline ${creds.baseline.introspection.kind} (stock oidc-provider refuses to introspect JWT access tokens)`,
      request: both((t) => introspection(creds[t].introspection.token, creds[t].introspection.client)),
    },
    {
      name: 'introspection-opaque',
      label: 'introspection opaque',
      note: 'an opaque client_credentials token (no resource) on both servers: the same work',
      request: both((t) => introspection(creds[t].opaqueToken, creds[t].rs256)),
    },
    {
      name: 'refresh',
      label: 'refresh_token (rotating)',
      note: 'refresh_token grant with rotation and an ID token; the baseline signs in through devInteractions',
      request: both((t) => refresh(creds[t].refresh)),
    },
    { name: 'userinfo', label: 'userinfo GET', note: "a signed-in user's access token (code flow + PKCE, scope openid); product /userinfo, baseline /me (oidc-provider's default route)", request: both((t) => userinfo(creds[t].userinfoToken, creds[t].userinfoPath)) },
    {
      name: 'silent-auth',
      label: 'silent re-auth (2 requests)',
      note: 'one iteration = GET /auth?prompt=none with a session cookie (a redirect with a code; one signed-in session per connection) + the code exchange with PKCE; req/s counts both requests, iterations/s is half',
      request: both((t) => silentAuth(creds[t].silentAuth)),
    },
    {
      name: 'mixed',
      label: 'mixed profile',
      note: `each request picks by weight: client_credentials RS256 ${MIXED_WEIGHTS.cc}%, introspection ${MIXED_WEIGHTS.introspection}% (product JWT, baseline opaque), refresh ${MIXED_WEIGHTS.refresh}%, userinfo ${MIXED_WEIGHTS.userinfo}%; password logins are left out (the baseline's devInteractions checks no password: see password-login)`,
      request: both((t) => mixed(creds[t].mixed)),
    },
    {
      name: 'mgmt-get-client',
      label: 'GET /api/v1/clients/:id',
      note: 'product only: stock oidc-provider has no Management API',
      request: { product: management(`/api/v1/clients/${encodeURIComponent(product.clientId)}`, product.managementToken, (d) => (d && typeof d === 'object' && 'client_id' in d ? undefined : 'no client in data')) },
    },
    {
      name: 'mgmt-list-clients',
      label: 'GET /api/v1/clients?limit=25',
      note: 'product only: stock oidc-provider has no Management API',
      request: { product: management('/api/v1/clients?limit=25', product.managementToken, (d) => (Array.isArray(d) && d.length === 25 ? undefined : `expected 25 clients, got ${Array.isArray(d) ? d.length : 'none'}`)) },
    },
    {
      name: 'password-login',
      label: 'password login (Argon2id)',
      note: 'product only: the full POST of the sign-in form (Argon2id verify in the worker pool, audit, interaction result, 303); devInteractions checks no password',
      connections: product.login.connections,
      request: { product: login },
    },
    {
      name: 'login-mixed',
      label: `client_credentials RS256 @${MIXED_CC_RATE}/s during logins`,
      note: `product only: client_credentials RS256 at a fixed ${MIXED_CC_RATE} req/s (10 connections) while password logins run at full speed (${product.login.connections} connections); latency is the client_credentials one, event-loop delay the whole process's`,
      connections: 10,
      rate: MIXED_CC_RATE,
      request: { product: clientCredentials(creds.product.rs256, 'RS256') },
      background: { label: 'password logins', spec: login, connections: product.login.connections },
    },
  ];
}

export const SCENARIO_NAMES = [
  'discovery',
  'jwks',
  'cc-rs256',
  'cc-es256',
  'cc-eddsa',
  'introspection',
  'introspection-opaque',
  'refresh',
  'userinfo',
  'silent-auth',
  'mixed',
  'mgmt-get-client',
  'mgmt-list-clients',
  'password-login',
  'login-mixed',
] as const;
