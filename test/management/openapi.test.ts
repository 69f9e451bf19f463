/**
 * The OpenAPI document: valid OpenAPI 3.1, served at /api/v1/openapi.json, and complete — a route
 * that exists without a documented schema fails this test.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allOperations } from '../../src/management/index.js';
import { api, startTestApp, type TestApp } from '../helpers/app.js';

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: any;
  beforeAll(async () => {
    t = await startTestApp();
    const res = await api(t, 'GET', '/api/v1/openapi.json');
    expect(res.status).toBe(200);
    doc = res.json;
  });
  afterAll(async () => t?.close());

  it('validates as OpenAPI 3.1', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('documents every Management API route with its scope, rate class and schemas', () => {
    const routes = t.app.management.router.routes;
    expect(routes.length).toBe(allOperations.length);
    for (const route of routes) {
      const path = route.pattern.replace(/:([A-Za-z_]+)/g, '{$1}');
      const op = doc.paths?.[path]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${route.pattern} is not documented`).toBeDefined();
      const declared = allOperations.find((o) => o.method === route.method && o.path === route.pattern)!;
      expect(op['x-required-scope']).toBe(declared.scope);
      expect(['read', 'write', 'delete', 'sensitive']).toContain(op['x-rate-limit-class']);
      const success = op.responses[String(declared.success.status)];
      expect(success, `${route.method} ${route.pattern} has no success response`).toBeDefined();
      if (declared.success.status !== 204 && declared.success.status !== 202) {
        expect(success.content?.[declared.success.contentType ?? 'application/json']?.schema, `${route.method} ${route.pattern} has no response schema`).toBeDefined();
      }
      if (['POST', 'PUT', 'PATCH'].includes(route.method) && declared.body) {
        expect(op.requestBody?.content?.['application/json']?.schema).toBeDefined();
      }
      expect(op.responses['401']).toBeDefined();
      expect(op.responses['403']).toBeDefined();
      // Every method but GET refuses a body that is not JSON, one without a body of its own included.
      expect(op.responses['415'] !== undefined, `${route.method} ${route.pattern}: 415`).toBe(route.method !== 'GET');
    }
  });

  it('describes request limits from the validating schemas', () => {
    const create = doc.paths['/api/v1/clients'].post.requestBody.content['application/json'].schema;
    expect(create.properties.client_name.maxLength).toBe(255);
    expect(create.required).toContain('client_name');
    const limit = doc.paths['/api/v1/clients'].get.parameters.find((p: any) => p.name === 'limit');
    expect(limit.in).toBe('query');
  });
});
