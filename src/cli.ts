#!/usr/bin/env node
/**
 * `svc` command-line tool (CONTRACT.md): keys generate, migrate, clients create, users create,
 * tenants create, update, rollback; `svc <command> --help` for each. Uses the same configuration
 * (env / SVC_CONFIG_FILE) as the service, and the same domain modules as the Management API.
 */
// First: keeps oidc-provider's runtime notice out of every command's output.
import { restoreWarnings } from './quiet-runtime-notice.js';
import { existsSync, mkdirSync, readlinkSync, renameSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createCliLogger } from './log.js';
import { buildContext } from './app.js';
import { ConfigError, loadConfig, type Config } from './config/index.js';
import { ProblemError, toProblem } from './http/problem.js';
import { ensureKeys } from './keys/keystore.js';
import { clientMetadata, createClient, presentClient } from './clients/operations.js';
import { clientCreateSchema } from './clients/schema.js';
import { migratePostgres } from './storage/postgresql/migrate.js';
import { createTenant, presentTenant } from './tenants/operations.js';
import { tenantCreateSchema } from './tenants/schema.js';
import { createUser, presentUser } from './users/operations.js';
import { userCreateSchema } from './users/schema.js';
import { DEFAULT_TENANT } from './tenancy/resolver.js';

const USAGE = `usage: svc <command>

  keys generate [--tenant T]          create the signing keys of security.key_store.algorithms if missing
  migrate                             apply pending database migrations (the spec's migrate-deploy;
                                      PostgreSQL: STORAGE_POSTGRESQL_URL must name the schema owner)
  clients create --name N [--grant-types a,b] [--scope "s1 s2"] [--redirect-uris u1,u2]
                 [--application-type web|native|spa] [--auth-method M] [--tenant T]
                                      create a client and print it as JSON (the secret is shown once)
  users create --email E [--role user|admin|superadmin|platform_admin] [--name N] [--tenant T]
                                      create a user who can sign in at once; the password is asked
                                      for (hidden) on a terminal, or read from the first line of stdin
  tenants create --slug S --name N [--domain D]
                                      create a tenant (multi-tenant mode) with its signing keys
  update <release-dir> [--releases DIR]  point the release pointer at a new release (files only;
                                      migrations, backups, restarts stay the operator's)
  rollback [--releases DIR]           point the release pointer back at the previous release
                                      (application files only; migrations are not reversed)

  svc <command> --help                what one command does and its options
`;

/** One paragraph per command for `svc <command> --help`. */
const HELP: Record<string, string> = {
  keys: `usage: svc keys generate [--tenant T]
Creates the signing keys of security.key_store.algorithms for the tenant (default: default) if
they are missing (first-boot bootstrap, spec 1.6). Rotation is the Management API's job
(POST /api/v1/jwks/rotate). Prints the created and the active keys as JSON.
`,
  migrate: `usage: svc migrate
Applies pending database migrations (the spec's migrate-deploy). PostgreSQL: STORAGE_POSTGRESQL_URL
must name the schema owner; the service refuses to start until this has run. SQLite: opening the
file applies them.
`,
  clients: `usage: svc clients create --name N [--grant-types a,b] [--scope "s1 s2"] [--redirect-uris u1,u2]
                         [--application-type web|native|spa] [--auth-method M] [--tenant T]
Creates a client with the Management API's rules and defaults and prints it as JSON; a
confidential client's secret is shown this once.
`,
  users: `usage: svc users create --email E [--role R] [--name N] [--tenant T]
Creates a user (Management API rules: unique e-mail, password policy, roles superadmin and
platform_admin only in _platforms). The password is asked for twice, hidden, on a terminal, or
read from the first line of standard input:  echo "$PASSWORD" | svc users create --email a@b.c
Prints the user as JSON (never the password). Role admin opens the console at /admin.
`,
  tenants: `usage: svc tenants create --slug S --name N [--domain D]
Creates a tenant and its signing keys (multi-tenant mode: MULTI_TENANCY_ENABLED=true with
PostgreSQL and Redis). Its issuer is the BASE_URL host prefixed by the slug.
`,
  update: `usage: svc update <release-dir> [--releases DIR]
Points DIR/current (default ./releases/current) at the release directory and remembers the one
before as DIR/previous. Application files only: migrations ('svc migrate'), backups, the restart
and health checks are the operator's.
`,
  rollback: `usage: svc rollback [--releases DIR]
Points DIR/current back at DIR/previous. Application files only: database migrations are not
reversed.
`,
};

function fail(message: string, code = 1): never {
  process.stderr.write(`svc: ${message}\n`);
  process.exit(code);
}

function config(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) fail(err.problems.join('\n'), 78);
    throw err;
  }
}

async function withContext<T>(fn: (ctx: Awaited<ReturnType<typeof buildContext>>) => Promise<T>): Promise<T> {
  const cfg = config();
  const ctx = await buildContext(cfg, { log: createCliLogger(cfg) });
  try {
    return await fn(ctx);
  } finally {
    await ctx.storage.close();
    // With REDIS_URL, open connections would keep the command from exiting.
    await ctx.events.close();
    await ctx.redis?.close();
  }
}

async function keysGenerate(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { tenant: { type: 'string', default: DEFAULT_TENANT } } });
  await withContext(async (ctx) => {
    const tenant = values.tenant!;
    const before = await ctx.storage.keys.list(tenant);
    const after = await ensureKeys(ctx.storage.keys, tenant, ctx.config.security.key_store.algorithms, ctx.sealer);
    const created = after.filter((k) => !before.some((b) => b.kid === k.kid));
    process.stdout.write(
      JSON.stringify({ tenant, created: created.map((k) => ({ kid: k.kid, alg: k.alg })), active: after.filter((k) => k.status === 'active').map((k) => ({ kid: k.kid, alg: k.alg })) }, null, 2) + '\n',
    );
  });
}

async function migrate(): Promise<void> {
  const cfg = config();
  const url = cfg.storage.postgresql.url;
  if (cfg.storage.adapter === 'postgresql' && url) {
    // The service never migrates PostgreSQL itself (it refuses to start on an older schema): this
    // connects as the URL's role, which must own the schema, not as the service role.
    const applied = await migratePostgres(url);
    process.stdout.write(applied.length ? `migrations applied (postgresql): ${applied.join(', ')}\n` : 'schema is current (postgresql)\n');
    return;
  }
  // Opening the SQLite file applies its pending migrations.
  await withContext(async (ctx) => {
    process.stdout.write(`migrations applied (${ctx.storage.kind})\n`);
  });
}

async function clientsCreate(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      name: { type: 'string' },
      'grant-types': { type: 'string' },
      scope: { type: 'string' },
      'redirect-uris': { type: 'string' },
      'application-type': { type: 'string' },
      'auth-method': { type: 'string' },
      tenant: { type: 'string', default: DEFAULT_TENANT },
    },
  });
  if (!values.name) fail('clients create needs --name');
  const list = (v: string | undefined) => (v ? v.split(',').map((s) => s.trim()).filter(Boolean) : undefined);
  const input = clientCreateSchema.safeParse({
    client_name: values.name,
    grant_types: list(values['grant-types']),
    scope: values.scope,
    redirect_uris: list(values['redirect-uris']),
    application_type: values['application-type'],
    token_endpoint_auth_method: values['auth-method'],
  });
  if (!input.success) fail(input.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  await withContext(async (ctx) => {
    try {
      const scope = { ctx, tenant: values.tenant! };
      const { record, secret } = await createClient(scope, clientMetadata(scope, input.data), {
        audit: (r) => ({ type: 'client.created', details: { client_id: r.client_id, source: 'cli' } }),
      });
      process.stdout.write(JSON.stringify(presentClient(record, secret), null, 2) + '\n');
    } catch (err) {
      const problem = toProblem(err);
      if (problem) fail(problem.detail);
      throw err;
    }
  });
}

/** The password of `users create`: hidden prompt (twice) on a terminal, else the first line of stdin. */
async function readPassword(): Promise<string> {
  if (!process.stdin.isTTY) {
    let data = '';
    for await (const chunk of process.stdin) data += String(chunk);
    return data.split(/\r?\n/)[0] ?? '';
  }
  const ask = (prompt: string) =>
    new Promise<string>((resolveAnswer) => {
      process.stderr.write(prompt);
      const stdin = process.stdin;
      stdin.setRawMode(true);
      stdin.resume();
      let answer = '';
      const onData = (buf: Buffer) => {
        for (const ch of buf.toString('utf8')) {
          if (ch === '\r' || ch === '\n') {
            stdin.setRawMode(false);
            stdin.pause();
            stdin.off('data', onData);
            process.stderr.write('\n');
            return resolveAnswer(answer);
          }
          if (ch === '\u0003') fail('cancelled', 130);
          if (ch === '\u007f') answer = answer.slice(0, -1);
          else answer += ch;
        }
      };
      stdin.on('data', onData);
    });
  const first = await ask('Password: ');
  const again = await ask('Password (again): ');
  if (first !== again) fail('the passwords differ');
  return first;
}

async function usersCreate(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { email: { type: 'string' }, role: { type: 'string' }, name: { type: 'string' }, tenant: { type: 'string', default: DEFAULT_TENANT } },
  });
  if (!values.email) fail('users create needs --email');
  const password = await readPassword();
  const input = userCreateSchema.safeParse({ email: values.email, password, role: values.role, name: values.name });
  if (!input.success) fail(input.error.issues.map((i) => `${i.path.join('.') === 'password' ? 'password' : i.path.join('.')}: ${i.message}`).join('; '));
  await withContext(async (ctx) => {
    const tenant = values.tenant!;
    try {
      if (tenant !== DEFAULT_TENANT || ctx.config.multi_tenancy.enabled) await ctx.registry.require(tenant);
      const { config: tenantConfig } = await ctx.tenantStates.get(tenant);
      const user = await createUser({ ctx, tenant, config: tenantConfig, by: { user_agent: 'svc-cli' } }, input.data);
      process.stdout.write(JSON.stringify(presentUser(user), null, 2) + '\n');
    } catch (err) {
      const problem = toProblem(err);
      if (problem) fail(problemText(problem));
      throw err;
    }
  });
}

async function tenantsCreate(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { slug: { type: 'string' }, name: { type: 'string' }, domain: { type: 'string' } } });
  if (!values.slug || !values.name) fail('tenants create needs --slug and --name');
  const input = tenantCreateSchema.safeParse({ slug: values.slug, display_name: values.name, domain: values.domain });
  if (!input.success) fail(input.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  await withContext(async (ctx) => {
    if (!ctx.config.multi_tenancy.enabled) fail('tenants exist only in multi-tenant mode (MULTI_TENANCY_ENABLED=true, with PostgreSQL and Redis)');
    try {
      const tenant = await createTenant(ctx, input.data);
      process.stdout.write(JSON.stringify({ ...presentTenant(tenant), issuer: ctx.resolver.issuerOf(tenant.slug) }, null, 2) + '\n');
    } catch (err) {
      const problem = toProblem(err);
      if (problem) fail(problemText(problem));
      throw err;
    }
  });
}

/** A problem in one line: its detail and, for a validation error, each field's message. */
function problemText(err: ProblemError): string {
  const fields = (err.extra?.errors as Array<{ field: string; message: string }> | undefined) ?? [];
  return [err.detail, ...fields.map((f) => `${f.field}: ${f.message}`)].join('; ');
}

/** Release pointer: <releases>/current is a symlink; <releases>/previous remembers the one before. */
function releasesDir(args: string[]): { dir: string; rest: string[] } {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { releases: { type: 'string', default: './releases' } } });
  return { dir: resolve(values.releases!), rest: positionals };
}

function pointTo(dir: string, name: string, target: string): void {
  const link = join(dir, name);
  const tmp = `${link}.tmp-${process.pid}`;
  symlinkSync(target, tmp);
  renameSync(tmp, link); // atomic switch
}

function currentTarget(dir: string, name: string): string | undefined {
  try {
    return readlinkSync(join(dir, name));
  } catch {
    return undefined;
  }
}

function update(args: string[]): void {
  const { dir, rest } = releasesDir(args);
  const release = rest[0];
  if (!release) fail('update needs the release directory');
  const target = resolve(release);
  if (!existsSync(join(target, 'package.json'))) fail(`${target} does not look like a release (no package.json)`);
  mkdirSync(dir, { recursive: true });
  const previous = currentTarget(dir, 'current');
  if (previous) pointTo(dir, 'previous', previous);
  pointTo(dir, 'current', target);
  process.stdout.write(`current -> ${target}${previous ? ` (previous -> ${previous})` : ''}\nMigrations, backups, restart and health checks are the operator's: run 'svc migrate' and restart the service.\n`);
}

function rollback(args: string[]): void {
  const { dir } = releasesDir(args);
  const previous = currentTarget(dir, 'previous');
  const current = currentTarget(dir, 'current');
  if (!previous) fail(`no previous release recorded in ${dir}`);
  pointTo(dir, 'current', previous);
  if (current) pointTo(dir, 'previous', current);
  process.stdout.write(`current -> ${previous}\nDatabase migrations are not reversed.\n`);
}

async function main(argv: string[]): Promise<void> {
  restoreWarnings();
  const [cmd, sub, ...rest] = argv;
  if (cmd && HELP[cmd] && (argv.includes('--help') || argv.includes('-h'))) {
    process.stdout.write(HELP[cmd]!);
    return;
  }
  if (cmd === 'keys' && sub === 'generate') return keysGenerate(rest);
  if (cmd === 'migrate') return migrate();
  if (cmd === 'clients' && sub === 'create') return clientsCreate(rest);
  if (cmd === 'users' && sub === 'create') return usersCreate(rest);
  if (cmd === 'tenants' && sub === 'create') return tenantsCreate(rest);
  if (cmd === 'update') return update([sub, ...rest].filter((a): a is string => a !== undefined));
  if (cmd === 'rollback') return rollback([sub, ...rest].filter((a): a is string => a !== undefined));
  process.stdout.write(USAGE);
  if (cmd && cmd !== 'help' && cmd !== '--help') process.exit(64);
}

main(process.argv.slice(2)).catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
