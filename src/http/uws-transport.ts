/**
 * What differs between uWS's native binding and the package's Node.js fallback (its dist/*.js,
 * loaded with UWS_USE_FALLBACK=1 or when no binary fits the Node.js ABI). The fallback wraps
 * node:http and leaves much of the API unimplemented: getQuery() parses the URL without a base
 * (TypeError), getUrl() includes the query, forEach, getRemoteAddressAsText, endWithoutBody and
 * onWritable throw "Not implemented", and writeHeader replaces an earlier value of the same name.
 * The front door goes through these functions for exactly those calls, so it serves on both.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type uWSTypes from 'uWebSockets.js';

/**
 * The package's module object as require() returns it. An ESM default import is that object under
 * Node.js, but a loader honouring `__esModule` (vite-node, the tests) hands out the fallback's
 * `exports.default`, which lacks us_socket_local_port.
 */
export const uWS = createRequire(import.meta.url)('uWebSockets.js') as typeof uWSTypes;

/**
 * Whether the module loaded is uWS's native binding (which exports getParts) and not the package's
 * Node.js fallback (UWS_USE_FALLBACK, or a binary that is missing or fails to load): read from the
 * module itself, so the answer is what runs.
 */
export const NATIVE_TRANSPORT = typeof (uWS as unknown as { getParts?: unknown }).getParts === 'function';

/** The fallback's request and response keep node:http's objects in these fields (dist/http-request.js, http-response.js). */
interface FallbackRequest {
  request: IncomingMessage;
}
interface FallbackResponse {
  response: ServerResponse;
}

/** The request head, copied (uWS's req dies when the handler returns). */
export interface CopiedHead {
  method: string;
  path: string;
  rawQuery: string;
  /** Lower-case names; repeated fields joined with ', '. */
  headers: Record<string, string>;
  /** The TCP peer's address as the transport reports it (not yet normalised). */
  peer: () => string;
}

export function copyHead(res: uWSTypes.HttpResponse, ureq: uWSTypes.HttpRequest): CopiedHead {
  const method = ureq.getMethod().toUpperCase();
  const headers: Record<string, string> = {};
  if (NATIVE_TRANSPORT) {
    ureq.forEach((k, v) => {
      headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
    });
    // The address text is ASCII (digits, hex, ':' and '.'): latin1 reads it as utf8 would, cheaper.
    return { method, path: ureq.getUrl(), rawQuery: ureq.getQuery() ?? '', headers, peer: () => Buffer.from(res.getRemoteAddressAsText()).toString('latin1') };
  }
  const request = (ureq as unknown as FallbackRequest).request;
  const raw = request.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const k = raw[i]!.toLowerCase();
    headers[k] = headers[k] === undefined ? raw[i + 1]! : `${headers[k]}, ${raw[i + 1]!}`;
  }
  const url = request.url ?? '/';
  const q = url.indexOf('?');
  // node:http reports an IPv4 peer of a dual-stack socket as ::ffff:a.b.c.d; the native side as plain a.b.c.d.
  const address = (request.socket.remoteAddress ?? '').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
  return { method, path: q < 0 ? url : url.slice(0, q), rawQuery: q < 0 ? '' : url.slice(q + 1), headers, peer: () => address };
}

/** Several lines of one header name (set-cookie): the fallback's writeHeader would keep only the last. */
export function writeHeaderValues(res: uWSTypes.HttpResponse, name: string, values: readonly string[]): void {
  if (NATIVE_TRANSPORT) for (const v of values) res.writeHeader(name, v);
  else (res as unknown as FallbackResponse).response.setHeader(name, [...values]);
}

/**
 * Ends an answer without content. `length`: the Content-Length to announce (a HEAD answer's GET
 * length), undefined for none (204, 304). `close`: close the connection after it.
 */
export function endWithoutContent(res: uWSTypes.HttpResponse, length: number | undefined, close: boolean): void {
  if (!NATIVE_TRANSPORT) {
    // node:http sends no content for HEAD, 204 and 304 and keeps a Content-Length set by us.
    if (length !== undefined) res.writeHeader('content-length', String(length));
    res.end('', close);
    return;
  }
  if (length === undefined) {
    // No arguments when the connection stays open: an explicit `undefined` length reaches the
    // native binding as Content-Length 2^63, and the client's next request on that kept-alive
    // connection fails. Closing anyway, a zero length is harmless.
    if (close) res.endWithoutBody(0, true);
    else res.endWithoutBody();
    return;
  }
  // uWS's own reported length (endWithoutBody(n), closing or not) leaves the answer waiting for n
  // bytes that never come, and endWithoutBody(0, true) would announce 0: the length is a header of
  // ours and uWS writes none. The connection is then closed by uWS itself when the request asked
  // for it (Connection: close), or by HttpServer.close() after its drain.
  res.writeHeader('content-length', String(length));
  res.endWithoutBody();
}

/** Resolves when the transport can take more of a streamed body (or `onAbort` fires). */
export function whenWritable(res: uWSTypes.HttpResponse, onAbort: Array<() => void>): Promise<void> {
  return new Promise<void>((resolve) => {
    onAbort.push(resolve);
    if (NATIVE_TRANSPORT) {
      res.onWritable(() => {
        resolve();
        return true;
      });
    } else (res as unknown as FallbackResponse).response.once('drain', resolve);
  });
}
