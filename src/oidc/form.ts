import { OAuthError } from '../http/problem.js';
import type { HttpRequest } from '../http/types.js';

/** Parses an application/x-www-form-urlencoded body; OAuth invalid_request otherwise. */
export function parseForm(req: HttpRequest): URLSearchParams {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new OAuthError(400, 'invalid_request', 'only application/x-www-form-urlencoded content-type bodies are supported');
  }
  const form = new URLSearchParams(req.body.toString('utf8'));
  for (const key of new Set(form.keys())) {
    if (key !== 'resource' && form.getAll(key).length > 1) {
      throw new OAuthError(400, 'invalid_request', `'${key}' parameter must not be provided twice`);
    }
  }
  return form;
}
