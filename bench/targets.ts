/**
 * The two servers under test: how each is started, and the credentials each scenario needs,
 * prepared the way a user would (the product's clients and users through its Management API and
 * sign-in pages, the baseline's clients in its static configuration and devInteractions).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ProductBackend } from './backend.js';
import type { BaselineClient, BaselineRelyingParty } from './baseline-server.js';
import { RESOURCE, SCOPE } from './constants.js';
import { LoginFormFeed, MixedFeed, RefreshTokenFeed, SilentAuthFeed } from './feeds.js';
import { BrowserSession, codeFlow, openLoginForm, refreshTokens, type RelyingParty, type UserCredentials } from './flows.js';
import { createProductClient, createProductUser, fetchToken, jwtHeader, type ClientCredentials } from './http.js';
import { HOST, type ServerProcess, type ServerSpec } from './processes.js';
import { mixedParts, type ProductExtras, type TargetCredentials } from './scenarios.js';

const secret = () => randomBytes(24).toString('base64url');

/** Never contacted: the flows stop at the redirect to it and read the code from its query. */
const REDIRECT_URI = 'https://rp.bench.invalid/callback';

/** Product settings passed through from the bench's environment: BENCH_PRODUCT_<NAME>=v becomes <NAME>=v. */
export const PRODUCT_ENV_PREFIX = 'BENCH_PRODUCT_';

/**
 * Settings the bench gives the product besides the basics. A load test comes from one address
 * and one client: the per-IP sign-in limit and the Management API read class would otherwise
 * answer 429 within a second (they are measured elsewhere, in the e2e tests).
 */
export const PRODUCT_BENCH_SETTINGS: Readonly<Record<string, string>> = {
  FEATURES_METRICS_ENABLED: 'true',
  SECURITY_LOGIN_PER_IP_PER_MINUTE: '1000000000',
  SECURITY_RATE_LIMIT_READ: '1000000000',
};

export function productOverrides(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith(PRODUCT_ENV_PREFIX) && value !== undefined) out[name.slice(PRODUCT_ENV_PREFIX.length)] = value;
  }
  return out;
}

/**
 * Node flags for the product process (run.js and capacity.js alike):
 * BENCH_CPU_PROF_DIR=<dir>: V8 CPU profiles of the product (one per start) for flame graphs.
 * BENCH_PRODUCT_NODE_ARGS: more flags before the script, space-separated (--perf-basic-prof for
 * `perf`, --log-deopt --logfile=<file>: the flags NODE_OPTIONS refuses).
 */
export function productNodeArgs(env: NodeJS.ProcessEnv): string[] {
  return [
    ...(env.BENCH_CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${env.BENCH_CPU_PROF_DIR}`] : []),
    ...(env.BENCH_PRODUCT_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
  ];
}

export interface ProductTarget {
  spec: ServerSpec;
  bootstrap: ClientCredentials;
  overrides: Record<string, string>;
}

/**
 * `node dist/src/main.js` as users run it: production mode, default logging (info, stdout +
 * logs/svc.log), its data where `backend` says (SQLite in the temp dir, or PostgreSQL + Redis).
 */
export function productTarget(env: NodeJS.ProcessEnv, backend: Pick<ProductBackend, 'env'>): ProductTarget {
  const bootstrap = { client_id: 'bench-admin', client_secret: secret() };
  const overrides = productOverrides(env);
  // Fixed for the run: a restart on the same directory must unseal the keys it stored.
  const encryptionKey = randomBytes(32).toString('base64');
  return {
    bootstrap,
    overrides,
    spec: {
      name: 'product',
      script: fileURLToPath(new URL('../src/main.js', import.meta.url)),
      nodeArgs: productNodeArgs(env),
      readyPath: '/readyz',
      eventLoop: { kind: 'metrics', path: '/metrics', prefix: 'svc_' },
      env: (port, dir) => ({
        PORT: String(port),
        HOST,
        ...backend.env(dir),
        // Issue 17: measured with the logging an operator gets by default (info, file copy on);
        // only the directory is pinned to the run's temp dir.
        SECURITY_LOGGING_FILE_LOGGING_DIRECTORY: join(dir, 'logs'),
        NODE_ENV: 'production',
        SVC_ENCRYPTION_KEY: encryptionKey,
        SVC_BOOTSTRAP_CLIENT_ID: bootstrap.client_id,
        SVC_BOOTSTRAP_CLIENT_SECRET: bootstrap.client_secret,
        ...PRODUCT_BENCH_SETTINGS,
        ...overrides,
      }),
    },
  };
}

export interface BaselineTarget {
  spec: ServerSpec;
  rs256: BaselineClient;
  es256: BaselineClient;
  eddsa: BaselineClient;
  rp: BaselineRelyingParty;
}

export function baselineTarget(): BaselineTarget {
  const rs256: BaselineClient = { client_id: 'bench-rs256', client_secret: secret(), alg: 'RS256' };
  const es256: BaselineClient = { client_id: 'bench-es256', client_secret: secret(), alg: 'ES256' };
  const eddsa: BaselineClient = { client_id: 'bench-eddsa', client_secret: secret(), alg: 'EdDSA' };
  const rp: BaselineRelyingParty = { client_id: 'bench-rp', client_secret: secret(), redirect_uri: REDIRECT_URI };
  return {
    rs256,
    es256,
    eddsa,
    rp,
    spec: {
      name: 'baseline',
      script: fileURLToPath(new URL('./baseline-main.js', import.meta.url)),
      readyLine: /^ready\b/,
      eventLoop: { kind: 'ipc' },
      env: (port) => ({
        NODE_ENV: 'production',
        BASELINE_HOST: HOST,
        BASELINE_PORT: String(port),
        BASELINE_CLIENTS: JSON.stringify([rs256, es256, eddsa]),
        BASELINE_RP: JSON.stringify(rp),
      }),
    },
  };
}

/** The product's relying party of the user flows: first-party (no consent page), code + refresh. */
export async function createRelyingParty(base: string, admin: string): Promise<RelyingParty> {
  const client = await createProductClient(base, admin, {
    client_name: 'bench-rp',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    redirect_uris: [REDIRECT_URI],
    scope: 'openid offline_access',
    first_party: true,
  });
  return { ...client, redirect_uri: REDIRECT_URI };
}

export interface ProductPreparation {
  credentials: TargetCredentials;
  extras: ProductExtras;
}

/** Enough clients that GET /api/v1/clients?limit=25 returns a full page. */
const LIST_PAGE = 25;

/**
 * Product: the bootstrap client (all svc:* scopes, RS256 by default) is the RS256 client; the
 * ES256, EdDSA and relying-party clients, filler clients and users are created through the
 * Management API; the refresh tokens come from code flows on the sign-in pages, the login forms
 * from opened sign-in pages (one browser session per login connection).
 */
export async function prepareProduct(server: ServerProcess, target: ProductTarget, loginConnections: number, sessions: number): Promise<ProductPreparation> {
  const base = server.baseUrl;
  const admin = await fetchToken(base, target.bootstrap, 'svc:clients:read svc:clients:write svc:users:write', RESOURCE);
  const ccClient = (name: string, alg: string) => createProductClient(base, admin, { client_name: name, grant_types: ['client_credentials'], scope: SCOPE, id_token_signed_response_alg: alg });
  const es256 = await ccClient('bench-es256', 'ES256');
  const eddsa = await ccClient('bench-eddsa', 'EdDSA');
  const rp = await createRelyingParty(base, admin);
  for (let i = 0; i < LIST_PAGE; i++) await ccClient(`bench-filler-${i}`, 'RS256');

  const users = await Promise.all(
    Array.from({ length: Math.max(1, loginConnections) }, (_, i) => createProductUser(base, admin, { email: `bench-user-${i}@bench.invalid`, password: `Bench-password-${secret()}` })),
  );
  const user = { login: users[0]!.email, password: users[0]!.password };
  const session = new BrowserSession(base);
  const feed = new RefreshTokenFeed((n) => refreshTokens(base, rp, user, n, session));
  const forms = await Promise.all(users.map((u) => openLoginForm(new BrowserSession(base), rp, { login: u.email, password: u.password }, { scope: 'openid' })));

  const user2 = await signedInUsers(base, rp, users.map((u) => ({ login: u.email, password: u.password })), sessions);
  const jwt = await fetchToken(base, target.bootstrap, SCOPE, RESOURCE);
  if (!jwtHeader(jwt)) throw new Error('product: expected a JWT access token to introspect');
  const opaqueToken = await fetchToken(base, target.bootstrap);
  if (jwtHeader(opaqueToken)) throw new Error('product: expected an opaque access token without resource');
  return {
    credentials: {
      rs256: target.bootstrap,
      es256,
      eddsa,
      introspection: { token: jwt, client: target.bootstrap, kind: 'jwt' },
      opaqueToken,
      refresh: { client: rp, feed },
      ...user2,
      userinfoPath: '/userinfo',
      mixed: new MixedFeed(mixedParts({ rs256: target.bootstrap, introspection: { token: jwt, client: target.bootstrap, kind: 'jwt' }, userinfoToken: user2.userinfoToken, userinfoPath: '/userinfo', refreshClient: rp }), feed),
    },
    extras: {
      managementToken: await fetchToken(base, target.bootstrap, 'svc:clients:read', RESOURCE),
      clientId: es256.client_id,
      login: { feed: new LoginFormFeed(forms), connections: loginConnections },
    },
  };
}

/** Baseline: clients from its configuration; opaque tokens (no `resource`); refresh tokens through devInteractions. */
export async function prepareBaseline(server: ServerProcess, target: BaselineTarget, sessions: number): Promise<TargetCredentials> {
  const token = await fetchToken(server.baseUrl, target.rs256, SCOPE);
  if (jwtHeader(token)) throw new Error('baseline: expected an opaque access token to introspect');
  const session = new BrowserSession(server.baseUrl);
  const user = { login: 'bench-user', password: 'any' };
  const signedIn = await signedInUsers(server.baseUrl, target.rp, [user], sessions);
  const feed = new RefreshTokenFeed((n) => refreshTokens(server.baseUrl, target.rp, user, n, session));
  return {
    rs256: target.rs256,
    es256: target.es256,
    eddsa: target.eddsa,
    introspection: { token, client: target.rs256, kind: 'opaque' },
    opaqueToken: token,
    refresh: { client: target.rp, feed },
    ...signedIn,
    userinfoPath: '/me',
    mixed: new MixedFeed(mixedParts({ rs256: target.rs256, introspection: { token, client: target.rs256, kind: 'opaque' }, userinfoToken: signedIn.userinfoToken, userinfoPath: '/me', refreshClient: target.rp }), feed),
  };
}

/**
 * `sessions` browsers signed in (code flow + PKCE, scope openid), each as one of `users` in turn:
 * the first one's access token for userinfo, and every session's cookie for silent
 * re-authentication (one session per connection).
 */
async function signedInUsers(base: string, rp: RelyingParty, users: readonly UserCredentials[], sessions: number): Promise<Pick<TargetCredentials, 'userinfoToken' | 'silentAuth'>> {
  const browsers = Array.from({ length: Math.max(1, sessions) }, () => new BrowserSession(base));
  const tokens = await Promise.all(browsers.map((b, i) => codeFlow(b, rp, users[i % users.length]!, { scope: 'openid' })));
  const first = tokens[0]?.access_token;
  if (typeof first !== 'string') throw new Error(`${base}: no access_token from the code flow`);
  return { userinfoToken: first, silentAuth: new SilentAuthFeed(base, rp, browsers.map((b) => () => b.jar.header())) };
}
