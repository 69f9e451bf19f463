/**
 * OpenAPI 3.1 document of the Management API, generated from the same operation declarations and
 * zod schemas that route and validate requests (so the document cannot drift from the code).
 */
import { z } from 'zod';
import type { Config } from '../config/index.js';
import { MANAGEMENT_RESOURCE, MANAGEMENT_SCOPES } from '../oidc/scopes.js';
import type { Operation } from './operation.js';

type Json = Record<string, unknown>;

function schemaOf(schema: z.ZodType, io: 'input' | 'output'): Json {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
  delete out.$schema;
  return out;
}

const problemSchema: Json = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'instance'],
  properties: {
    type: { type: 'string', examples: ['urn:svc:error:not-found'] },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    instance: { type: 'string' },
    request_id: { type: 'string', description: 'Present on 5xx; matches the log line' },
    errors: {
      type: 'array',
      description: 'Validation errors (422)',
      items: { type: 'object', required: ['field', 'message'], properties: { field: { type: 'string' }, message: { type: 'string' } } },
    },
  },
};

const ERROR_TEXT: Record<number, string> = {
  400: 'Malformed request (bad JSON, tenant unresolved or invalid)',
  401: 'Missing or invalid bearer token',
  403: 'Token lacks the scope, or the tenant is suspended',
  404: 'Unknown resource',
  409: 'Conflict',
  413: 'Body over 1 MiB',
  415: 'Body not declared application/json',
  422: 'Validation error',
  429: 'Rate limit of the operation class exceeded',
  503: 'A dependency is unavailable',
};

const rateHeaders: Json = {
  'RateLimit-Limit': { schema: { type: 'integer' } },
  'RateLimit-Remaining': { schema: { type: 'integer' } },
  'RateLimit-Reset': { schema: { type: 'integer' } },
};

function errorStatuses(o: Operation): number[] {
  const set = new Set([400, 401, 403, 429, ...(o.errors ?? [])]);
  if (o.path.includes(':')) set.add(404);
  if (o.query) set.add(422);
  // An operation without a body still refuses one that is too large or not JSON (validation.ts).
  if (o.method !== 'GET') [413, 415].forEach((s) => set.add(s));
  if (o.body) set.add(422);
  return [...set].sort();
}

function queryParameters(o: Operation): Json[] {
  if (!o.query) return [];
  const schema = schemaOf(o.query, 'input');
  const props = (schema.properties ?? {}) as Record<string, Json>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return Object.entries(props).map(([name, s]) => ({ name, in: 'query', required: required.has(name), schema: s }));
}

export function buildOpenApi(operations: Operation[], config: Config): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const o of operations) {
    const path = o.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    const pathParams = [...o.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const responses: Record<string, Json> = {};
    responses[String(o.success.status)] = o.success.schema
      ? { description: o.success.description ?? 'Success', headers: rateHeaders, content: { [o.success.contentType ?? 'application/json']: { schema: schemaOf(o.success.schema, 'output') } } }
      : { description: o.success.description ?? 'Success', headers: rateHeaders };
    for (const status of errorStatuses(o)) {
      responses[String(status)] = { description: ERROR_TEXT[status] ?? 'Error', content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } };
    }
    const operation: Json = {
      operationId: `${o.method.toLowerCase()}${o.path.replace(/\/api\/v1/, '').replace(/[/:-]+(\w)/g, (_m, c: string) => c.toUpperCase())}`,
      summary: o.summary,
      tags: [o.tag],
      security: [{ bearer: [o.scope] }],
      'x-required-scope': o.scope,
      'x-rate-limit-class': o.rateClass,
      parameters: [...pathParams, ...queryParameters(o)],
      responses,
    };
    if (o.platform) {
      // authenticate.ts: tokens of the `_platforms` issuer only; 404 in single-tenant mode.
      operation['x-platform-token'] = true;
      operation.description = 'Multi-tenant mode only (404 otherwise). Requires a token issued by the `_platforms` tenant issuer.';
    }
    if (o.body) operation.requestBody = { required: true, content: { 'application/json': { schema: schemaOf(o.body, 'input') } } };
    (paths[path] ??= {})[o.method.toLowerCase()] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc Management API',
      version: '1.0.0',
      description: `Bearer tokens: client_credentials grant at ${config.oidc.path}/token with resource=${MANAGEMENT_RESOURCE} and the scopes each operation names. Errors are RFC 9457 problem+json.`,
    },
    servers: [{ url: config.base_url }],
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'oauth2',
          description: `JWT access token for ${MANAGEMENT_RESOURCE}`,
          flows: {
            clientCredentials: {
              tokenUrl: `${config.base_url}${config.oidc.path}/token`,
              scopes: Object.fromEntries(MANAGEMENT_SCOPES.map((s) => [s, s])),
            },
          },
        },
      },
      schemas: { Problem: problemSchema },
    },
  };
}
