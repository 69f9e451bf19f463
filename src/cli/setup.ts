/** `svc keys generate` and `svc migrate`. */
import { parseArgs } from 'node:util';
import { createMissingKeys } from '../keys/keystore.js';
import { migratePostgres } from '../storage/postgresql/migrate.js';
import { toProblem } from '../http/problem.js';
import { DEFAULT_TENANT, isValidTenantName } from '../tenancy/resolver.js';
import { config, problemText, requireTenant, withContext } from './common.js';
import { fail } from './exit.js';

export async function keysGenerate(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { tenant: { type: 'string', default: DEFAULT_TENANT } } });
  const tenant = values.tenant!;
  if (!isValidTenantName(tenant)) fail(`'${tenant.slice(0, 80)}' is not a valid tenant name`);
  await withContext(async (ctx) => {
    // Keys made for a slug nobody created would become the signing keys of whoever creates it later.
    await requireTenant(ctx, tenant).catch((err: unknown) => {
      const problem = toProblem(err);
      if (problem) fail(problemText(problem));
      throw err;
    });
    // Only the keys this run inserted: a run that raced another one adopted its keys and created none.
    const { keys: after, created } = await createMissingKeys(ctx.storage.keys, tenant, ctx.config.security.key_store.algorithms, ctx.sealer);
    process.stdout.write(
      JSON.stringify({ tenant, created: created.map((k) => ({ kid: k.kid, alg: k.alg })), active: after.filter((k) => k.status === 'active').map((k) => ({ kid: k.kid, alg: k.alg })) }, null, 2) + '\n',
    );
  });
}

export async function migrate(args: string[]): Promise<void> {
  // No options: parseArgs refuses any option or argument, as every other command does.
  parseArgs({ args, options: {} });
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
