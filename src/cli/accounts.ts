/**
 * `svc clients create`, `svc users create`, `svc tenants create`: the same domain operations as the
 * Management API (src/clients, src/users, src/tenants); a refusal is printed as one line.
 */
import { parseArgs } from 'node:util';
import type { z } from 'zod';
import { clientMetadata, createClient, presentClient } from '../clients/operations.js';
import { clientCreateSchema } from '../clients/schema.js';
import { toProblem } from '../http/problem.js';
import { createTenant, presentTenant } from '../tenants/operations.js';
import { tenantCreateSchema } from '../tenants/schema.js';
import { DEFAULT_TENANT, PLATFORM_TENANT } from '../tenancy/resolver.js';
import { checkNewUser, createUser, presentUser } from '../users/operations.js';
import { userCreateSchema } from '../users/schema.js';
import { problemText, requireTenant, withContext } from './common.js';
import { fail, usageError } from './exit.js';
import { PromptLine, type PromptState, readFirstLine, refuseUnstorable } from './input.js';

/** How an entry written by the CLI names its caller (the API's entries name the client and address). */
const CLI_BY = { user_agent: 'svc-cli' } as const;

/** A schema refusal in one line: each field's message. */
const issuesText = (error: z.ZodError) => error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');

/** The option values as the storable-text check names them (`--name`). */
const optionTexts = (values: Record<string, string | undefined>) => Object.fromEntries(Object.entries(values).map(([k, v]) => [`--${k}`, v]));

export async function clientsCreate(args: string[]): Promise<void> {
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
  if (!values.name) usageError('clients create needs --name');
  refuseUnstorable(optionTexts(values));
  const list = (v: string | undefined) => (v ? v.split(',').map((s) => s.trim()).filter(Boolean) : undefined);
  const input = clientCreateSchema.safeParse({
    client_name: values.name,
    grant_types: list(values['grant-types']),
    scope: values.scope,
    redirect_uris: list(values['redirect-uris']),
    application_type: values['application-type'],
    token_endpoint_auth_method: values['auth-method'],
  });
  if (!input.success) fail(issuesText(input.error));
  await withContext(async (ctx) => {
    try {
      await requireTenant(ctx, values.tenant!);
      const scope = { ctx, tenant: values.tenant!, by: CLI_BY };
      // The API's entry (client_id, client_name), written with the client in one transaction.
      const { record, secret } = await createClient(scope, clientMetadata(scope, input.data), {
        audit: (r) => ({ type: 'client.created', details: { client_id: r.client_id, client_name: r.metadata.client_name, source: 'cli' } }),
      });
      process.stdout.write(JSON.stringify(presentClient(record, secret), null, 2) + '\n');
    } catch (err) {
      const problem = toProblem(err);
      if (problem) fail(problemText(problem));
      throw err;
    }
  });
}

/** The password of `users create`: hidden prompt (twice) on a terminal, else the first line of stdin. */
async function readPassword(): Promise<string> {
  if (!process.stdin.isTTY) return readFirstLine(process.stdin);
  const ask = (prompt: string) =>
    new Promise<string>((resolveAnswer, reject) => {
      const stdin = process.stdin;
      const line = new PromptLine();
      const stop = () => {
        stdin.setRawMode(false);
        stdin.pause();
        stdin.off('data', onData);
        process.stderr.write('\n');
      };
      const onData = (buf: Buffer) => {
        let state: PromptState;
        try {
          state = line.feed(buf);
        } catch (err) {
          stop();
          return reject(err);
        }
        if (state.status === 'reading') return;
        stop();
        if (state.status === 'done') return resolveAnswer(state.line);
        fail('cancelled', state.reason === 'interrupt' ? 130 : 1);
      };
      // Raw mode before the prompt shows: nothing typed after it is echoed or line-edited.
      stdin.setRawMode(true);
      process.stderr.write(prompt);
      stdin.resume();
      stdin.on('data', onData);
    });
  const first = await ask('Password: ');
  const again = await ask('Password (again): ');
  if (first !== again) fail('the passwords differ');
  return first;
}

/** The user fields but the password: checked before the operator is asked for one. */
const userFieldsSchema = userCreateSchema.omit({ password: true });

export async function usersCreate(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { email: { type: 'string' }, role: { type: 'string' }, name: { type: 'string' }, tenant: { type: 'string', default: DEFAULT_TENANT } },
  });
  if (!values.email) usageError('users create needs --email');
  refuseUnstorable(optionTexts(values));
  const fields = { email: values.email, role: values.role, name: values.name };
  const checked = userFieldsSchema.safeParse(fields);
  if (!checked.success) fail(issuesText(checked.error));
  await withContext(async (ctx) => {
    const tenant = values.tenant!;
    try {
      // Everything that needs no password is refused before the operator types it (twice).
      await requireTenant(ctx, tenant);
      await checkNewUser({ ctx, tenant }, checked.data);
      const password = await readPassword();
      refuseUnstorable({ password });
      const input = userCreateSchema.safeParse({ ...fields, password });
      if (!input.success) fail(issuesText(input.error));
      const { config: tenantConfig } = await ctx.tenantStates.get(tenant);
      const user = await createUser({ ctx, tenant, config: tenantConfig, by: CLI_BY }, input.data, (id) => ({
        type: 'user.created',
        user_id: id,
        details: { user_id: id, role: input.data.role ?? 'user', source: 'cli' },
      }));
      process.stdout.write(JSON.stringify(presentUser(user), null, 2) + '\n');
    } catch (err) {
      const problem = toProblem(err);
      if (problem) fail(problemText(problem));
      throw err;
    }
  });
}

export async function tenantsCreate(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { slug: { type: 'string' }, name: { type: 'string' }, domain: { type: 'string' } } });
  if (!values.slug || !values.name) usageError('tenants create needs --slug and --name');
  refuseUnstorable(optionTexts(values));
  const input = tenantCreateSchema.safeParse({ slug: values.slug, display_name: values.name, domain: values.domain });
  if (!input.success) fail(issuesText(input.error));
  await withContext(async (ctx) => {
    if (!ctx.config.multi_tenancy.enabled) fail('tenants exist only in multi-tenant mode (MULTI_TENANCY_ENABLED=true, with PostgreSQL and Redis)');
    try {
      const tenant = await createTenant(ctx, input.data);
      // The API's entry, in _platforms as the API writes it; one that cannot be written fails the
      // command (the tenant stays: recordOrFail's message says so), as the API answers 503.
      await ctx.audit.recordOrFail(PLATFORM_TENANT, { ...CLI_BY, type: 'tenant.created', details: { tenant_id: tenant.id, slug: tenant.slug, source: 'cli' } });
      process.stdout.write(JSON.stringify({ ...presentTenant(tenant), issuer: ctx.resolver.issuerOf(tenant.slug) }, null, 2) + '\n');
    } catch (err) {
      const problem = toProblem(err);
      if (problem) fail(problemText(problem));
      throw err;
    }
  });
}
