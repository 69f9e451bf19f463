/**
 * Issue 18, item 12: the README followed literally. The shell blocks of its "First steps" sections
 * are extracted from README.md and run as written by bash (real curl, node for the JSON) against
 * fresh instances of the built service (what `npm start` runs): single tenant in development and in production on SQLite, and
 * multi-tenant in production on PostgreSQL + Redis. Only the address changes (localhost:3000 ->
 * the instance's free port) and, for the start lines, the storage the test owns. Every command
 * uses curl --fail-with-body and bash runs with `set -euo pipefail`, so any HTTP error fails the
 * block; the effects are then checked through the Management API.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL, dropRedisKeys, freePort } from '../helpers/app.js';
import { startInstance, type Instance } from '../helpers/instance.js';
import { migratedDatabase, type TestDatabase } from '../helpers/postgres.js';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The ```sh blocks of the README section whose heading starts with `heading`. */
function shellBlocks(heading: string): string[] {
  const start = README.indexOf(`## ${heading}`);
  if (start < 0) throw new Error(`README has no section "${heading}"`);
  const next = README.indexOf('\n## ', start + 3);
  const section = README.slice(start, next < 0 ? undefined : next);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

function bash(script: string, env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', ['-c', `set -euo pipefail\n${script}`], { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env }, timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** The variables a README start line sets: the line run by bash with `npm start` replaced by `env`. */
async function startEnv(block: string): Promise<Record<string, string>> {
  const line = block.replace(/\\\n/g, ' ').trim();
  expect(line).toMatch(/ npm start$/);
  const out = await bash(`env -i PATH="$PATH" bash -c ${JSON.stringify(line.replace(/ npm start$/, ' env'))}`);
  expect(out.code, out.stderr).toBe(0);
  const vars: Record<string, string> = {};
  for (const l of out.stdout.split('\n')) {
    const eq = l.indexOf('=');
    if (eq > 0 && !['PATH', 'PWD', 'SHLVL', '_'].includes(l.slice(0, eq))) vars[l.slice(0, eq)] = l.slice(eq + 1);
  }
  return vars;
}

// A generous readiness bound: three services start at once on a machine shared with other suites.
const SLOW_START = { readyWithinMs: 60_000 };
const QUIET = { SECURITY_LOGGING_LEVEL: 'warn', SECURITY_LOGGING_PRETTY_PRINT: 'false', SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false', WORKERS_ARGON2_THREADS: '1' };
const atPort = (script: string, port: number) => script.replaceAll('localhost:3000', `localhost:${port}`);

async function managementToken(url: string, scope: string, tenant?: string): Promise<string> {
  const res = await fetch(`${url}/oidc/v1/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from('admin:change-me-to-a-long-secret').toString('base64')}`, ...(tenant ? { 'x-tenant-id': tenant } : {}) },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource: 'urn:svc:api:v1', scope }),
  });
  const body = (await res.json()) as { access_token?: string };
  if (!body.access_token) throw new Error(`token refused: ${JSON.stringify(body)}`);
  return body.access_token;
}

describe('README first steps, run as written', () => {
  const [singleStart, singleSteps] = shellBlocks('First steps: a Management API token with curl');
  const [multiStart, multiSteps] = shellBlocks('First steps: several tenants on one machine');
  const dirs: string[] = [];
  const instances: Instance[] = [];
  let dev: Instance;
  let prod: Instance;
  let multi: Instance;
  let db: TestDatabase;
  const prefix = `svctest-readme-${process.pid}-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    expect(singleStart && singleSteps && multiStart && multiSteps).toBeTruthy();
    const single = await startEnv(singleStart!);
    const multiEnv = await startEnv(multiStart!);
    db = await migratedDatabase();
    const sqlite = () => {
      const d = mkdtempSync(join(tmpdir(), 'svc-readme-'));
      dirs.push(d);
      return join(d, 'svc.db');
    };
    const [p1, p2, p3] = [await freePort(), await freePort(), await freePort()];
    // The three at once (each is a separate process), each with a bounded start.
    [dev, prod, multi] = await Promise.all([
      startInstance('dev', p1, { ...single, ...QUIET, STORAGE_SQLITE_PATH: sqlite() }, SLOW_START),
      startInstance('prod', p2, { ...single, ...QUIET, NODE_ENV: 'production', SVC_ENCRYPTION_KEY: randomBytes(32).toString('base64'), STORAGE_SQLITE_PATH: sqlite() }, SLOW_START),
      startInstance('multi', p3, { ...multiEnv, ...QUIET, STORAGE_POSTGRESQL_URL: db.url, STORAGE_POSTGRESQL_POOL_MAX: '4', REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix }, SLOW_START),
    ]);
    instances.push(dev, prod, multi);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(instances.map((i) => i.stop()));
    await db?.drop();
    await dropRedisKeys(TEST_REDIS_URL, prefix);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('links only inside the repository (relative paths that exist, no ../)', () => {
    const targets = [...README.matchAll(/\]\(([^)]+)\)|<((?:https?|ftp):[^>]+)>/g)].map((m) => m[1] ?? m[2]!);
    for (const target of targets) {
      expect(target, target).not.toMatch(/^[a-z]+:|^\/\/|^\.\.\//i);
      expect(existsSync(new URL(`../../${target.split('#')[0]}`, import.meta.url)), target).toBe(true);
    }
    // Paths named in the text count too: nothing points at ../shared or another checkout.
    expect(README).not.toMatch(/\.\.\/shared|\/work\//);
  });

  it('the start lines set what the service needs (multi-tenant: production, PostgreSQL, Redis)', async () => {
    expect(multi).toBeDefined();
    const multiEnv = await startEnv(multiStart!);
    expect(multiEnv).toMatchObject({ NODE_ENV: 'production', MULTI_TENANCY_ENABLED: 'true', STORAGE_ADAPTER: 'postgresql', SVC_BOOTSTRAP_CLIENT_ID: 'admin' });
    expect(Buffer.from(multiEnv.SVC_ENCRYPTION_KEY!, 'base64')).toHaveLength(32);
  });

  for (const mode of ['development', 'production'] as const) {
    it(`single tenant (${mode}): token, client created, paged, user added, client deleted, introspection`, async () => {
      const inst = mode === 'development' ? dev : prod;
      const out = await bash(atPort(singleSteps!, inst.port));
      expect(out.code, `${out.stderr}\n${out.stdout}`).toBe(0);
      expect(out.stdout).toMatch(/HTTP\/1\.1 204/);
      expect(out.stdout).toContain('"active":true');
      const token = await managementToken(inst.url, 'svc:users:read svc:clients:read');
      const users = (await (await fetch(`${inst.url}/api/v1/users?q=ada@example.com`, { headers: { authorization: `Bearer ${token}` } })).json()) as { data: Array<{ email: string }> };
      expect(users.data?.map((u) => u.email), JSON.stringify(users)).toContain('ada@example.com');
      const clients = (await (await fetch(`${inst.url}/api/v1/clients`, { headers: { authorization: `Bearer ${token}` } })).json()) as { data: Array<{ client_name: string }> };
      expect(clients.data.map((c) => c.client_name)).not.toContain('Billing backend');
    });
  }

  it('multi-tenant (production, PostgreSQL + Redis): tenant created, its client and user, the device flow starts', async () => {
    const out = await bash(atPort(multiSteps!, multi.port));
    expect(out.code, `${out.stderr}\n${out.stdout}`).toBe(0);
    const device = JSON.parse(out.stdout.slice(out.stdout.lastIndexOf('{"'))) as { user_code: string; verification_uri: string };
    expect(device.user_code).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
    expect(device.verification_uri).toBe(`http://acme.localhost:${multi.port}/oidc/v1/device`);
    // The tenant's own view: its user exists with the admin role, and it is not in _platforms.
    const pt = await managementToken(multi.url, 'svc:cross-tenant:read svc:users:read', '_platforms');
    const inAcme = (await (await fetch(`${multi.url}/api/v1/users?q=ada@acme.example`, { headers: { authorization: `Bearer ${pt}`, 'x-tenant-id': 'acme' } })).json()) as { data: Array<{ role: string }> };
    expect(inAcme.data.map((u) => u.role)).toEqual(['admin']);
    const inPlatform = (await (await fetch(`${multi.url}/api/v1/users?q=ada@acme.example`, { headers: { authorization: `Bearer ${pt}`, 'x-tenant-id': '_platforms' } })).json()) as { data: unknown[] };
    expect(inPlatform.data).toEqual([]);
    // Production: a request that names no tenant is refused, as the README says.
    expect((await fetch(`${multi.url}/api/v1/users`, { headers: { authorization: `Bearer ${pt}` } })).status).toBe(400);
  });
});
