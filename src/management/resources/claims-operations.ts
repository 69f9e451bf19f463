/**
 * The tenant's custom claims (issue 19 item 3): GET and PUT /api/v1/claims, under the resources
 * scopes (they shape the tokens the tenant's APIs receive). PUT replaces the whole list and is
 * live at once on every instance (config:changed, section `custom_claims`).
 */
import { z } from 'zod';
import { configChangedChannel, type ConfigChangedEvent } from '../../events/bus.js';
import { CUSTOM_CLAIMS_DOCUMENT, CLAIM_SOURCES, customClaimsSchema, loadCustomClaims } from '../../resources/custom-claims.js';
import { op, type Call, type Operation } from '../operation.js';
import { dataEnvelope, sendJson, serializer } from '../respond.js';

const claimsResponse = z.object({
  claims: z.array(z.object({ name: z.string(), from: z.enum(CLAIM_SOURCES).optional(), value: z.union([z.string(), z.number(), z.boolean()]).optional() })),
});
const out = serializer(dataEnvelope(claimsResponse));

async function claimsChanged(call: Call): Promise<void> {
  const { ctx, tenant } = call;
  try {
    await call.actor.reload();
  } catch (err) {
    ctx.log.error({ err, tenant }, 'custom claims could not be applied to the local actor');
  }
  const event: ConfigChangedEvent = { tenant, section: CUSTOM_CLAIMS_DOCUMENT, at: new Date().toISOString() };
  try {
    await ctx.events.publish(configChangedChannel(tenant, ctx.config.redis.key_prefix), event);
  } catch (err) {
    ctx.log.warn({ err, tenant }, 'config:changed event (custom claims) could not be published');
  }
}

export const claimsOperations: Operation[] = [
  op({
    method: 'GET', path: '/api/v1/claims', scope: 'svc:resources:read', rateClass: 'read', tag: 'resources', summary: "The tenant's custom token claims",
    success: { status: 200, schema: dataEnvelope(claimsResponse) },
    handler: async (call) => sendJson(200, out({ data: { claims: await loadCustomClaims(call.ctx.storage.tenantConfig, call.tenant) } })),
  }),
  op({
    method: 'PUT', path: '/api/v1/claims', scope: 'svc:resources:write', rateClass: 'write', tag: 'resources', summary: 'Replace the custom token claims (from a user field or a fixed value; reserved claims refused)',
    body: customClaimsSchema,
    success: { status: 200, schema: dataEnvelope(claimsResponse) },
    errors: [422],
    handler: async (call) => {
      await call.ctx.storage.tenantConfig.put(call.tenant, CUSTOM_CLAIMS_DOCUMENT, call.body as unknown as Record<string, unknown>);
      await claimsChanged(call);
      await call.audit({ type: 'claims.updated', details: { claims: call.body.claims.map((c) => c.name) } });
      return sendJson(200, out({ data: call.body }));
    },
  }),
];
