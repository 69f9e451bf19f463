import { OAuthError } from '../http/problem.js';
import type { HttpRequest } from '../http/types.js';

const FORM_TYPE = 'application/x-www-form-urlencoded';

/**
 * Parses an application/x-www-form-urlencoded body as oidc-provider's selective_body does: no
 * Content-Type is an empty form, another type is invalid_request naming the method and the path
 * under the OIDC mount (`mountPath`), a repeated parameter (but `resource`) is invalid_request.
 */
export function parseForm(req: HttpRequest, mountPath = ''): URLSearchParams {
  const header = req.headers['content-type'];
  if (!header) return new URLSearchParams();
  const type = header.split(';')[0]!.trim().toLowerCase();
  if (type !== FORM_TYPE) {
    const path = mountPath && req.path.startsWith(mountPath) ? req.path.slice(mountPath.length) || '/' : req.path;
    throw new OAuthError(400, 'invalid_request', `only ${FORM_TYPE} content-type bodies are supported on ${req.method} ${path}`);
  }
  const form = new URLSearchParams(req.body.toString('utf8'));
  for (const key of new Set(form.keys())) {
    if (key !== 'resource' && form.getAll(key).length > 1) {
      throw new OAuthError(400, 'invalid_request', `'${key}' parameter must not be provided twice`);
    }
  }
  return form;
}
