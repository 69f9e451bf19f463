/**
 * Runs a Node-style (req, res) callback — oidc-provider's Koa app — on a copied HttpRequest and
 * collects what it writes into an HttpResponse. Only the parts of IncomingMessage/ServerResponse
 * that Koa, on-finished and oidc-provider touch are provided.
 */
import { EventEmitter } from 'node:events';
import { Readable, Writable } from 'node:stream';
import type { HeaderValue, HttpRequest, HttpResponse } from './types.js';

export type NodeCallback = (req: never, res: never) => unknown;

class FakeSocket extends EventEmitter {
  readonly writable = true;
  readonly encrypted: boolean;
  constructor(readonly remoteAddress: string, secure: boolean) {
    super();
    this.encrypted = secure;
  }
  setTimeout(): this { return this; }
  setNoDelay(): this { return this; }
  destroy(): this { return this; }
}

class BridgeRequest extends Readable {
  readonly httpVersion = '1.1';
  readonly httpVersionMajor = 1;
  readonly httpVersionMinor = 1;
  readonly complete = true;
  constructor(
    readonly method: string,
    public url: string,
    readonly originalUrl: string,
    readonly headers: Record<string, string>,
    readonly socket: FakeSocket,
    body: Buffer,
  ) {
    super();
    if (body.length) this.push(body);
    this.push(null);
  }
  get connection(): FakeSocket { return this.socket; }
  override _read(): void {}
}

class BridgeResponse extends Writable {
  statusCode = 200;
  statusMessage = '';
  headersSent = false;
  readonly chunks: Buffer[] = [];
  private readonly headerMap = new Map<string, HeaderValue>();
  constructor(readonly socket: FakeSocket) {
    super();
  }
  get connection(): FakeSocket { return this.socket; }
  get finished(): boolean { return this.writableEnded; }
  setHeader(name: string, value: number | string | readonly string[]): this {
    this.headerMap.set(name.toLowerCase(), typeof value === 'number' ? String(value) : Array.isArray(value) ? [...value] : (value as string));
    return this;
  }
  appendHeader(name: string, value: string | readonly string[]): this {
    const prev = this.headerMap.get(name.toLowerCase());
    const add = Array.isArray(value) ? [...value] : [value as string];
    this.headerMap.set(name.toLowerCase(), prev === undefined ? add : [...(Array.isArray(prev) ? prev : [prev]), ...add]);
    return this;
  }
  getHeader(name: string): HeaderValue | undefined { return this.headerMap.get(name.toLowerCase()); }
  getHeaders(): Record<string, HeaderValue> { return Object.fromEntries(this.headerMap); }
  getHeaderNames(): string[] { return [...this.headerMap.keys()]; }
  hasHeader(name: string): boolean { return this.headerMap.has(name.toLowerCase()); }
  removeHeader(name: string): void { this.headerMap.delete(name.toLowerCase()); }
  writeHead(status: number, reason?: string | Record<string, HeaderValue>, headers?: Record<string, HeaderValue>): this {
    this.statusCode = status;
    const h = typeof reason === 'object' ? reason : headers;
    if (typeof reason === 'string') this.statusMessage = reason;
    if (h) for (const [k, v] of Object.entries(h)) this.setHeader(k, v);
    this.headersSent = true;
    return this;
  }
  flushHeaders(): void { this.headersSent = true; }
  override _write(chunk: Buffer | string, encoding: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.headersSent = true;
    this.chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, encoding));
    cb();
  }
  toResponse(): HttpResponse {
    return { status: this.statusCode, headers: this.getHeaders(), body: Buffer.concat(this.chunks) };
  }
}

export interface BridgeTarget {
  /** Path prefix the callback is mounted under (e.g. /oidc/v1). */
  mountPath: string;
  /** The public origin (scheme and host) URLs must be built from, whatever the Host header says. */
  origin: URL;
}

/**
 * Koa answers HEAD with no body and GET's length in its Content-Length header, which the front
 * door does not copy (it writes the length itself): carried as the answer's contentLength.
 */
function headAnswer(res: HttpResponse): HttpResponse {
  const length = Number(res.headers?.['content-length']);
  return Number.isSafeInteger(length) && length >= 0 && (res.body === undefined || res.body.length === 0) ? { ...res, contentLength: length } : res;
}

/** Runs `callback` for `req` and resolves with what it wrote. */
export function runNodeCallback(callback: NodeCallback, req: HttpRequest, target: BridgeTarget): Promise<HttpResponse> {
  const secure = target.origin.protocol === 'https:';
  const socket = new FakeSocket(req.ip, secure);
  const originalUrl = req.rawQuery ? `${req.path}?${req.rawQuery}` : req.path;
  const inner = originalUrl.slice(target.mountPath.length) || '/';
  // oidc-provider builds absolute URLs from the request: pin them to the tenant's issuer origin.
  // X-Forwarded-For is replaced by the one client address the front door computed (trusted
  // proxies only, http/client-ip.ts): oidc-provider trusts it (`proxy`), so a client's own must not reach it.
  // x-request-id: the id the front door answers with, so oidc-provider's error pages can show it.
  const headers = { ...req.headers, host: target.origin.host, 'x-forwarded-host': target.origin.host, 'x-forwarded-proto': target.origin.protocol.slice(0, -1), 'x-forwarded-for': req.ip, 'x-request-id': req.id };
  const nreq = new BridgeRequest(req.method, inner.startsWith('/') ? inner : `/${inner}`, originalUrl, headers, socket, req.body);
  const nres = new BridgeResponse(socket);
  return new Promise((resolve, reject) => {
    nres.on('finish', () => resolve(req.method === 'HEAD' ? headAnswer(nres.toResponse()) : nres.toResponse()));
    nres.on('error', reject);
    try {
      callback(nreq as never, nres as never);
    } catch (err) {
      reject(err);
    }
  });
}

/**
 * Runs `fn` with Node-style req/res objects for `req` (oidc-provider's interactionDetails and
 * interactionResult want them) and returns its response plus any cookies it set on `res`.
 */
export async function withNodeObjects(
  req: HttpRequest,
  target: BridgeTarget,
  fn: (nreq: unknown, nres: unknown) => Promise<HttpResponse>,
): Promise<HttpResponse> {
  const socket = new FakeSocket(req.ip, target.origin.protocol === 'https:');
  const originalUrl = req.rawQuery ? `${req.path}?${req.rawQuery}` : req.path;
  // X-Forwarded-For is replaced by the one client address the front door computed (trusted
  // proxies only, http/client-ip.ts): oidc-provider trusts it (`proxy`), so a client's own must not reach it.
  const headers = { ...req.headers, host: target.origin.host, 'x-forwarded-host': target.origin.host, 'x-forwarded-proto': target.origin.protocol.slice(0, -1), 'x-forwarded-for': req.ip };
  const nreq = new BridgeRequest(req.method, originalUrl.slice(target.mountPath.length) || '/', originalUrl, headers, socket, Buffer.alloc(0));
  const nres = new BridgeResponse(socket);
  const res = await fn(nreq, nres);
  const cookies = nres.getHeader('set-cookie');
  if (cookies !== undefined) {
    const prev = res.headers?.['set-cookie'];
    const all = [...(prev === undefined ? [] : Array.isArray(prev) ? prev : [prev]), ...(Array.isArray(cookies) ? cookies : [cookies])];
    res.headers = { ...res.headers, 'set-cookie': all };
  }
  return res;
}
