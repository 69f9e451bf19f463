/**
 * The callback URL to register at each social provider (CONTRACT.md "End-user surface": "shown in
 * the README and the admin console"), read-only and computed, so the console shows what the server
 * will actually send as redirect_uri (global providers from the config file included, which the
 * config overrides resource does not show):
 *
 *   GET /api/v1/config/social-callbacks                 this tenant's          svc:config:read
 *   GET /api/v1/tenants/:slug/config/social-callbacks   any tenant's (platform) svc:cross-tenant:read
 *
 * -> {data: {relay, providers: [{name, display_name, preset, enabled, callback_url}]}}. Names and
 * URLs only: no client id, no secret.
 */
import { z } from 'zod';
import { notFound } from '../../http/problem.js';
import { pathParam } from '../../http/router.js';
import { socialCallbacks } from '../../social/callbacks.js';
import { OPS_TENANT } from '../../tenancy/resolver.js';
import { op, type Call, type Operation } from '../operation.js';
import { dataEnvelope, sendJson, serializer } from '../respond.js';

const callbacksSchema = dataEnvelope(
  z.object({
    relay: z.boolean(),
    providers: z.array(z.object({ name: z.string(), display_name: z.string(), preset: z.string().nullable(), enabled: z.boolean(), callback_url: z.string() })),
  }),
);
const callbacksOut = serializer(callbacksSchema);

async function read(call: Call, tenant: string) {
  const { ctx } = call;
  const { config } = await ctx.tenantStates.get(tenant);
  const data = socialCallbacks(config, tenant, ctx.sealer, {
    issuer: ctx.resolver.issuerOf(tenant),
    ...(ctx.config.multi_tenancy.enabled ? { opsIssuer: ctx.resolver.issuerOf(OPS_TENANT) } : {}),
  });
  return sendJson(200, callbacksOut({ data }));
}

export const socialCallbackOperations: Operation[] = [
  op({
    method: 'GET', path: '/api/v1/config/social-callbacks', scope: 'svc:config:read', rateClass: 'read', tag: 'config',
    summary: "The callback URL to register at each social provider of this tenant (the presets and every configured provider), and whether it is offered now",
    success: { status: 200, schema: callbacksSchema },
    handler: async (call) => read(call, call.tenant),
  }),
  op({
    method: 'GET', path: '/api/v1/tenants/:slug/config/social-callbacks', scope: 'svc:cross-tenant:read', rateClass: 'read', tag: 'tenants',
    summary: "The callback URL to register at each social provider of a tenant, and whether it is offered now",
    platform: true,
    success: { status: 200, schema: callbacksSchema },
    errors: [404],
    handler: async (call) => {
      const slug = pathParam(call.req, 'slug');
      if (!(await call.ctx.registry.find(slug))) throw notFound(`Tenant ${slug} not found`);
      return read(call, slug);
    },
  }),
];
