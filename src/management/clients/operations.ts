/** The clients resource (spec 4.3): input validated here, the rules and writes in src/clients. */
import { z } from 'zod';
import { clientCreateSchema, clientPatchSchema, clientPutSchema } from '../../clients/schema.js';
import {
  clientMetadata, createClient, deleteClient, getClient, presentClient, rotateClientSecret, setClientActive, updateClient, type ClientScope,
} from '../../clients/operations.js';
import { countClientActivity } from '../../sessions/store.js';
import { op, type Call, type Operation } from '../operation.js';
import { dataEnvelope, listEnvelope, noContent, sendJson, serializer } from '../respond.js';
import { heldScopes } from '../../clients/escalation.js';
import { clientListQuery, clientResponse, clientStatsResponse } from './schema.js';

const one = serializer(dataEnvelope(clientResponse));
const many = serializer(listEnvelope(clientResponse));
const secretOut = serializer(dataEnvelope(z.object({ client_id: z.string(), client_secret: z.string() })));
const statsOut = serializer(dataEnvelope(clientStatsResponse));

/** The domain's view of a call: its tenant, the caller for the audit entry, the tenant's client cache. */
const scopeOf = (call: Call): ClientScope => ({ ctx: call.ctx, tenant: call.tenant, by: call.by, cache: call.actor, held: heldScopes(call.claims.scope) });

export const clientOperations: Operation[] = [
  op({
    method: 'GET', path: '/api/v1/clients', scope: 'svc:clients:read', rateClass: 'read', tag: 'clients', summary: 'List clients',
    query: clientListQuery,
    success: { status: 200, schema: listEnvelope(clientResponse) },
    handler: async (call) => {
      const { application_type, active, q, ...pq } = call.query;
      const page = await call.ctx.storage.clients.list(call.tenant, { application_type, active, q }, call.cursors.request('clients', pq));
      return sendJson(200, many(call.cursors.envelope('clients', page, (r) => [r.created_at, r.client_id], (r) => presentClient(r))));
    },
  }),
  op({
    method: 'POST', path: '/api/v1/clients', scope: 'svc:clients:write', rateClass: 'write', tag: 'clients', summary: 'Create a client (the secret is returned once)',
    body: clientCreateSchema,
    success: { status: 201, schema: dataEnvelope(clientResponse) },
    handler: async (call) => {
      const scope = scopeOf(call);
      const { record, secret } = await createClient(scope, clientMetadata(scope, call.body));
      return sendJson(201, one({ data: presentClient(record, secret) }));
    },
  }),
  op({
    method: 'GET', path: '/api/v1/clients/:client_id', scope: 'svc:clients:read', rateClass: 'read', tag: 'clients', summary: 'Get a client',
    success: { status: 200, schema: dataEnvelope(clientResponse) },
    handler: async (call) => sendJson(200, one({ data: presentClient(await getClient(call, call.params.client_id)) })),
  }),
  op({
    method: 'PUT', path: '/api/v1/clients/:client_id', scope: 'svc:clients:write', rateClass: 'write', tag: 'clients', summary: 'Replace all mutable fields (omitted ones are cleared)',
    body: clientPutSchema,
    success: { status: 200, schema: dataEnvelope(clientResponse) },
    handler: async (call) => sendJson(200, one({ data: presentClient(await updateClient(scopeOf(call), call.params.client_id, call.body, 'put')) })),
  }),
  op({
    method: 'PATCH', path: '/api/v1/clients/:client_id', scope: 'svc:clients:write', rateClass: 'write', tag: 'clients', summary: 'Change the supplied fields only',
    body: clientPatchSchema,
    success: { status: 200, schema: dataEnvelope(clientResponse) },
    handler: async (call) => sendJson(200, one({ data: presentClient(await updateClient(scopeOf(call), call.params.client_id, call.body, 'patch')) })),
  }),
  op({
    method: 'DELETE', path: '/api/v1/clients/:client_id', scope: 'svc:clients:delete', rateClass: 'delete', tag: 'clients', summary: 'Delete a client',
    success: { status: 204 },
    handler: async (call) => {
      await deleteClient(scopeOf(call), call.params.client_id);
      return noContent();
    },
  }),
  op({
    method: 'POST', path: '/api/v1/clients/:client_id/activate', scope: 'svc:clients:write', rateClass: 'write', tag: 'clients', summary: 'Activate a client',
    success: { status: 200, schema: dataEnvelope(clientResponse) },
    handler: async (call) => sendJson(200, one({ data: presentClient(await setClientActive(scopeOf(call), call.params.client_id, true)) })),
  }),
  op({
    method: 'POST', path: '/api/v1/clients/:client_id/deactivate', scope: 'svc:clients:write', rateClass: 'write', tag: 'clients', summary: 'Deactivate a client (its tokens stop working)',
    success: { status: 200, schema: dataEnvelope(clientResponse) },
    handler: async (call) => sendJson(200, one({ data: presentClient(await setClientActive(scopeOf(call), call.params.client_id, false)) })),
  }),
  op({
    method: 'POST', path: '/api/v1/clients/:client_id/secret', scope: 'svc:clients:delete', rateClass: 'sensitive', tag: 'clients', summary: 'Regenerate the secret (the old one is invalid at once)',
    success: { status: 200, schema: dataEnvelope(z.object({ client_id: z.string(), client_secret: z.string() })) },
    errors: [422],
    handler: async (call) => sendJson(200, secretOut({ data: await rotateClientSecret(scopeOf(call), call.params.client_id) })),
  }),
  op({
    method: 'GET', path: '/api/v1/clients/:client_id/stats', scope: 'svc:clients:read', rateClass: 'read', tag: 'clients', summary: 'Usage statistics of a client',
    success: { status: 200, schema: dataEnvelope(clientStatsResponse) },
    handler: async (call) => {
      // Write the batched usage counters first, so tokens_issued and last_used_at agree at any moment.
      await call.actor.flushUsage();
      const record = await getClient(call, call.params.client_id);
      const id = record.client_id;
      const activity = await countClientActivity(call.ctx.storage.oidc, call.tenant, id);
      return sendJson(200, statsOut({
        data: {
          client_id: id,
          tokens_issued: record.tokens_issued + call.actor.pendingUsage(id),
          active_sessions: activity.sessions,
          active_grants: activity.grants,
          last_used_at: record.last_used_at,
        },
      }));
    },
  }),
];
