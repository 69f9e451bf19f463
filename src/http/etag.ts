/** Entity tags of the documents the service serves as they are (JWKS, discovery, the stylesheet). */
import { createHash } from 'node:crypto';
import type { HttpRequest, HttpResponse } from './types.js';

/** A strong ETag of a body: a truncated sha256, enough to tell versions of one document apart. */
export function etagOf(body: string | Buffer): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}

/** If-None-Match semantics (RFC 9110 13.1.2): a list, weak tags and `*` all count. */
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === etag;
  });
}

/**
 * The headers of one version of a public document, built once per body (the body Buffer is
 * replaced when the document changes, and its entry goes with it). JWKS and discovery are the
 * cheapest answers the service gives, so a per-request spread into a new object showed in their
 * profile (issue 17). Frozen: responses share it, and code that adds a header builds a new object
 * (`res.headers = { ...res.headers, ... }`); an assignment into it would throw rather than leak
 * into other answers.
 */
const documentHeaders = new WeakMap<Buffer, { from: Readonly<Record<string, string>>; all: Readonly<Record<string, string>> }>();

/** A cacheable public document (GET/HEAD), 304 when the client holds this version. */
export function publicDocument(
  req: Pick<HttpRequest, 'method' | 'headers'>,
  doc: { body: Buffer; etag: string },
  /** The document's headers but its ETag: one object for every version of the document, so the built headers are reused. */
  headers: Readonly<Record<string, string>>,
): HttpResponse {
  // Built again when the same body comes with other headers (the caller passes one object per kind of document).
  let cached = documentHeaders.get(doc.body);
  if (cached?.from !== headers) {
    cached = { from: headers, all: Object.freeze({ ...headers, etag: doc.etag }) };
    documentHeaders.set(doc.body, cached);
  }
  const all = cached.all;
  if (etagMatches(req.headers['if-none-match'], doc.etag)) return { status: 304, headers: all };
  // HEAD: no body, but GET's Content-Length (RFC 9110 8.6), written by the front door.
  if (req.method === 'HEAD') return { status: 200, headers: all, contentLength: doc.body.length };
  return { status: 200, headers: all, body: doc.body };
}
