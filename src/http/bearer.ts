/** The one Bearer token parser (RFC 6750 2.1) of every surface that takes one. */
import type { HttpRequest } from './types.js';

const BEARER = /^Bearer[ ]+([A-Za-z0-9._~+/=-]+)\s*$/i;

/** The token of an `Authorization: Bearer <token>` header; undefined when absent or not of that form. */
export function bearerToken(req: Pick<HttpRequest, 'headers'>): string | undefined {
  return BEARER.exec(req.headers.authorization ?? '')?.[1];
}
