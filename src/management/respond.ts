/**
 * Response helpers: fast-json-stringify serializers compiled from the same zod schemas that the
 * OpenAPI document shows, and the spec 2.1 envelopes.
 */
import fastJson from 'fast-json-stringify';
import { z } from 'zod';
import type { HttpResponse } from '../http/types.js';

const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };

export type Serializer = (value: unknown) => string;

export function serializer(schema: z.ZodType): Serializer {
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
