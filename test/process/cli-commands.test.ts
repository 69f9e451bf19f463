/**
 * Issue 19 item 6: every CLI command run as a process (the built CLI, as an operator runs it) on
 * the embedded SQLite database: keys generate, migrate, clients create (including the scope-name
 * check), update and rollback. PostgreSQL's migrate: cli-migrate-postgresql.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url));

let dir: string;
let env: Record<string, string>;
const svc = (args: string[], cwd = dir) => spawnSync(process.execPath, [CLI, ...args], { env, cwd, encoding: 'utf8', timeout: 120_000 });
const db = () => new Database(join(dir, 'svc.db'), { readonly: true });

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-cli-'));
  env = {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'production',
    BASE_URL: 'https://idp.example.com',
    STORAGE_SQLITE_PATH: join(dir, 'svc.db'),
    SVC_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64'),
    SECURITY_KEY_STORE_ALGORITHMS: 'RS256,ES256',
    SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false',
  };
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A process start costs seconds on a loaded 2-core machine: generous limits, no timing assertion.
describe('svc as a process (SQLite)', { timeout: 240_000 }, () => {
  it('migrate applies the migrations to a new file and is idempotent', () => {
    const run = svc(['migrate']);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/migrations applied \(sqlite\)/);
    const versions = db().prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all() as string[];
    expect(versions).toEqual(expect.arrayContaining(['001_init', '050_resources', '051_audit_ip']));
    expect(svc(['migrate']).status).toBe(0);
    // Like every other command, migrate refuses options and arguments it does not take.
    for (const args of [['--bogus'], ['extra-arg']]) {
      const refused = svc(['migrate', ...args]);
      expect(refused.status, args.join(' ')).not.toBe(0);
      expect(refused.stderr).toMatch(/Unknown option|Unexpected argument/);
    }
  });

  it('keys generate creates one active key per configured algorithm, once', () => {
    const run = svc(['keys', 'generate']);
    expect(run.status, run.stderr).toBe(0);
    const keys = () => db().prepare("SELECT alg, status FROM signing_keys WHERE tenant_id = 'default' ORDER BY alg").all() as Array<{ alg: string; status: string }>;
    expect(keys()).toEqual([{ alg: 'ES256', status: 'active' }, { alg: 'RS256', status: 'active' }]);
    // No private key material in the output.
    expect(run.stdout).not.toMatch(/"d"\s*:/);
    expect(svc(['keys', 'generate']).status).toBe(0);
    expect(keys()).toHaveLength(2);
  });

  it('keys generate refuses a malformed or unknown tenant and writes no key for it', () => {
    const bad = svc(['keys', 'generate', '--tenant', 'Bad!!']);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/not a valid tenant name/);
    // Single-tenant: only `default` exists; keys made for another slug would sign for whoever creates it later.
    const unknown = svc(['keys', 'generate', '--tenant', 'nope']);
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toMatch(/Tenant nope not found/);
    expect(db().prepare("SELECT count(*) FROM signing_keys WHERE tenant_id <> 'default'").pluck().get()).toBe(0);
  });

  it('clients create prints the client with its secret once, stores only a hash, and audits', () => {
    const run = svc(['clients', 'create', '--name', 'Billing job', '--grant-types', 'client_credentials', '--scope', 'svc:users:read']);
    expect(run.status, run.stderr).toBe(0);
    const client = JSON.parse(run.stdout) as { client_id: string; client_secret: string; grant_types: string[]; scope: string };
    expect(client).toMatchObject({ client_name: 'Billing job', grant_types: ['client_credentials'], scope: 'svc:users:read' });
    expect(client.client_secret.length).toBeGreaterThan(30);
    const row = db().prepare("SELECT secret_hash FROM clients WHERE tenant_id = 'default' AND client_id = ?").get(client.client_id) as { secret_hash: string };
    expect(row.secret_hash).not.toContain(client.client_secret);
    const audited = db().prepare("SELECT count(*) FROM audit_entries WHERE type = 'client.created' AND details LIKE ?").pluck().get(`%${client.client_id}%`);
    expect(audited).toBe(1);
  });

  it('clients create refuses unknown scopes and bad input with a reason and a non-zero exit, storing nothing', () => {
    const before = db().prepare('SELECT count(*) FROM clients').pluck().get();
    const unknown = svc(['clients', 'create', '--name', 'x', '--grant-types', 'client_credentials', '--scope', 'read:orders']);
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toMatch(/scope.*read:orders/);
    const grant = svc(['clients', 'create', '--name', 'x', '--grant-types', 'password']);
    expect(grant.status).not.toBe(0);
    expect(grant.stderr).toMatch(/grant_types/);
    expect(svc(['clients', 'create']).status).not.toBe(0);
    // A client for a tenant nobody created would come to life in the tenant created later under its slug.
    for (const tenant of ['nope', 'ACME']) {
      const orphan = svc(['clients', 'create', '--name', 'Orphan', '--grant-types', 'client_credentials', '--scope', 'svc:users:read', '--tenant', tenant]);
      expect(orphan.status).not.toBe(0);
      expect(orphan.stderr).toMatch(new RegExp(`Tenant ${tenant} not found`));
    }
    expect(db().prepare('SELECT count(*) FROM clients').pluck().get()).toBe(before);
  });

  it('update points current at a release and remembers the previous one; rollback goes back', () => {
    const releases = join(dir, 'releases');
    const r1 = join(dir, 'r1');
    const r2 = join(dir, 'r2');
    for (const r of [r1, r2]) {
      mkdirSync(r);
      writeFileSync(join(r, 'package.json'), '{"name":"svc"}');
    }
    expect(svc(['update', r1, '--releases', releases]).status).toBe(0);
    expect(readlinkSync(join(releases, 'current'))).toBe(r1);
    const second = svc(['update', r2, '--releases', releases]);
    expect(second.status, second.stderr).toBe(0);
    expect(readlinkSync(join(releases, 'current'))).toBe(r2);
    expect(readlinkSync(join(releases, 'previous'))).toBe(r1);
    // Updating to the current release again keeps the rollback target, also named through a link
    // (`current` itself, an alias): current never points at itself.
    for (const same of [r2, `${r2}/`, join(releases, 'current')]) {
      expect(svc(['update', same, '--releases', releases]).status).toBe(0);
      expect(readlinkSync(join(releases, 'current'))).toBe(r2);
      expect(readlinkSync(join(releases, 'previous'))).toBe(r1);
    }
    const back = svc(['rollback', '--releases', releases]);
    expect(back.status, back.stderr).toBe(0);
    expect(readlinkSync(join(releases, 'current'))).toBe(r1);
    // Not a release: refused, the pointer unchanged.
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    const refused = svc(['update', empty, '--releases', releases]);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toMatch(/does not look like a release/);
    expect(readlinkSync(join(releases, 'current'))).toBe(r1);
  });

  it('an unknown command prints the usage and fails', () => {
    const run = svc(['frobnicate']);
    expect(run.status).not.toBe(0);
    expect(run.stdout + run.stderr).toMatch(/usage: svc/);
  });
});
