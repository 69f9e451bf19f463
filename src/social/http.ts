/**
 * Every request to a social provider (discovery, JWKS, token, user info, GitHub and Facebook APIs)
 * goes through upstreamFetch: the product's outbound rule (no private or loopback addresses in
 * production unless `security.outbound.allow_private_networks`), no redirects, a time limit
 * (`features.social_login.upstream_timeout_ms`) and a size limit. One function, so the request
 * path moves to src/outbound in one place.
 */
import type { AppContext } from '../context.js';
import { outboundAllowed } from '../oidc/backchannel.js';

export interface UpstreamResponse {
  status: number;
  body: Buffer;
  header(name: string): string | null;
}

export interface UpstreamRequest {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
  maxBytes?: number;
}

/** Why an upstream call failed, in words fit for the log (never shown to the user as is). */
export class UpstreamError extends Error {
  constructor(
    readonly reason: 'refused' | 'timeout' | 'network' | 'too_large' | 'status' | 'invalid',
    message: string,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }
}

const DEFAULT_MAX_BYTES = 512 * 1024;

export async function upstreamFetch(ctx: AppContext, raw: string, init: UpstreamRequest): Promise<UpstreamResponse> {
  const url = new URL(raw);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UpstreamError('refused', `${url.protocol} is not an HTTP URL`);
  if (!(await outboundAllowed(ctx, url))) throw new UpstreamError('refused', `${url.host} is a private or loopback address (security.outbound.allow_private_networks is off)`);
  const limit = init.maxBytes ?? DEFAULT_MAX_BYTES;
  let res: Response;
  try {
    res = await fetch(url, {
      method: init.method ?? 'GET',
      headers: { 'user-agent': 'svc', ...init.headers },
      ...(init.body !== undefined ? { body: init.body } : {}),
      redirect: 'manual',
      signal: AbortSignal.timeout(init.timeoutMs),
    });
  } catch (err) {
    const e = err as Error;
    if (e.name === 'TimeoutError' || e.name === 'AbortError') throw new UpstreamError('timeout', `${url.host} did not answer within ${init.timeoutMs} ms`);
    throw new UpstreamError('network', `${url.host}: ${e.message}`);
  }
  const chunks: Buffer[] = [];
  let received = 0;
  try {
    if (res.body) {
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        received += chunk.length;
        if (received > limit) {
          await res.body.cancel().catch(() => undefined);
          throw new UpstreamError('too_large', `${url.host} answered more than ${limit} bytes`);
        }
        chunks.push(Buffer.from(chunk));
      }
    }
  } catch (err) {
    if (err instanceof UpstreamError) throw err;
    const e = err as Error;
    if (e.name === 'TimeoutError' || e.name === 'AbortError') throw new UpstreamError('timeout', `${url.host} did not answer within ${init.timeoutMs} ms`);
    throw new UpstreamError('network', `${url.host}: ${e.message}`);
  }
  return { status: res.status, body: Buffer.concat(chunks), header: (name) => res.headers.get(name) };
}

/** The JSON object of a 200 answer, or an UpstreamError naming what came instead. */
export function jsonObject(res: UpstreamResponse, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(res.body.toString('utf8'));
  } catch {
    throw new UpstreamError(res.status === 200 ? 'invalid' : 'status', `${what}: HTTP ${res.status}, not JSON`);
  }
  if (res.status !== 200) {
    const error = parsed && typeof parsed === 'object' && 'error' in parsed ? String((parsed as { error: unknown }).error).slice(0, 100) : '';
    throw new UpstreamError('status', `${what}: HTTP ${res.status}${error ? ` (${error})` : ''}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UpstreamError('invalid', `${what}: not a JSON object`);
  return parsed as Record<string, unknown>;
}
