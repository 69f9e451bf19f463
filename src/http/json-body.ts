/**
 * The one JSON object body reader (depth-limited parsing: json.ts). Each surface turns its refusals
 * into its own error shape (problem+json for the Management API, an RFC 7591 error for dynamic
 * registration).
 */
import { JsonDuplicateMember, JsonTooDeep, parseJsonUniqueNames } from './json.js';
import type { HttpRequest } from './types.js';

export type JsonBody =
  | { ok: true; value: Record<string, unknown> }
  /**
   * media-type: not declared application/json (or +json); too-deep: nested beyond the limit
   * (`detail` says how); syntax: not JSON; not-object: JSON, but no object.
   */
  | { ok: false; reason: 'media-type' | 'syntax' | 'not-object' }
  /** `member`: the top-level member nesting too deep, undefined for the body itself (an array). */
  | { ok: false; reason: 'too-deep'; detail: string; member: string | undefined }
  /** An object gives a member name twice (`member`: its path, `a.b`): refused, since either value could pass unseen. */
  | { ok: false; reason: 'duplicate-member'; member: string }
  /** Text no backend stores as sent (unstorableMembers), at these members (`name`, `list.0`, `a.b`). */
  | { ok: false; reason: 'unstorable'; members: string[] };

const UTF8 = new TextDecoder('utf-8', { fatal: true });
/** U+0000, or a surrogate code unit not part of a pair (with the u flag a pair is one code point). */
const UNSTORABLE = /[\u0000\p{Cs}]/u;
const MAX_NAMED = 100;
/** How every surface (API bodies, dynamic registration, the CLI) names an unstorableMembers() refusal. */
export const UNSTORABLE_MESSAGE = 'must not contain NUL characters or unpaired surrogates';

/**
 * Members whose text would not read back as sent: U+0000 (PostgreSQL's text and jsonb cannot hold
 * it; that backend stores U+FFFD instead, SQLite the character) or an unpaired surrogate (it has no
 * UTF-8 form, so every backend stores U+FFFD). Refused rather than altered; a member name counts too.
 */
export function unstorableMembers(value: unknown, path = '', out: string[] = []): string[] {
  if (out.length >= MAX_NAMED) return out;
  if (typeof value === 'string') {
    if (UNSTORABLE.test(value)) out.push(path || 'body');
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => unstorableMembers(v, path ? `${path}.${i}` : String(i), out));
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const member = path ? `${path}.${k}` : k;
      if (UNSTORABLE.test(k)) out.push(member);
      else unstorableMembers(v, member, out);
    }
  }
  return out;
}

/** Whether a request declares its body as JSON: application/json or a +json type. */
export function declaresJson(req: Pick<HttpRequest, 'headers'>): boolean {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || /^application\/[a-z0-9.+-]*\+json$/.test(type);
}

export function readJsonBody(req: Pick<HttpRequest, 'headers' | 'body'>): JsonBody {
  if (!declaresJson(req)) return { ok: false, reason: 'media-type' };
  let value: unknown;
  try {
    // JSON is UTF-8 (RFC 8259 8.1): bytes that are not would be read as U+FFFD, so they are a syntax error.
    value = parseJsonUniqueNames(UTF8.decode(req.body));
  } catch (err) {
    if (err instanceof JsonTooDeep) return { ok: false, reason: 'too-deep', detail: err.message, member: err.member };
    if (err instanceof JsonDuplicateMember) return { ok: false, reason: 'duplicate-member', member: err.path };
    return { ok: false, reason: 'syntax' };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { ok: false, reason: 'not-object' };
  const members = unstorableMembers(value);
  if (members.length) return { ok: false, reason: 'unstorable', members };
  return { ok: true, value: value as Record<string, unknown> };
}
