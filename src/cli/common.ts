/** What the `svc` commands on stored data share: the configuration, a built context, refusals in one line. */
import { buildContext } from '../build-context.js';
import { ConfigError, loadConfig, type Config } from '../config/index.js';
import type { AppContext } from '../context.js';
import type { ProblemError } from '../http/problem.js';
import { DEFAULT_TENANT } from '../tenancy/resolver.js';
import { createCliLogger } from '../log.js';
import { fail } from './exit.js';

export function config(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) fail(err.problems.join('\n'), 78);
    throw err;
  }
}

export async function withContext<T>(fn: (ctx: Awaited<ReturnType<typeof buildContext>>) => Promise<T>): Promise<T> {
  const cfg = config();
  // A command serves no token, so it keeps no users in memory and opens no listening connection;
  // its writes still reach the running instances' memory through the database's notices.
  const storage = { ...cfg.storage, postgresql: { ...cfg.storage.postgresql, user_cache: false } };
  const ctx = await buildContext({ ...cfg, storage }, { log: createCliLogger(cfg) });
  try {
    return await fn(ctx);
  } finally {
    await ctx.storage.close();
    // With REDIS_URL, open connections would keep the command from exiting.
    await ctx.events.close();
    await ctx.redis?.close();
  }
}

/**
 * A problem in one line: its detail and, for a validation error, each field's message the detail
 * does not already carry (a validation problem's default detail is the list of field messages).
 */
export function problemText(err: ProblemError): string {
  const fields = (err.extra?.errors as Array<{ field: string; message: string }> | undefined) ?? [];
  const missing = fields.map((f) => `${f.field}: ${f.message}`).filter((text) => !err.detail.includes(text));
  return [err.detail, ...missing].join('; ');
}

/**
 * A record (client, user, keys) is written only for a tenant that exists (404 otherwise): one
 * written for a slug nobody created would come to life in the tenant created later under that slug.
 * `default` needs no record in single-tenant mode.
 */
export async function requireTenant(ctx: Pick<AppContext, 'config' | 'registry'>, tenant: string): Promise<void> {
  if (tenant !== DEFAULT_TENANT || ctx.config.multi_tenancy.enabled) await ctx.registry.require(tenant);
}
