/**
 * `svc clients create`, `svc users create`, `svc tenants create`: the same domain operations as the
 * Management API (src/clients, src/users, src/tenants); a refusal is printed as one line.
 */
import { parseArgs } from 'node:util';
import { clientMetadata, createClient, presentClient } from '../clients/operations.js';
import { clientCreateSchema } from '../clients/schema.js';
import { toProblem } from '../http/problem.js';
import { DEFAULT_TENANT } from '../tenancy/resolver.js';
import { createTenant, presentTenant } from '../tenants/operations.js';
import { tenantCreateSchema } from '../tenants/schema.js';
import { createUser, presentUser } from '../users/operations.js';
import { userCreateSchema } from '../users/schema.js';
import { fail, problemText, requireTenant, withContext } from './common.js';

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
      await requireTenant(ctx, values.tenant!);
      const scope = { ctx, tenant: values.tenant! };
      const { record, secret } = await createClient(scope, clientMetadata(scope, input.data), {
        audit: (r) => ({ type: 'client.created', details: { client_id: r.client_id, source: 'cli' } }),
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

export async function usersCreate(args: string[]): Promise<void> {
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
      await requireTenant(ctx, tenant);
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

export async function tenantsCreate(args: string[]): Promise<void> {
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
