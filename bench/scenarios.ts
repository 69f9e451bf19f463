/**
 * The scenarios: one request each, repeated by autocannon. Every scenario says what it sends to
 * each server and how to recognise a correct answer; the check runs once before and once after the
 * load (not per response, which would cost load-generator CPU on a machine where it shares cores
 * with the servers), so a scenario that quietly measures an error path is caught.
 */
import { OIDC_PATH, RESOURCE, SCOPE, type SigningAlg } from './constants.js';
import { basicAuth, form, jsonField, jwtHeader, type ClientCredentials, type PlainResponse } from './http.js';

export interface RequestSpec {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** What is wrong with this response, or undefined when it is the expected one. */
  check(res: PlainResponse): string | undefined;
}

export type Target = 'product' | 'baseline';

export interface TargetCredentials {
  /** Client whose access tokens are RS256 (the product: the bootstrap client). */
  rs256: ClientCredentials;
  /** Client whose access tokens are ES256. */
  es256: ClientCredentials;
  /** The token the introspection scenario asks about, and the client that asks. */
  introspection: { token: string; client: ClientCredentials; kind: 'jwt' | 'opaque' };
}

export interface Scenario {
  /** Short id, for --only. */
  name: string;
  /** Row label in the table. */
  label: string;
  /** How the two sides differ, when they do. */
  note?: string;
  request: Record<Target, RequestSpec>;
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

function clientCredentials(client: ClientCredentials, alg: SigningAlg): RequestSpec {
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

function introspection({ token, client }: TargetCredentials['introspection']): RequestSpec {
  return {
    method: 'POST',
    path: `${OIDC_PATH}/token/introspection`,
    headers: { authorization: basicAuth(client), 'content-type': FORM },
    body: form({ token }),
    check: (res) => status200(res) ?? (jsonField(res.body, 'active') === true ? undefined : `token not active: ${res.body.slice(0, 200)}`),
  };
}

export function buildScenarios(creds: Record<Target, TargetCredentials>): Scenario[] {
  const both = (make: (t: Target) => RequestSpec): Record<Target, RequestSpec> => ({ product: make('product'), baseline: make('baseline') });
  return [
    { name: 'discovery', label: 'discovery', request: both(discovery) },
    { name: 'jwks', label: 'jwks', request: both(jwks) },
    { name: 'cc-rs256', label: 'client_credentials RS256', request: both((t) => clientCredentials(creds[t].rs256, 'RS256')) },
    { name: 'cc-es256', label: 'client_credentials ES256', request: both((t) => clientCredentials(creds[t].es256, 'ES256')) },
    {
      name: 'introspection',
      label: 'introspection',
      note: `token introspected: product ${creds.product.introspection.kind}, baseline ${creds.baseline.introspection.kind} (stock oidc-provider refuses to introspect JWT access tokens)`,
      request: both((t) => introspection(creds[t].introspection)),
    },
  ];
}

export const SCENARIO_NAMES = ['discovery', 'jwks', 'cc-rs256', 'cc-es256', 'introspection'] as const;
