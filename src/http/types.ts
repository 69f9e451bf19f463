/** The request as the front door copies it out of uWS (uWS's own req dies when the handler returns). */
export interface HttpRequest {
  /** Request id, echoed as x-request-id and on every log line of this request. */
  readonly id: string;
  /** Upper-case method. */
  readonly method: string;
  /** Path without the query string. */
  readonly path: string;
  /** Raw query string without the leading '?'. */
  readonly rawQuery: string;
  /** Lower-case header names; repeated headers joined with ', '. */
  readonly headers: Readonly<Record<string, string>>;
  /** Normalised remote address (IPv4 dotted or compressed IPv6). */
  readonly ip: string;
  readonly body: Buffer;
  /** Route parameters, filled in by the router. */
  params: Record<string, string>;
}

export type HeaderValue = string | string[];

export interface HttpResponse {
  status: number;
  headers?: Record<string, HeaderValue>;
  body?: string | Buffer;
  /**
   * For an answer to HEAD without its body: the Content-Length GET's answer has (RFC 9110 8.6),
   * written by the front door, which otherwise takes the length from `body`.
   */
  contentLength?: number;
  /**
   * A body produced piece by piece (large exports): written as it comes, with backpressure, in
   * place of `body`. The iterator is closed (return()) if the client goes away.
   */
  stream?: AsyncIterable<string | Buffer>;
}

export type Handler = (req: HttpRequest) => Promise<HttpResponse> | HttpResponse;

export function json(status: number, value: unknown, headers: Record<string, HeaderValue> = {}): HttpResponse {
  return { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers }, body: JSON.stringify(value) };
}
