/**
 * The uWS front door. Copies the request head synchronously (uWS's req dies when the handler
 * returns), reads the body with a cap, guards against aborted connections, hands a plain
 * HttpRequest to the application handler and writes its HttpResponse inside res.cork().
 *
 * Over 300 lines, on purpose: a request's life in uWS (head copy, body cap, abort, cork,
 * backpressure) is one flow whose invariants (never touch res after an abort) are easiest to check
 * in one place.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type uWSTypes from 'uWebSockets.js';
import type { ClientIpOf } from './client-ip.js';
import { lastNormalizedIp } from './ip.js';
import { ProblemError, problemResponse } from './problem.js';
import type { HttpRequest, HttpResponse } from './types.js';
import { NATIVE_TRANSPORT, copyHead, endWithoutContent, uWS, whenWritable, writeHeaderValues } from './uws-transport.js';

export const MAX_BODY_BYTES = 1024 * 1024;

/** Which transport the trufflesuite package loaded: its native binary or the Node.js fallback. */
export function uwsTransport(): 'native' | 'node-fallback' {
  return NATIVE_TRANSPORT ? 'native' : 'node-fallback';
}

export interface ServerOptions {
  host: string;
  port: number;
  /** SO_REUSEPORT (config http.reuse_port); otherwise the port is held exclusively. */
  reusePort?: boolean;
  log: Logger;
  /** Application entry: never throws (errors are turned into responses before they get here). */
  handle: (req: HttpRequest) => Promise<HttpResponse>;
  /** Called for a request whose body is too large, before the application sees it. */
  onTooLarge?: (req: HttpRequest) => HttpResponse;
  /**
   * Synchronous answers for body-less requests that need no I/O (the public JWKS and discovery
   * documents of a live tenant actor): answered inside uWS's own callback, with no promise, abort
   * handler or remote-address parsing. Undefined means "not here": the request takes the full path.
   */
  fast?: (head: RequestHead) => HttpResponse | undefined;
  /** The client's address from the TCP peer and the headers (trusted proxies, client-ip.ts); the peer when absent. */
  clientIp?: ClientIpOf;
}

/** What a fast handler sees of a request: the head, copied, and the remote address on demand. */
export interface RequestHead {
  id: string;
  method: string;
  path: string;
  rawQuery: string;
  headers: Record<string, string>;
  ip(): string;
}

const SKIP_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'date', 'keep-alive']);
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 302: 'Found', 303: 'See Other', 304: 'Not Modified',
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict',
  413: 'Payload Too Large', 415: 'Unsupported Media Type', 422: 'Unprocessable Entity', 429: 'Too Many Requests',
  500: 'Internal Server Error', 503: 'Service Unavailable',
};

/** The status line's text per status, encoded once: uWS copies bytes without a UTF-8 pass (issue 17). */
const statusLines = new Map<number, Buffer>();
function statusLine(status: number): Buffer {
  let line = statusLines.get(status);
  if (line === undefined) statusLines.set(status, (line = Buffer.from(`${status} ${STATUS_TEXT[status] ?? 'Status'}`, 'latin1')));
  return line;
}

const REQUEST_ID = Buffer.from('x-request-id', 'latin1');
const INTERNAL_BODY = '{"type":"urn:svc:error:internal","title":"Internal Server Error","status":500}';

/** A frozen headers object's lines as one native call: the first name, then its value and the other lines. */
interface HeaderBlock {
  name: Buffer;
  rest: Buffer;
}
const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;
const UNSAFE_VALUE = /[\r\n\0]/;

/**
 * The header lines of a frozen headers object, lower-cased, filtered and encoded once, as one
 * block. The public documents answer every request with one frozen object per version
 * (http/etag.ts), and writing its members one by one was a tenth of a JWKS answer's CPU: per name
 * and value a UTF-8 conversion, an allocation and a free, plus the lower-casing, and per line a
 * call into uWS (issue 17). uWS writes `name: value\r\n` as given, so the lines after the first
 * ride in the first one's value; that is only done for names that are HTTP tokens and values
 * without CR, LF or NUL (anything else is not cached and goes member by member). Frozen, so the
 * block cannot go stale; an object with an array value (shallowly frozen only) is not cached.
 */
const headerBlocks = new WeakMap<object, HeaderBlock | null | false>();
/** The block of `headers`, null when it writes no line, undefined when it is to be written member by member. */
function headerBlock(headers: Readonly<Record<string, string | string[]>>): HeaderBlock | null | undefined {
  let block = headerBlocks.get(headers);
  if (block === undefined) {
    // Not frozen: written member by member, and not remembered (such objects are made per answer).
    if (!Object.isFrozen(headers)) return undefined;
    headerBlocks.set(headers, (block = buildBlock(headers)));
  }
  return block === false ? undefined : block;
}
function buildBlock(headers: Readonly<Record<string, string | string[]>>): HeaderBlock | null | false {
  // Node's http (the transport's fallback) refuses CR and LF in a value: blocks are for uWS's own.
  if (!NATIVE_TRANSPORT) return false;
  const lines: Array<[string, string]> = [];
  for (const name in headers) {
    const value = headers[name]!;
    const lower = name.toLowerCase();
    if (typeof value !== 'string' || !TOKEN.test(lower) || UNSAFE_VALUE.test(value)) return false;
    if (!SKIP_HEADERS.has(lower)) lines.push([lower, value]);
  }
  const [first, ...others] = lines;
  if (first === undefined) return null;
  return { name: Buffer.from(first[0], 'latin1'), rest: Buffer.from(first[1] + others.map(([n, v]) => `\r\n${n}: ${v}`).join('')) };
}

function requestId(header: string): string {
  return /^[A-Za-z0-9._-]{8,128}$/.test(header) ? header : randomUUID();
}

/** A too-large body is read and discarded up to this many bytes, for at most LINGER_MS, before the 413. */
const LINGER_BYTES = 16 * 1024 * 1024;
const LINGER_MS = 2000;

/** uSockets' listen option that leaves SO_REUSEPORT off (the binary exports it; the typings do not). */
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

/** The listen socket could not be opened; the message names the address and the likely cause. */
export class ListenError extends Error {
  constructor(host: string, port: number, reusePort: boolean) {
    super(
      `cannot listen on ${host}:${port}: the address is in use by another process or not available on this machine` +
        (reusePort ? '' : ' (set HTTP_REUSE_PORT=true to share the port with another instance on purpose)'),
    );
    this.name = 'ListenError';
  }
}

export class HttpServer {
  private app: uWSTypes.TemplatedApp;
  private listenSocket: uWSTypes.us_listen_socket | null = null;
  private inFlight = 0;
  private draining = false;
  private drained: (() => void) | null = null;
  private readonly peerIp = lastNormalizedIp();
  boundPort = 0;

  constructor(private readonly opts: ServerOptions) {
    // No `uWebSockets: 20` header on every response (it only advertises the server software).
    uWS._cfg('silent');
    this.app = uWS.App();
    this.app.any('/*', (res, req) => {
      // A throw here would reach uWS's (or node:http's) dispatch and end the process: answer 500.
      try {
        this.onRequest(res, req);
      } catch (err) {
        this.opts.log.error({ err }, 'the front door failed on a request: answered 500');
        try {
          res.cork(() => this.write(res, { status: 500, headers: { 'content-type': 'application/problem+json' }, body: INTERNAL_BODY }, randomUUID(), false, true));
        } catch {
          // Answered or aborted already: nothing more to say on this connection.
        }
      }
    });
  }

  get accepting(): boolean {
    return !this.draining;
  }

  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      // The typings lack the options overload of the native listen (host, port, options, cb).
      const listen = this.app.listen as unknown as (host: string, port: number, options: number, cb: (socket: uWSTypes.us_listen_socket | false) => void) => void;
      const options = this.opts.reusePort ? 0 : LIBUS_LISTEN_EXCLUSIVE_PORT;
      listen.call(this.app, this.opts.host, this.opts.port, options, (socket) => {
        if (!socket) return reject(new ListenError(this.opts.host, this.opts.port, this.opts.reusePort === true));
        this.listenSocket = socket;
        this.boundPort = uWS.us_socket_local_port(socket);
        resolve(this.boundPort);
      });
    });
  }

  /** Stops accepting, waits for in-flight requests (at most timeoutMs), then closes every connection. */
  async close(timeoutMs = 10000): Promise<void> {
    this.draining = true;
    if (this.listenSocket) {
      uWS.us_listen_socket_close(this.listenSocket);
      this.listenSocket = null;
    }
    if (this.inFlight > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      // The last response may have been written inside uWS's own dispatch (a handler that settled
      // in microtasks), where it sits in the cork buffer until that dispatch returns. Closing now
      // would drop it: let the loop turn so uWS sends it first.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    (this.app as unknown as { close?: () => void }).close?.();
  }

  private onRequest(res: uWSTypes.HttpResponse, ureq: uWSTypes.HttpRequest): void {
    // Everything from ureq must be copied before this function returns.
    const { method, path, rawQuery, headers, peer: rawPeer } = copyHead(res, ureq);
    const id = requestId(headers['x-request-id'] ?? '');
    // `Connection: close` from the client: no further request on this connection may be processed
    // (RFC 9112 9.6). uWS parses on in the bytes it has read after an answer written inside its own
    // callback (the fast path, a handler that settles in microtasks), answering a pipelined request
    // too; with the answer still pending when its callback returns, it reads no further request.
    // So such a request skips the fast path and is answered after uWS's callback (finish below).
    const closeAfter = headers.connection !== undefined && /(?:^|,)\s*close\s*(?:,|$)/i.test(headers.connection);
    const peer = () => this.peerIp(rawPeer());
    const clientIp = this.opts.clientIp;
    const remote = clientIp ? () => clientIp(peer(), headers) : peer;
    if (this.opts.fast && !this.draining && !closeAfter && !BODY_METHODS.has(method)) {
      const response = this.opts.fast({ id, method, path, rawQuery, headers, ip: remote });
      if (response) {
        // Still inside uWS's callback: the response goes out corked with no extra hop.
        res.cork(() => this.write(res, response, id, method === 'HEAD', closeAfter));
        return;
      }
    }
    const ip = remote();

    let aborted = false;
    const onAbort: Array<() => void> = [];
    // Counted from here until answered, or until the client goes away before the handler has the
    // request (mid-body): nothing else would end that count, and close() would wait its full drain.
    let counted = true;
    let dispatched = false;
    const uncount = () => {
      if (!counted) return;
      counted = false;
      this.inFlight--;
      if (this.inFlight === 0 && this.drained) this.drained();
    };
    res.onAborted(() => {
      aborted = true;
      for (const f of onAbort.splice(0)) f();
      if (!dispatched) {
        clearTimeout(lingerTimer);
        uncount();
      }
    });
    this.inFlight++;

    const finish = (response: HttpResponse) => {
      // While draining, a kept-alive connection gets its answer and is closed, so it cannot hold
      // the shutdown open with more requests.
      if (this.draining) response.headers = { ...(response.headers ?? {}), connection: 'close' };
      dispatched = true;
      if (response.stream && method !== 'HEAD') {
        void this.pump(res, response, id, () => aborted, onAbort, closeAfter).finally(uncount);
        return;
      }
      const send = () => {
        if (!aborted) res.cork(() => this.write(res, response, id, method === 'HEAD', closeAfter));
        uncount();
      };
      if (closeAfter) setImmediate(send);
      else send();
    };

    const dispatch = (body: Buffer) => {
      dispatched = true;
      const req: HttpRequest = { id, method, path, rawQuery, headers, ip, body, params: {} };
      this.opts.handle(req).then(finish, (err: unknown) => {
        this.opts.log.error({ err, req_id: id }, 'unhandled error escaped the application handler');
        finish({ status: 500, headers: { 'content-type': 'application/problem+json' }, body: INTERNAL_BODY });
      });
    };

    // Lingering close: a too-large body is read and thrown away (bounded in bytes and time) before
    // the 413 goes out with `connection: close`, so a client still sending (Node's fetch, curl)
    // reads the answer instead of a reset connection.
    let lingering = false;
    let discarded = 0;
    let lingerTimer: NodeJS.Timeout | undefined;
    const answerTooLarge = () => {
      if (lingerTimer === undefined && lingering) return; // answered already
      clearTimeout(lingerTimer);
      lingerTimer = undefined;
      const req: HttpRequest = { id, method, path, rawQuery, headers, ip, body: Buffer.alloc(0), params: {} };
      const response = this.opts.onTooLarge?.(req) ??
        problemResponse(new ProblemError(413, 'payload-too-large', `Request bodies are limited to ${MAX_BODY_BYTES} bytes`), path, id);
      response.headers = { ...(response.headers ?? {}), connection: 'close' };
      finish(response);
    };
    const tooLarge = (rest: number) => {
      lingering = true;
      lingerTimer = setTimeout(answerTooLarge, LINGER_MS);
      // Nothing (more) to wait for, or more than we are willing to read: answer now.
      if (rest <= 0 || rest > LINGER_BYTES) answerTooLarge();
    };

    if (!BODY_METHODS.has(method)) {
      dispatch(Buffer.alloc(0));
      return;
    }
    const declared = Number(headers['content-length'] ?? '0');
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    res.onData((ab, isLast) => {
      if (lingering) {
        discarded += ab.byteLength;
        if (isLast || discarded > LINGER_BYTES) answerTooLarge();
        return;
      }
      if (done) return;
      size += ab.byteLength;
      if (size > MAX_BODY_BYTES) {
        done = true;
        tooLarge(isLast ? 0 : Number.isFinite(declared) && declared > size ? declared - size : 1);
        return;
      }
      // The ArrayBuffer is freed after this callback: copy it.
      chunks.push(Buffer.from(ab.slice(0)));
      if (isLast) {
        done = true;
        dispatch(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
      }
    });
    if (declared > MAX_BODY_BYTES) {
      done = true;
      tooLarge(declared);
    }
  }

  /**
   * A streamed body: head first, then each chunk as the producer yields it; when uWS reports
   * backpressure the next chunk waits for onWritable. A producer failure mid-stream can no longer
   * change the status: the connection is closed so the client sees a truncated body, not a
   * complete-looking one.
   */
  private async pump(res: uWSTypes.HttpResponse, response: HttpResponse, id: string, aborted: () => boolean, onAbort: Array<() => void>, close: boolean): Promise<void> {
    const iterator = response.stream![Symbol.asyncIterator]();
    if (aborted()) {
      await iterator.return?.();
      return;
    }
    const head = this.checked(response, id);
    if (head !== response) {
      await iterator.return?.();
      res.cork(() => this.write(res, head, id, false, close));
      return;
    }
    res.cork(() => this.writeHead(res, response, id));
    try {
      for (;;) {
        const next = await iterator.next();
        if (aborted()) {
          await iterator.return?.();
          return;
        }
        if (next.done) break;
        let ok = true;
        res.cork(() => {
          ok = res.write(next.value);
        });
        if (!ok) {
          await whenWritable(res, onAbort);
          if (aborted()) {
            await iterator.return?.();
            return;
          }
        }
      }
      res.cork(() => res.end('', close || response.headers?.connection === 'close'));
    } catch (err) {
      this.opts.log.error({ err, req_id: id }, 'streamed response failed after its head was sent');
      if (!aborted()) res.close();
    }
  }

  /**
   * The response as it may be written: uWS writes header lines as given, so a name that is not an
   * HTTP token or a value with CR, LF or NUL would split the answer (response splitting). Such a
   * response becomes a 500 problem, and the error is logged without the value; node:http refuses
   * the same headers by throwing.
   */
  private checked(response: HttpResponse, id: string): HttpResponse {
    const headers = response.headers ?? {};
    if (headerBlock(headers) !== undefined) return response; // checked when its block was built
    for (const name in headers) {
      const value = headers[name]!;
      const bad = !TOKEN.test(name.toLowerCase()) || (Array.isArray(value) ? value.some((v) => UNSAFE_VALUE.test(v)) : UNSAFE_VALUE.test(value));
      if (!bad) continue;
      this.opts.log.error({ req_id: id, header: name.slice(0, 64) }, 'a response header has a name or value HTTP does not allow: answered 500 instead');
      return { status: 500, headers: { 'content-type': 'application/problem+json', ...(headers.connection === 'close' ? { connection: 'close' } : {}) }, body: INTERNAL_BODY };
    }
    return response;
  }

  private writeHead(res: uWSTypes.HttpResponse, response: HttpResponse, id: string): void {
    res.writeStatus(statusLine(response.status));
    res.writeHeader(REQUEST_ID, id);
    const headers = response.headers ?? {};
    const block = headerBlock(headers);
    if (block !== undefined) {
      if (block !== null) res.writeHeader(block.name, block.rest);
      return;
    }
    for (const name in headers) {
      const lower = name.toLowerCase();
      if (SKIP_HEADERS.has(lower)) continue;
      const value = headers[name]!;
      if (Array.isArray(value)) writeHeaderValues(res, lower, value);
      else res.writeHeader(lower, value);
    }
  }

  /**
   * `head`: the answer to a HEAD request, written without its content (RFC 9110 9.3.2) but with
   * GET's headers, its Content-Length included (the body's, or `contentLength` where the handler
   * left the body out). `closeAfter`: the client asked for `Connection: close`.
   */
  private write(res: uWSTypes.HttpResponse, unchecked: HttpResponse, id: string, head = false, closeAfter = false): void {
    const response = this.checked(unchecked, id);
    this.writeHead(res, response, id);
    const close = closeAfter || response.headers?.connection === 'close';
    if (response.status === 204 || response.status === 304) endWithoutContent(res, undefined, close);
    else if (head) {
      const body = response.stream ? undefined : response.body;
      const length = response.contentLength ?? (body === undefined ? undefined : typeof body === 'string' ? Buffer.byteLength(body) : body.length);
      endWithoutContent(res, length, close);
    } else res.end(response.body ?? '', close);
  }
}
