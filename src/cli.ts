#!/usr/bin/env node
/**
 * `svc` command-line tool (CONTRACT.md): keys generate, migrate, clients create, update, rollback.
 * Uses the same configuration (env / SVC_CONFIG_FILE) as the service.
 */
import { existsSync, mkdirSync, readlinkSync, renameSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { buildContext } from './app.js';
import { ConfigError, loadConfig, type Config } from './config/index.js';
import { ProblemError } from './http/problem.js';
import { ensureKeys } from './keys/keystore.js';
import { clientMetadata, createClient, presentClient } from './clients/operations.js';
import { clientCreateSchema } from './clients/schema.js';
import { migratePostgres } from './storage/postgresql/migrate.js';
import { DEFAULT_TENANT } from './tenancy/resolver.js';

const USAGE = `usage: svc <command>

  keys generate [--tenant T]          create the signing keys of security.key_store.algorithms if missing
  migrate                             apply pending database migrations (the spec's migrate-deploy;
                                      PostgreSQL: STORAGE_POSTGRESQL_URL must name the schema owner)
  clients create --name N [--grant-types a,b] [--scope "s1 s2"] [--redirect-uris u1,u2]
                 [--application-type web|native|spa] [--auth-method M] [--tenant T]
                                      create a client and print it as JSON (the secret is shown once)
  update <release-dir> [--releases DIR]  point the release pointer at a new release (files only)
  rollback [--releases DIR]           point the release pointer back at the previous release
`;

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
  const ctx = await buildContext(cfg, { log: pino({ level: 'warn' }, pino.destination(2)) });
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
      if (err instanceof ProblemError) fail(`${err.detail}`);
      throw err;
    }
  });
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
  const [cmd, sub, ...rest] = argv;
  if (cmd === 'keys' && sub === 'generate') return keysGenerate(rest);
  if (cmd === 'migrate') return migrate();
  if (cmd === 'clients' && sub === 'create') return clientsCreate(rest);
  if (cmd === 'update') return update([sub, ...rest].filter((a): a is string => a !== undefined));
  if (cmd === 'rollback') return rollback([sub, ...rest].filter((a): a is string => a !== undefined));
  process.stdout.write(USAGE);
  if (cmd && cmd !== 'help' && cmd !== '--help') process.exit(64);
}

main(process.argv.slice(2)).catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
