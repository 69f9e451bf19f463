/**
 * Starts the real service (uWS, SQLite file in a temp dir) on a free port for end-to-end tests.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config/index.js';

export const BOOTSTRAP_ID = 'bootstrap-admin';
export const BOOTSTRAP_SECRET = 'bootstrap-secret-0123456789abcdef';

export interface TestApp {
  app: App;
  /** http://127.0.0.1:<port> */
  url: string;
  /** The issuer the service advertises (BASE_URL + /oidc/v1; BASE_URL is http://localhost:<port>). */
  issuer: string;
  dir: string;
  /** A Management API token of the bootstrap client with the given scopes. */
  token(scopes: string[] | string): Promise<string>;
  close(): Promise<void>;
}

export async function startTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-test-'));
  // Bind first to learn a free port, so BASE_URL can name it.
  const port = await freePort();
  const config = loadConfig({
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: String(port),
    STORAGE_SQLITE_PATH: join(dir, 'svc.db'),
    SECURITY_LOGGING_LEVEL: 'warn',
    SECURITY_LOGGING_PRETTY_PRINT: 'false',
    SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false',
    SVC_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    SVC_BOOTSTRAP_CLIENT_ID: BOOTSTRAP_ID,
    SVC_BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP_SECRET,
    ...env,
  });
  const app = await startApp(config);
  const url = `http://127.0.0.1:${app.port}`;
  return {
    app,
    url,
    issuer: `${config.base_url}${config.oidc.path}`,
    dir,
    async token(scopes) {
      const scope = Array.isArray(scopes) ? scopes.join(' ') : scopes;
      const res = await fetch(`${url}/oidc/v1/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${BOOTSTRAP_ID}:${BOOTSTRAP_SECRET}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope }),
      });
      const body = (await res.json()) as { access_token?: string };
      if (!body.access_token) throw new Error(`token request failed: ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async close() {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** fetch with a JSON body and bearer token. */
export async function api(t: TestApp, method: string, path: string, opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${t.url}${path}`, { method, headers, body });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json: json as any };
}
