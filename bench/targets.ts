/**
 * The two servers under test: how each is started, and the credentials each scenario needs,
 * prepared the way a user would (the product's ES256 client through its Management API, the
 * baseline's clients in its static configuration).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BaselineClient } from './baseline-server.js';
import { RESOURCE, SCOPE } from './constants.js';
import { createProductClient, fetchToken, jwtHeader, type ClientCredentials } from './http.js';
import { HOST, type ServerProcess, type ServerSpec } from './processes.js';
import type { TargetCredentials } from './scenarios.js';

const secret = () => randomBytes(24).toString('base64url');

/** Product settings passed through from the bench's environment: BENCH_PRODUCT_<NAME>=v becomes <NAME>=v. */
export const PRODUCT_ENV_PREFIX = 'BENCH_PRODUCT_';

function productOverrides(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith(PRODUCT_ENV_PREFIX) && value !== undefined) out[name.slice(PRODUCT_ENV_PREFIX.length)] = value;
  }
  return out;
}

export interface ProductTarget {
  spec: ServerSpec;
  bootstrap: ClientCredentials;
  overrides: Record<string, string>;
}

/** `node dist/src/main.js` as the issue describes: production mode, SQLite in the temp dir, warn logs on stdout only. */
export function productTarget(env: NodeJS.ProcessEnv): ProductTarget {
  const bootstrap = { client_id: 'bench-admin', client_secret: secret() };
  const overrides = productOverrides(env);
  return {
    bootstrap,
    overrides,
    spec: {
      name: 'product',
      script: fileURLToPath(new URL('../src/main.js', import.meta.url)),
      readyPath: '/readyz',
      env: (port, dir) => ({
        PORT: String(port),
        HOST,
        STORAGE_SQLITE_PATH: join(dir, 'svc.db'),
        SECURITY_LOGGING_LEVEL: 'warn',
        SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false',
        SECURITY_LOGGING_PRETTY_PRINT: 'false',
        NODE_ENV: 'production',
        SVC_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        SVC_BOOTSTRAP_CLIENT_ID: bootstrap.client_id,
        SVC_BOOTSTRAP_CLIENT_SECRET: bootstrap.client_secret,
        ...overrides,
      }),
    },
  };
}

export interface BaselineTarget {
  spec: ServerSpec;
  rs256: BaselineClient;
  es256: BaselineClient;
}

export function baselineTarget(): BaselineTarget {
  const rs256: BaselineClient = { client_id: 'bench-rs256', client_secret: secret(), alg: 'RS256' };
  const es256: BaselineClient = { client_id: 'bench-es256', client_secret: secret(), alg: 'ES256' };
  return {
    rs256,
    es256,
    spec: {
      name: 'baseline',
      script: fileURLToPath(new URL('./baseline-main.js', import.meta.url)),
      readyLine: /^ready\b/,
      env: (port) => ({
        NODE_ENV: 'production',
        BASELINE_HOST: HOST,
        BASELINE_PORT: String(port),
        BASELINE_CLIENTS: JSON.stringify([rs256, es256]),
      }),
    },
  };
}

/**
 * Product: the bootstrap client (all svc:* scopes, RS256 by default) is the RS256 client; an
 * ES256 client is created through POST /api/v1/clients; the introspected token is an RS256 JWT.
 */
export async function prepareProduct(server: ServerProcess, target: ProductTarget): Promise<TargetCredentials> {
  const admin = await fetchToken(server.baseUrl, target.bootstrap, 'svc:clients:read svc:clients:write', RESOURCE);
  const es256 = await createProductClient(server.baseUrl, admin, {
    client_name: 'bench-es256',
    grant_types: ['client_credentials'],
    scope: SCOPE,
    id_token_signed_response_alg: 'ES256',
  });
  const token = await fetchToken(server.baseUrl, target.bootstrap, SCOPE, RESOURCE);
  if (!jwtHeader(token)) throw new Error('product: expected a JWT access token to introspect');
  return { rs256: target.bootstrap, es256, introspection: { token, client: target.bootstrap, kind: 'jwt' } };
}

/** Baseline: clients from its configuration; the introspected token is opaque (no `resource`). */
export async function prepareBaseline(server: ServerProcess, target: BaselineTarget): Promise<TargetCredentials> {
  const token = await fetchToken(server.baseUrl, target.rs256, SCOPE);
  if (jwtHeader(token)) throw new Error('baseline: expected an opaque access token to introspect');
  return { rs256: target.rs256, es256: target.es256, introspection: { token, client: target.rs256, kind: 'opaque' } };
}
