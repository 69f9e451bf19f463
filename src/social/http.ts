/**
 * Every request to a social provider (discovery, JWKS, token, user info, GitHub and Facebook APIs)
 * goes through upstreamFetch: the product's outbound rule (no private or loopback addresses in
 * production unless `security.outbound.allow_private_networks`), no redirects, a time limit
 * (`features.social_login.upstream_timeout_ms`) and a size limit. One function, so the request
 * path moves to src/outbound in one place.
 */
import type { AppContext } from '../context.js';
import { OutboundRefused, outboundFetch, outboundPolicy } from '../outbound/index.js';

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
  let host = raw;
  try {
    host = new URL(raw).host;
  } catch {
    throw new UpstreamError('refused', 'not a valid URL');
  }
  try {
    const res = await outboundFetch(raw, {
      method: init.method ?? 'GET',
      headers: { 'user-agent': 'svc', ...init.headers },
      ...(init.body !== undefined ? { body: init.body } : {}),
      timeoutMs: init.timeoutMs,
      maxBytes: init.maxBytes ?? DEFAULT_MAX_BYTES,
      policy: outboundPolicy(ctx.config),
    });
    return { status: res.status, body: res.body, header: res.header };
  } catch (err) {
    if (err instanceof OutboundRefused) throw new UpstreamError('refused', `${host}: ${err.message}`);
    const message = err instanceof Error ? err.message : String(err);
    if (/timed out/.test(message)) throw new UpstreamError('timeout', `${host} did not answer within ${init.timeoutMs} ms`);
    if (/too large/.test(message)) throw new UpstreamError('too_large', `${host} answered more than ${init.maxBytes ?? DEFAULT_MAX_BYTES} bytes`);
    throw new UpstreamError('network', `${host}: ${message}`);
  }
}

/** An error answer's `error`: OAuth's string, or the Graph API's object (`type`, `code`, `error_subcode`). */
function errorName(error: unknown): string {
  if (error && typeof error === 'object') {
    const e = error as { type?: unknown; code?: unknown; error_subcode?: unknown };
    return [e.type, e.code, e.error_subcode].filter((x) => typeof x === 'string' || typeof x === 'number').join(' ').slice(0, 100);
  }
  return String(error).slice(0, 100);
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
    const error = parsed && typeof parsed === 'object' && 'error' in parsed ? errorName((parsed as { error: unknown }).error) : '';
    throw new UpstreamError('status', `${what}: HTTP ${res.status}${error ? ` (${error})` : ''}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UpstreamError('invalid', `${what}: not a JSON object`);
  return parsed as Record<string, unknown>;
}
