/**
 * Issue 19 item 6: every CLI command run as a process (the built CLI, as an operator runs it) on
 * the embedded SQLite database: keys generate, migrate, clients create (including the scope-name
 * check), update and rollback. PostgreSQL's migrate: cli-migrate-postgresql.test.ts.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PasswordHasher } from '../../src/workers/password-hasher.js';

const CLI = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url));

let dir: string;
let env: Record<string, string>;
const svc = (args: string[], cwd = dir) => spawnSync(process.execPath, [CLI, ...args], { env, cwd, encoding: 'utf8', timeout: 120_000 });
const db = () => new Database(join(dir, 'svc.db'), { readonly: true });

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The CLI with a stdin the test writes (`feed`) and never closes unless it says so: a command that
 * reads stdin to its end would wait for ever, so it is ended after `limitMs` (status null).
 */
function svcFed(args: string[], feed: (write: (data: string | Buffer) => void) => Promise<void>, opts: { env?: Record<string, string>; limitMs?: number } = {}): Promise<Run> {
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: opts.env ?? env, cwd: dir });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdin.on('error', () => undefined); // the command may exit before reading everything
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.limitMs ?? 60_000);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolveRun({ status, stdout, stderr });
    });
    void feed((data) => {
      if (child.exitCode === null && child.stdin.writable) child.stdin.write(data);
    });
  });
}
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

  it('an unknown command, no command or a bad option is a usage error: exit 64, usage on stderr', () => {
    for (const [args, first] of [[['frobnicate'], /^svc: unknown command 'frobnicate'\nusage: svc/], [[], /^usage: svc/]] as const) {
      const run = svc([...args]);
      expect(run.status, args.join(' ')).toBe(64);
      expect(run.stderr).toMatch(first);
      expect(run.stdout).toBe('');
    }
    // An option the command does not take: the refusal, then that command's usage.
    const bogus = svc(['keys', 'generate', '--bogus']);
    expect(bogus.status).toBe(64);
    expect(bogus.stderr).toMatch(/^svc: Unknown option '--bogus'.*\nusage: svc keys generate/s);
    for (const args of [['users', 'create', '--bogus'], ['keys', 'generate', '--tenant'], ['clients', 'create'], ['rollback', 'extra'], ['migrate', 'extra']]) {
      const run = svc(args);
      expect(run.status, args.join(' ')).toBe(64);
      expect(run.stderr).toMatch(/^svc: /);
    }
    // Asked for, the usage is the answer.
    const help = svc(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^usage: svc/);
  });

  it('a refusal names each field error once', () => {
    const run = svc(['clients', 'create', '--name', 'x', '--grant-types', 'client_credentials', '--scope', 'read:orders']);
    expect(run.status).toBe(1);
    expect(run.stderr.match(/unknown scope: read:orders/g)).toHaveLength(1);
  });

  it("clients create writes the API's client.created entry (client_name), attributed to the CLI", () => {
    const run = svc(['clients', 'create', '--name', 'Audited job', '--grant-types', 'client_credentials', '--scope', 'svc:users:read']);
    expect(run.status, run.stderr).toBe(0);
    const { client_id } = JSON.parse(run.stdout) as { client_id: string };
    const entry = db().prepare("SELECT user_agent, details FROM audit_entries WHERE type = 'client.created' AND details LIKE ?").get(`%${client_id}%`) as { user_agent: string; details: string };
    expect(entry.user_agent).toBe('svc-cli');
    expect(JSON.parse(entry.details)).toEqual({ client_id, client_name: 'Audited job', source: 'cli' });
  });

  describe('users create: the password from stdin', () => {
    const hasher = new PasswordHasher({ argon2: { memory_cost: 19456, time_cost: 2, parallelism: 1 }, threads: 1, maxQueue: 4 });
    afterAll(() => hasher.close());
    const storedHash = (email: string) => db().prepare("SELECT password_hash FROM users WHERE tenant_id = 'default' AND email = ?").pluck().get(email) as string | undefined;

    it('reads the first line only, with a character split between writes kept whole, while the pipe stays open', async () => {
      const password = 'Pässwörd-long-1';
      const bytes = Buffer.from(`${password}\r\nsecond line\n`);
      const split = bytes.indexOf(Buffer.from('ä')) + 1; // inside the two bytes of ä
      const run = await svcFed(['users', 'create', '--email', 'split@example.com', '--name', 'Zoë'], async (write) => {
        write(bytes.subarray(0, split));
        await pause(300);
        write(bytes.subarray(split));
        // `yes pw |`: more keeps coming, the pipe never ends.
        for (let i = 0; i < 50; i++) {
          write('more\n'.repeat(1000));
          await pause(20);
        }
      });
      expect(run.status, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ email: 'split@example.com', name: 'Zoë' });
      const hash = storedHash('split@example.com')!;
      expect(await hasher.verify(hash, password)).toBe(true);
      const entry = db().prepare("SELECT user_agent, details FROM audit_entries WHERE type = 'user.created' AND user_id = ?").get(JSON.parse(run.stdout).id) as { user_agent: string; details: string };
      expect(entry.user_agent).toBe('svc-cli');
      expect(JSON.parse(entry.details)).toMatchObject({ role: 'user', source: 'cli' });
    });

    it('refuses invalid UTF-8, a NUL and an overlong line with a reason, storing nothing', async () => {
      const cases: Array<[Buffer, RegExp]> = [
        [Buffer.concat([Buffer.from('Long-enough-'), Buffer.from([0xff]), Buffer.from('pw\n')]), /not valid UTF-8/],
        [Buffer.from('Long-enough-\u0000password\n'), /password: must not contain NUL characters or unpaired surrogates/],
        [Buffer.alloc(5000, 0x61), /longer than 4096 bytes/],
      ];
      for (const [i, [input, reason]] of cases.entries()) {
        const email = `refused${i}@example.com`;
        const run = await svcFed(['users', 'create', '--email', email], async (write) => write(input));
        expect(run.status, String(reason)).toBe(1);
        expect(run.stderr).toMatch(reason);
        expect(storedHash(email)).toBeUndefined();
      }
    });

    it.skipIf(process.platform !== 'linux')('refuses an argument that is not valid UTF-8 (Node would store U+FFFD)', () => {
      const run = spawnSync('bash', ['-c', `exec "$0" "$1" users create --email badarg@example.com --name $'ab\\xffcd'`, process.execPath, CLI], { env, cwd: dir, input: 'Long-enough-password-1\n', encoding: 'utf8' });
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(/an argument is not valid UTF-8/);
      expect(storedHash('badarg@example.com')).toBeUndefined();
    });

    it('checks e-mail, role and tenant before reading the password', async () => {
      // stdin open and silent: a command that asked for the password first would wait for it.
      for (const [args, reason] of [
        [['--email', 'not-an-email'], /email/],
        [['--email', 'x@example.com', '--role', 'root'], /role/],
        [['--email', 'x@example.com', '--role', 'superadmin'], /role superadmin/],
        [['--email', 'x@example.com', '--tenant', 'nope'], /Tenant nope not found/],
        [['--email', 'split@example.com'], /already exists/],
      ] as Array<[string[], RegExp]>) {
        const run = await svcFed(['users', 'create', ...args], () => pause(0), { limitMs: 30_000 });
        expect(run.status, args.join(' ')).toBe(1);
        expect(run.stderr).toMatch(reason);
      }
    });
  });

  it('rollback refuses a previous release that is gone or a pointer of its own; update and rollback refuse extra arguments', () => {
    const releases = join(dir, 'rb-releases');
    const [a, b] = [join(dir, 'rb-a'), join(dir, 'rb-b')];
    for (const r of [a, b]) {
      mkdirSync(r);
      writeFileSync(join(r, 'package.json'), '{"name":"svc"}');
    }
    expect(svc(['update', a, '--releases', releases]).status).toBe(0);
    expect(svc(['update', b, '--releases', releases]).status).toBe(0);
    for (const args of [['update', a, 'extra'], ['rollback', 'extra']]) {
      const run = svc([...args, '--releases', releases]);
      expect(run.status, args.join(' ')).toBe(64);
      expect(run.stderr).toMatch(/Unexpected argument 'extra'/);
      expect(readlinkSync(join(releases, 'current'))).toBe(b);
    }
    const previous = join(releases, 'previous');
    const refusals: Array<[() => void, RegExp]> = [
      [() => rmSync(join(a, 'package.json')), /no package\.json/],
      [() => rmSync(a, { recursive: true }), /does not exist/],
      [() => (rmSync(previous), symlinkSync(join(releases, 'current'), previous)), /is the current one/],
      [() => (rmSync(previous), symlinkSync('previous', previous)), /symlink loop/],
    ];
    for (const [arrange, reason] of refusals) {
      arrange();
      const run = svc(['rollback', '--releases', releases]);
      expect(run.status, String(reason)).toBe(1);
      expect(run.stderr).toMatch(reason);
      expect(readlinkSync(join(releases, 'current'))).toBe(b);
    }
  });

  it('update refuses a current that is not a symlink, leaving no temporary link behind', () => {
    const releases = join(dir, 'dir-releases');
    mkdirSync(join(releases, 'current'), { recursive: true });
    const r = join(dir, 'dir-r');
    mkdirSync(r);
    writeFileSync(join(r, 'package.json'), '{}');
    const run = svc(['update', r, '--releases', releases]);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/current is not a symlink/);
    expect(run.stderr).not.toMatch(/EISDIR/);
    expect(readdirSync(releases)).toEqual(['current']);
  });

  it('keys generate run three times at once on a new file: the keys are reported created once', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'svc-cli-keys-'));
    try {
      const freshEnv = { ...env, STORAGE_SQLITE_PATH: join(fresh, 'svc.db') };
      const runs = await Promise.all([1, 2, 3].map(() => svcFed(['keys', 'generate'], () => pause(0), { env: freshEnv })));
      for (const run of runs) expect(run.status, run.stderr).toBe(0);
      const created = runs.flatMap((run) => (JSON.parse(run.stdout) as { created: Array<{ kid: string }> }).created.map((k) => k.kid));
      const stored = new Database(join(fresh, 'svc.db'), { readonly: true }).prepare('SELECT kid FROM signing_keys ORDER BY kid').pluck().all();
      expect(stored).toHaveLength(2);
      expect(created.sort()).toEqual(stored);
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });

  it.skipIf(!existsSync('/usr/bin/script'))('on a terminal: no runtime notice; the hidden prompt ends a line at Ctrl-D', async () => {
    // script(1) runs the command on a pseudo-terminal (stdin, stdout and stderr are TTYs there).
    const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const onTty = (args: string[], keys: string[]) =>
      new Promise<Run>((resolveRun) => {
        const child = spawn('script', ['-qec', [process.execPath, CLI, ...args].map(shellQuote).join(' '), '/dev/null'], { env, cwd: dir });
        let out = '';
        const pending = [...keys];
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          // One answer per prompt, sent once the prompt shows (raw mode is on by then).
          const prompts = out.match(/Password( \(again\))?: /g)?.length ?? 0;
          while (pending.length && prompts > keys.length - pending.length) child.stdin.write(pending.shift()!);
        });
        const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
        child.on('close', (status) => {
          clearTimeout(timer);
          resolveRun({ status, stdout: out, stderr: '' });
        });
      });
    const keys = await onTty(['keys', 'generate'], []);
    expect(keys.status, keys.stdout).toBe(0);
    expect(keys.stdout).not.toMatch(/Unsupported runtime/);
    const password = 'Terminal-password-1';
    const run = await onTty(['users', 'create', '--email', 'tty@example.com'], [`${password}\u0004`, `${password}\r`]);
    expect(run.status, run.stdout).toBe(0);
    expect(run.stdout).not.toContain(password);
    const hasher = new PasswordHasher({ argon2: { memory_cost: 19456, time_cost: 2, parallelism: 1 }, threads: 1, maxQueue: 4 });
    try {
      const hash = db().prepare("SELECT password_hash FROM users WHERE email = 'tty@example.com'").pluck().get() as string;
      expect(await hasher.verify(hash, password)).toBe(true);
    } finally {
      await hasher.close();
    }
    // Ctrl-D on an empty line: the end of input, the command cancelled.
    const cancelled = await onTty(['users', 'create', '--email', 'tty2@example.com'], ['\u0004']);
    expect(cancelled.status).toBe(1);
    expect(cancelled.stdout).toMatch(/cancelled/);
  });
});
