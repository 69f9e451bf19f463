/** Request parsing for the Management API: JSON bodies and query strings through zod, 4xx on failure. */
import { z } from 'zod';
import { ProblemError, badRequest, validation } from '../http/problem.js';
import { zodFieldErrors } from '../http/zod-errors.js';
import { UNSTORABLE_MESSAGE, declaresJson, readJsonBody } from '../http/json-body.js';
import type { HttpRequest } from '../http/types.js';

/** Parses a JSON object body: 415 unless declared application/json, 400 when malformed (a member name repeated too), 422 when not an object. */
export function readJsonObject(req: HttpRequest): Record<string, unknown> {
  const body = readJsonBody(req);
  if (body.ok) return body.value;
  switch (body.reason) {
    case 'media-type':
      throw new ProblemError(415, 'unsupported-media-type', 'Request bodies must be sent as Content-Type: application/json');
    case 'too-deep':
      // Too deep to be any valid body: a validation error naming the member (or the body) that is.
      throw validation([{ field: body.member ?? 'body', message: `is ${body.detail}` }]);
    case 'syntax':
      throw badRequest('The request body is not valid JSON');
    case 'duplicate-member':
      // Malformed rather than invalid, like a syntax error: 400, naming the member (as a repeated query parameter is named).
      throw new ProblemError(400, 'bad-request', `The request body gives the member ${body.member} more than once`, { errors: [{ field: body.member, message: 'must be given once' }] });
    case 'not-object':
      throw validation([{ field: 'body', message: 'The request body must be a JSON object' }]);
    case 'unstorable':
      throw validation(body.members.map((field) => ({ field, message: UNSTORABLE_MESSAGE })));
  }
}

/**
 * An operation that takes no body (lock, activate, secret regeneration, ...) ignores a JSON one,
 * but a body declared as anything else is 415 like everywhere else (CONTRACT: "a body not declared
 * application/json is 415"), rather than acknowledged and dropped. A GET's body has no meaning
 * (RFC 9110 9.3.1) and is left alone.
 */
export function refuseNonJsonBody(req: HttpRequest): undefined {
  if (req.method !== 'GET' && req.body.length > 0 && !declaresJson(req)) {
    throw new ProblemError(415, 'unsupported-media-type', 'Request bodies must be sent as Content-Type: application/json');
  }
  return undefined;
}

export function parseBody<S extends z.ZodType>(schema: S, req: HttpRequest): z.output<S> {
  const raw = readJsonObject(req);
  const result = schema.safeParse(raw);
  if (!result.success) throw validation(zodFieldErrors(result.error, 'body', raw));
  return result.data;
}

/** The parameter names a query schema declares (an object, possibly refined or piped); undefined when it cannot tell. */
function declaredKeys(schema: z.ZodType): Set<string> | undefined {
  if (schema instanceof z.ZodObject) return new Set(Object.keys(schema.shape));
  if (schema instanceof z.ZodPipe) return declaredKeys(schema.in as z.ZodType);
  return undefined;
}

/**
 * Query parameters as an object (last value wins). A parameter the operation does not declare is a
 * 422 naming it (issue 19: a misspelt or unsupported filter must never widen the answer silently).
 * A NUL character
 * is refused in every value: storage cannot match it literally (SQLite's LIKE stops at it, so a
 * search for "\0" would match everything), and no identifier, filter or cursor contains one.
 */
export function parseQuery<S extends z.ZodType>(schema: S, req: HttpRequest): z.output<S> {
  const raw: Record<string, string> = {};
  const repeated = new Set<string>();
  for (const [k, v] of new URLSearchParams(req.rawQuery)) {
    if (k in raw) repeated.add(k);
    raw[k] = v;
  }
  // Every parameter takes one value: keeping one of several would let a refused value pass unseen.
  if (repeated.size) throw validation([...repeated].map((field) => ({ field, message: 'must be given once' })));
  const known = declaredKeys(schema);
  const unknown = known ? Object.keys(raw).filter((k) => !known.has(k)) : [];
  if (unknown.length) throw validation(unknown.map((field) => ({ field, message: 'Unknown query parameter' })));
  const result = schema.safeParse(raw);
  if (!result.success) throw validation(zodFieldErrors(result.error, 'query', raw));
  const nul = Object.keys(raw).filter((k) => raw[k]!.includes('\u0000') && k in (result.data as object));
  if (nul.length) throw validation(nul.map((field) => ({ field, message: 'must not contain NUL characters' })));
  return result.data;
}

/** Query helpers: strings from the URL turned into typed values with clear messages. */
export const queryBool = z.enum(['true', 'false'], { message: "must be 'true' or 'false'" }).transform((v) => v === 'true');
export const queryInt = (min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d+$/, 'must be an integer')
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));
