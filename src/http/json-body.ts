/**
 * The one JSON object body reader (depth-limited parsing: json.ts). Each surface turns its refusals
 * into its own error shape (problem+json for the Management API, an RFC 7591 error for dynamic
 * registration).
 */
import { JsonTooDeep, parseJson } from './json.js';
import type { HttpRequest } from './types.js';

export type JsonBody =
  | { ok: true; value: Record<string, unknown> }
  /**
   * media-type: not declared application/json (or +json); too-deep: nested beyond the limit
   * (`detail` says how); syntax: not JSON; not-object: JSON, but no object.
   */
  | { ok: false; reason: 'media-type' | 'syntax' | 'not-object' }
  | { ok: false; reason: 'too-deep'; detail: string };

export function readJsonBody(req: Pick<HttpRequest, 'headers' | 'body'>): JsonBody {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type !== 'application/json' && !/^application\/[a-z0-9.+-]*\+json$/.test(type)) return { ok: false, reason: 'media-type' };
  let value: unknown;
  try {
    value = parseJson(req.body.toString('utf8'));
  } catch (err) {
    if (err instanceof JsonTooDeep) return { ok: false, reason: 'too-deep', detail: err.message };
    return { ok: false, reason: 'syntax' };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { ok: false, reason: 'not-object' };
  return { ok: true, value: value as Record<string, unknown> };
}
