/**
 * No acknowledged write is lost when the process is killed (SIGKILL: nothing drained, nothing
 * flushed), on the embedded SQLite store. The writes under test take both of its write paths while
 * reads of the same turns hold the turn's read transaction (storage/sqlite/turn-reads.ts): clients
 * created through the Management API (a repository's own write and its audit row) and opaque access
 * tokens (oidc-provider's artefacts, through the group commit: write-batch.ts), each answered
 * amid concurrent reads of the clients. The process is killed the moment the last answer arrives;
 * started again on the same file, every client and every token is there.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_ID, BOOTSTRAP_SECRET, freePort } from '../helpers/app.js';
import { startInstance, type Instance } from '../helpers/instance.js';

const WRITES = 40;
let dir: string;
let env: Record<string, string>;
let port: number;
let instance: Instance | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-kill-'));
  port = await freePort();
  env = {
    NODE_ENV: 'test',
    STORAGE_ADAPTER: 'sqlite',
    STORAGE_SQLITE_PATH: join(dir, 'svc.db'),
    SVC_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    SVC_BOOTSTRAP_CLIENT_ID: BOOTSTRAP_ID,
    SVC_BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP_SECRET,
    SECURITY_LOGGING_LEVEL: 'warn',
    SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false',
    WORKERS_ARGON2_THREADS: '1',
  };
});
afterAll(async () => {
  await instance?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** openid-client for one confidential client of the instance (metadata by hand, plain HTTP). */
function rp(i: Instance, id: string, secret: string): client.Configuration {
  const issuer = `${i.url}/oidc/v1`;
  const config = new client.Configuration({ issuer, token_endpoint: `${issuer}/token`, introspection_endpoint: `${issuer}/token/introspection` }, id, undefined, client.ClientSecretBasic(secret));
  client.allowInsecureRequests(config);
  return config;
}

async function api(i: Instance, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${i.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

describe('a killed process (SQLite)', () => {
  it('loses no client and no opaque token it answered for', async () => {
    instance = await startInstance('kill-1', port, env);
    const bootstrap = rp(instance, BOOTSTRAP_ID, BOOTSTRAP_SECRET);
    const admin = (await client.clientCredentialsGrant(bootstrap, { scope: 'svc:clients:read svc:clients:write', resource: 'urn:svc:api:v1' })).access_token;
    const probe = await api(instance, admin, 'POST', '/api/v1/clients', { client_name: 'probe', grant_types: ['client_credentials'], redirect_uris: [] });
    expect(probe.status).toBe(201);

    // Writes and reads interleaved in the same turns; the process dies once the last write is answered.
    const created: string[] = [];
    const tokens: string[] = [];
    const one = instance;
    await Promise.all(
      Array.from({ length: WRITES }, async (_, n) => {
        const [made, token, read] = await Promise.all([
          api(one, admin, 'POST', '/api/v1/clients', { client_name: `kill ${n}`, grant_types: ['client_credentials'], redirect_uris: [] }),
          // No resource: an opaque token, stored by oidc-provider (the group commit).
          client.clientCredentialsGrant(bootstrap, {}),
          api(one, admin, 'GET', `/api/v1/clients/${probe.json.data.client_id}`),
        ]);
        expect(made.status).toBe(201);
        expect(read.status).toBe(200);
        expect(token.access_token.split('.')).toHaveLength(1);
        created.push(made.json.data.client_id);
        tokens.push(token.access_token);
      }),
    );
    await instance.kill();
    expect(instance.exitCode()).toBeNull();

    instance = await startInstance('kill-2', port, env);
    const again = rp(instance, BOOTSTRAP_ID, BOOTSTRAP_SECRET);
    const admin2 = (await client.clientCredentialsGrant(again, { scope: 'svc:clients:read', resource: 'urn:svc:api:v1' })).access_token;
    for (const id of created) expect((await api(instance, admin2, 'GET', `/api/v1/clients/${id}`)).status).toBe(200);
    for (const token of tokens) expect((await client.tokenIntrospection(again, token)).active).toBe(true);
  }, 90_000);
});
