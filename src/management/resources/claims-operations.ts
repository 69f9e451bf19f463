/**
 * The tenant's custom claims (issue 19 item 3): GET and PUT /api/v1/claims, under the resources
 * scopes (they shape the tokens the tenant's APIs receive). PUT replaces the whole list and is
 * live at once on every instance (config:changed, section `custom_claims`).
 */
import { z } from 'zod';
import { CUSTOM_CLAIMS_DOCUMENT, CLAIM_SOURCES, customClaimsSchema, loadCustomClaims } from '../../resources/custom-claims.js';
import { configChanged } from '../../tenancy/config-changed.js';
import { op, type Operation } from '../operation.js';
import { dataEnvelope, sendJson, serializer } from '../respond.js';

const claimsResponse = z.object({
  claims: z.array(z.object({ name: z.string(), from: z.enum(CLAIM_SOURCES).optional(), value: z.union([z.string(), z.number(), z.boolean()]).optional() })),
});
const out = serializer(dataEnvelope(claimsResponse));

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
      await configChanged(call.ctx, call.tenant, CUSTOM_CLAIMS_DOCUMENT, call.actor);
      await call.audit({ type: 'claims.updated', details: { claims: call.body.claims.map((c) => c.name) } });
      return sendJson(200, out({ data: call.body }));
    },
  }),
];
