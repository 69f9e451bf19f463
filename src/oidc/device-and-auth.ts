/**
 * Small behaviours oidc-provider 9 lacks, applied around the bridge:
 * - the device authorization response carries `interval` (RFC 8628 3.2);
 * - polling faster than the interval answers `slow_down` and adds 5 s (RFC 8628 3.5);
 * - `offline_access` is honoured without the caller adding prompt=consent: OIDC Core 11 wants a
 *   consent step for it, so the request gets one (first-party clients consent implicitly).
 */
import QuickLRU from 'quick-lru';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import type { OidcPayloadRepository, TenantId } from '../storage/types.js';

export function withDeviceInterval(res: HttpResponse, interval: number): HttpResponse {
  if (res.status !== 200 || !res.body) return res;
  try {
    const body = JSON.parse(res.body.toString()) as Record<string, unknown>;
    if (typeof body.device_code !== 'string') return res;
    body.interval = interval;
    return { ...res, body: JSON.stringify(body) };
  } catch {
    return res;
  }
}

interface PollHost {
  readonly tenant: TenantId;
  readonly config: { oidc: { device_poll_interval: number } };
  readonly ctx: { storage: { oidc: OidcPayloadRepository } };
}

export function devicePollGuard() {
  // quick-lru: grows as used (lru-cache preallocates `max` slots per actor); an entry expires 1 h
  // after its last set, as with lru-cache's ttl (get does not refresh it).
  const polls = new QuickLRU<string, { last: number; interval: number }>({ maxSize: 50000, maxAge: 3600_000 });
  return {
    /** A slow_down answer when a pending device code is polled too fast; undefined otherwise. */
    async check(host: PollHost, req: HttpRequest): Promise<HttpResponse | undefined> {
      if (!(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) return undefined;
      const form = new URLSearchParams(req.body.toString('utf8'));
      if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:device_code') return undefined;
      const code = form.get('device_code');
      if (!code || code.length > 512) return undefined;
      const now = Date.now();
      const seen = polls.get(code);
      polls.set(code, { last: now, interval: seen?.interval ?? host.config.oidc.device_poll_interval });
      if (!seen || now - seen.last >= seen.interval * 1000) return undefined;
      const row = await host.ctx.storage.oidc.find(host.tenant, 'DeviceCode', code);
      const pending = row && !row.consumed && !row.payload.accountId && !row.payload.error;
      if (!pending) return undefined;
      polls.set(code, { last: now, interval: seen.interval + 5 });
      return {
        status: 400,
        headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
        body: JSON.stringify({ error: 'slow_down', error_description: `polling too fast: wait at least ${seen.interval + 5} seconds between requests` }),
      };
    },
  };
}

/** Adds prompt=consent to an authorization request asking for offline_access (see above). */
export function offlineAccessNeedsConsent(req: HttpRequest): HttpRequest {
  const isForm = req.method === 'POST' && (req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
  const params = new URLSearchParams(isForm ? req.body.toString('utf8') : req.rawQuery);
  const scopes = (params.get('scope') ?? '').split(' ');
  if (!scopes.includes('offline_access')) return req;
  const prompts = (params.get('prompt') ?? '').split(' ').filter(Boolean);
  if (prompts.includes('consent') || prompts.includes('none')) return req;
  params.set('prompt', [...prompts, 'consent'].join(' '));
  return isForm ? { ...req, body: Buffer.from(params.toString()) } : { ...req, rawQuery: params.toString() };
}
