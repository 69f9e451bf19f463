#!/usr/bin/env node
/**
 * `svc` command-line tool (CONTRACT.md): keys generate, migrate, clients create, users create,
 * tenants create, update, rollback; `svc <command> --help` for each. Uses the same configuration
 * (env / SVC_CONFIG_FILE) as the service, and the same domain modules as the Management API.
 * This file is the entry point (usage, help, dispatch); the commands live in src/cli/.
 */
// First: keeps oidc-provider's runtime notice out of every command's output.
import { restoreWarnings } from './quiet-runtime-notice.js';
import { EX_USAGE, fail } from './cli/exit.js';
import { InputError, refuseInvalidUtf8Arguments } from './cli/input.js';

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

Exit status: 0 done; 64 usage error (unknown command or option, missing argument); 78 bad
configuration; 1 any other refusal or failure (the reason is printed on stderr).
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

/** The usage of the command being run, printed after a usage error of its options. */
let commandUsage = USAGE;

async function main(argv: string[]): Promise<void> {
  restoreWarnings();
  const [cmd, sub, ...rest] = argv;
  if (cmd && HELP[cmd]) commandUsage = HELP[cmd]!;
  if (cmd === 'help' || cmd === '--help' || cmd === '-h') {
    process.stdout.write(USAGE);
    return;
  }
  if (cmd && HELP[cmd] && (argv.includes('--help') || argv.includes('-h'))) {
    process.stdout.write(HELP[cmd]!);
    return;
  }
  refuseInvalidUtf8Arguments(argv);
  const args = [sub, ...rest].filter((a): a is string => a !== undefined);
  // Each command's module is loaded when it is asked for: the file commands (update, rollback),
  // help and usage errors load no storage, and no command loads the HTTP side.
  if (cmd === 'keys' && sub === 'generate') return (await import('./cli/setup.js')).keysGenerate(rest);
  if (cmd === 'migrate') return (await import('./cli/setup.js')).migrate(args);
  if (cmd === 'clients' && sub === 'create') return (await import('./cli/accounts.js')).clientsCreate(rest);
  if (cmd === 'users' && sub === 'create') return (await import('./cli/accounts.js')).usersCreate(rest);
  if (cmd === 'tenants' && sub === 'create') return (await import('./cli/accounts.js')).tenantsCreate(rest);
  if (cmd === 'update') return (await import('./cli/releases.js')).update(args);
  if (cmd === 'rollback') return (await import('./cli/releases.js')).rollback(args);
  // No command or an unknown one: a usage error (asked for, `svc help` prints it on stdout, exit 0).
  if (cmd !== undefined) process.stderr.write(`svc: unknown command '${[cmd, sub].filter(Boolean).join(' ').slice(0, 80)}'\n`);
  process.stderr.write(USAGE);
  process.exit(EX_USAGE);
}

/** node:util parseArgs refusals (unknown option, unexpected argument, option without its value). */
const isUsageError = (err: unknown) => typeof (err as { code?: unknown })?.code === 'string' && (err as { code: string }).code.startsWith('ERR_PARSE_ARGS_');

main(process.argv.slice(2)).catch((err: unknown) => {
  if (isUsageError(err)) {
    // The refusal, then how the command is used (README: the usage goes to stderr).
    process.stderr.write(`svc: ${(err as Error).message}\n${commandUsage}`);
    process.exit(EX_USAGE);
  }
  if (err instanceof InputError) fail(err.message);
  fail(err instanceof Error ? err.message : String(err));
});
