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
  /** `member`: the top-level member nesting too deep, undefined for the body itself (an array). */
  | { ok: false; reason: 'too-deep'; detail: string; member: string | undefined };

export function readJsonBody(req: Pick<HttpRequest, 'headers' | 'body'>): JsonBody {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (type !== 'application/json' && !/^application\/[a-z0-9.+-]*\+json$/.test(type)) return { ok: false, reason: 'media-type' };
  let value: unknown;
  const text = req.body.toString('utf8');
  try {
    value = parseJson(text);
  } catch (err) {
    if (err instanceof JsonTooDeep) return { ok: false, reason: 'too-deep', detail: err.message, member: err.member };
    return { ok: false, reason: 'syntax' };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { ok: false, reason: 'not-object' };
  return { ok: true, value: value as Record<string, unknown> };
}
