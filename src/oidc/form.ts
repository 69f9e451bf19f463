import { OAuthError } from '../http/problem.js';
import type { HttpRequest } from '../http/types.js';
import { bodyForm, firstRepeated, TooManyParameters } from '../http/urlencoded.js';

const FORM_TYPE = 'application/x-www-form-urlencoded';
const REPEATABLE = new Set(['resource']);

/**
 * Parses an application/x-www-form-urlencoded body as oidc-provider's selective_body does: no
 * Content-Type is an empty form, another type is invalid_request naming the method and the path
 * under the OIDC mount (`mountPath`), a repeated parameter (but `resource`) is invalid_request.
 * Linear in the body: the parameter count is bounded before parsing (http/urlencoded.ts) and
 * repeats are found in one pass. The body is parsed once per request (bodyForm), however many of
 * the token endpoint's paths look at it.
 */
export function parseForm(req: HttpRequest, mountPath = ''): URLSearchParams {
  const header = req.headers['content-type'];
  if (!header) return new URLSearchParams();
  const type = header.split(';')[0]!.trim().toLowerCase();
  if (type !== FORM_TYPE) {
    const path = mountPath && req.path.startsWith(mountPath) ? req.path.slice(mountPath.length) || '/' : req.path;
    throw new OAuthError(400, 'invalid_request', `only ${FORM_TYPE} content-type bodies are supported on ${req.method} ${path}`);
  }
  let form: URLSearchParams;
  try {
    form = bodyForm(req.body);
  } catch (err) {
    if (err instanceof TooManyParameters) throw new OAuthError(400, 'invalid_request', err.message);
    throw err;
  }
  const repeated = firstRepeated(form, REPEATABLE);
  if (repeated !== undefined) throw new OAuthError(400, 'invalid_request', `'${repeated}' parameter must not be provided twice`);
  return form;
}
