/**
 * `svc users create` and `svc tenants create` run as processes (the built CLI, as an operator runs
 * it) against PostgreSQL + Redis in multi-tenant mode: the tenant gets its record and signing keys,
 * the user is created in that tenant with the password read from stdin (never printed), and the
 * refusals name their reason with a non-zero exit.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL } from '../helpers/app.js';
import { migratedDatabase, type TestDatabase } from '../helpers/postgres.js';

const CLI = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url));

describe('svc users create / tenants create (PostgreSQL, multi-tenant)', () => {
  let db: TestDatabase;
  let env: Record<string, string>;
  beforeAll(async () => {
    db = await migratedDatabase();
    env = {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      BASE_URL: 'https://idp.example.com',
      STORAGE_ADAPTER: 'postgresql',
      STORAGE_POSTGRESQL_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: `svccli-${randomBytes(4).toString('hex')}`,
      MULTI_TENANCY_ENABLED: 'true',
      SVC_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      SECURITY_LOGGING_FILE_LOGGING_ENABLED: 'false',
    };
  });
  afterAll(async () => db?.drop());

  const svc = (args: string[], input = '') => spawnSync(process.execPath, [CLI, ...args], { env, input, encoding: 'utf8', timeout: 60_000 });

  it('creates a tenant with its keys and prints its issuer', async () => {
    const run = svc(['tenants', 'create', '--slug', 'acme', '--name', 'Acme Corp']);
    expect(run.status, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout);
    expect(out).toMatchObject({ slug: 'acme', display_name: 'Acme Corp', status: 'active', issuer: 'https://acme.idp.example.com/oidc/v1' });
    expect(run.stderr).not.toContain('Unsupported runtime');
    const admin = await db.admin();
    try {
      const keys = await admin.query("SELECT count(*)::int AS n FROM signing_keys WHERE tenant_id = 'acme'");
      expect(keys.rows[0].n).toBeGreaterThan(0);
      // The API's entry (POST /api/v1/tenants), in _platforms, attributed to the CLI.
      const audit = await admin.query("SELECT tenant_id, user_agent, details FROM audit_entries WHERE type = 'tenant.created'");
      expect(audit.rows).toEqual([{ tenant_id: '_platforms', user_agent: 'svc-cli', details: { tenant_id: out.id, slug: 'acme', source: 'cli' } }]);
    } finally {
      await admin.end();
    }
    const again = svc(['tenants', 'create', '--slug', 'acme', '--name', 'Acme Corp']);
    expect(again.status).not.toBe(0);
    expect(again.stderr).toMatch(/already exists/);
    const bad = svc(['tenants', 'create', '--slug', '-bad-', '--name', 'x']);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/slug/);
  });

  it('creates an admin user in that tenant with the password from stdin, never echoing it', async () => {
    const password = 'Operator-chosen-secret-42';
    const run = svc(['users', 'create', '--tenant', 'acme', '--email', 'ops@acme.example', '--role', 'admin'], `${password}\n`);
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ email: 'ops@acme.example', role: 'admin', account_enabled: true });
    expect(run.stdout + run.stderr).not.toContain(password);
    const admin = await db.admin();
    try {
      const rows = await admin.query("SELECT tenant_id, password_hash FROM users WHERE email = 'ops@acme.example'");
      expect(rows.rows).toHaveLength(1);
      expect(rows.rows[0].tenant_id).toBe('acme');
      expect(rows.rows[0].password_hash).toMatch(/^\$argon2id\$/);
      const audit = await admin.query("SELECT count(*)::int AS n FROM audit_entries WHERE tenant_id = 'acme' AND type = 'user.created'");
      expect(audit.rows[0].n).toBe(1);
    } finally {
      await admin.end();
    }
  });

  it('refuses a platform role outside _platforms, an unknown tenant and a short password, naming why', () => {
    const role = svc(['users', 'create', '--tenant', 'acme', '--email', 'x@acme.example', '--role', 'superadmin'], 'Long-enough-password-1\n');
    expect(role.status).not.toBe(0);
    expect(role.stderr).toMatch(/role/);
    const unknown = svc(['users', 'create', '--tenant', 'nope', '--email', 'x@nope.example'], 'Long-enough-password-1\n');
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toMatch(/nope/);
    const short = svc(['users', 'create', '--tenant', 'acme', '--email', 'y@acme.example'], 'short\n');
    expect(short.status).not.toBe(0);
    expect(short.stderr).toMatch(/password/);
  });

  it('explains each command with --help', () => {
    for (const cmd of ['keys', 'migrate', 'clients', 'users', 'tenants', 'update', 'rollback']) {
      const run = svc([cmd, '--help']);
      expect(run.status, cmd).toBe(0);
      expect(run.stdout, cmd).toMatch(new RegExp(`^usage: svc ${cmd}`));
    }
  });
});
