/**
 * Response helpers: fast-json-stringify serializers compiled from the same zod schemas that the
 * OpenAPI document shows, and the spec 2.1 envelopes.
 */
import { createRequire } from 'node:module';
import { z } from 'zod';
import type { HttpResponse } from '../http/types.js';

const requireModule = createRequire(import.meta.url);

const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };

export type Serializer = (value: unknown) => string;

/**
 * Compiled on its first use, not when the module is loaded (issue 17): the Management API's ~30
 * serializers and fast-json-stringify itself (with Ajv) were a fifth of the start-up's CPU, for
 * routes an instance may not serve for hours. The output is the same; the first response of each
 * shape pays its compilation (a few ms; the first of all also loads the package, synchronously).
 */
export function serializer(schema: z.ZodType): Serializer {
  let compiled: Serializer | undefined;
  const get = () => (compiled ??= compile(schema));
  created.push(get);
  return (value) => get()(value);
}

const created: Array<() => Serializer> = [];

/**
 * Compiles every serializer created so far and returns how many there are: the test that keeps
 * "a schema that cannot be compiled fails the build, not a request" now that start-up no longer
 * compiles them.
 */
export function compileSerializers(): number {
  for (const get of created) get();
  return created.length;
}

function compile(schema: z.ZodType): Serializer {
  const fastJson = requireModule('fast-json-stringify') as typeof import('fast-json-stringify');
  const jsonSchema = z.toJSONSchema(schema, { target: 'draft-7', io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
  delete jsonSchema.$schema;
  return fastJson(jsonSchema as never) as Serializer;
}

export const dataEnvelope = <T extends z.ZodType>(item: T) => z.object({ data: item });
export const listEnvelope = <T extends z.ZodType>(item: T) =>
  z.object({
    data: z.array(item),
    pagination: z.object({ has_more: z.boolean(), next_cursor: z.string().nullable(), total_count: z.number().optional() }),
  });

export function sendJson(status: number, body: string): HttpResponse {
  return { status, headers: JSON_TYPE, body };
}

export const noContent = (): HttpResponse => ({ status: 204, headers: { 'cache-control': 'no-store' } });
