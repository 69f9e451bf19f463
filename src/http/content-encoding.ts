/**
 * Request bodies are read as sent: the service decodes no content coding (RFC 9110 8.4). A body
 * labelled gzip or br was parsed as if it were plain (a gzip JSON body failed as "not valid JSON",
 * a plain one labelled br was accepted), so such a body is refused with 415 before any parsing.
 */
import type { HttpRequest } from './types.js';

/** The coding a request body is labelled with other than identity, or undefined when it has none (or no body). */
export function refusedContentEncoding(req: Pick<HttpRequest, 'headers' | 'body'>): string | undefined {
  const header = req.headers['content-encoding'];
  if (header === undefined || req.body.length === 0) return undefined;
  const codings = header.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity');
  return codings.length > 0 ? codings.join(', ') : undefined;
}
