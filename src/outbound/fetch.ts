/**
 * One HTTP(S) request to a checked destination. The host name is resolved once, every address it
 * resolves to is checked against the policy, and the socket connects to the checked address through
 * a custom `lookup` (no second DNS query, so no DNS-rebinding window); TLS still verifies the
 * certificate for the host name. Redirects are never followed (a 3xx is returned as it is), and
 * both the time and the response size are bounded.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { addressKind } from './address.js';
import { kindAllowed, OutboundRefused, refusalText, urlProblem, type OutboundPolicy } from './policy.js';

/** Resolves a host name to its addresses (node's resolver unless a test brings its own). */
export type Resolve = (host: string) => Promise<string[]>;

export interface OutboundRequest {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Whole request, connect to last byte. Default 5000 ms. */
  timeoutMs?: number;
  /** Ends the request early (before its timeout): it fails with the signal's reason. */
  signal?: AbortSignal;
  /** Largest response body accepted. Default 1 MiB. */
  maxBytes?: number;
  policy: OutboundPolicy;
  resolve?: Resolve;
}

export interface OutboundResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
  /** `get(name)` like fetch's Headers, for code written against it. */
  header(name: string): string | null;
}

const DEFAULT_TIMEOUT_MS = 5000;
const DEFAULT_MAX_BYTES = 1024 * 1024;

const systemResolve: Resolve = async (host) => (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * The address to connect to: the literal itself, or the first of the host's addresses once all of
 * them passed (one bad address refuses the host: an attacker's DNS could otherwise alternate).
 */
export async function checkedAddress(url: URL, policy: OutboundPolicy, resolve: Resolve = systemResolve): Promise<string> {
  const problem = urlProblem(url, policy);
  if (problem) throw new OutboundRefused(problem);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (addressKind(host)) return host;
  let addresses: string[];
  try {
    addresses = await resolve(host);
  } catch {
    throw new OutboundRefused(`the host ${host} could not be resolved`);
  }
  if (!addresses.length) throw new OutboundRefused(`the host ${host} could not be resolved`);
  for (const a of addresses) {
    const kind = addressKind(a) ?? 'never';
    if (!kindAllowed(kind, policy)) throw new OutboundRefused(`${host}: ${refusalText(kind)}`);
  }
  return addresses[0]!;
}

/** Throws OutboundRefused when the URL may not be fetched under the policy (resolving its host). */
export async function checkOutboundUrl(raw: string | URL, policy: OutboundPolicy, resolve?: Resolve): Promise<void> {
  let url: URL;
  try {
    url = typeof raw === 'string' ? new URL(raw) : raw;
  } catch {
    throw new OutboundRefused('not a valid URL');
  }
  await checkedAddress(url, policy, resolve);
}

function pinnedLookup(address: string): LookupFunction {
  const family = address.includes(':') ? 6 : 4;
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as unknown as LookupFunction;
}

export async function outboundFetch(raw: string | URL, req: OutboundRequest): Promise<OutboundResponse> {
  let url: URL;
  try {
    url = typeof raw === 'string' ? new URL(raw) : raw;
  } catch {
    throw new OutboundRefused('not a valid URL');
  }
  const timeoutMs = req.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = req.maxBytes ?? DEFAULT_MAX_BYTES;
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = req.signal ? AbortSignal.any([deadline, req.signal]) : deadline;
  // Why the request stopped: its timeout, else the caller's signal.
  const stopped = (): Error => {
    const reason: unknown = req.signal?.aborted && !deadline.aborted ? req.signal.reason : undefined;
    return reason instanceof Error ? reason : reason !== undefined ? new Error(String(reason)) : new Error(`timed out after ${timeoutMs} ms`);
  };
  const address = await Promise.race([
    checkedAddress(url, req.policy, req.resolve),
    new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(stopped()), { once: true })),
  ]);
  const body = req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body);
  const headers: Record<string, string> = { ...(req.headers ?? {}) };
  if (body) headers['content-length'] = String(body.length);
  const transport = url.protocol === 'https:' ? https : http;

  return new Promise<OutboundResponse>((resolvePromise, reject) => {
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      request.destroy();
      reject(err);
    };
    const request = transport.request(
      {
        protocol: url.protocol,
        hostname: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method: req.method ?? 'GET',
        headers,
        // Connect where the check said; the Host header and TLS name stay the URL's host.
        lookup: pinnedLookup(address),
        servername: addressKind(url.hostname) ? undefined : url.hostname,
        agent: false,
        signal,
      },
      (res) => {
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > maxBytes) return fail(new Error('response too large'));
        const chunks: Buffer[] = [];
        let received = 0;
        res.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received > maxBytes) return fail(new Error('response too large'));
          chunks.push(chunk);
        });
        res.on('error', (err) => fail(err));
        res.on('end', () => {
          if (settled) return;
          settled = true;
          const flat: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) flat[k] = Array.isArray(v) ? v.join(', ') : v;
          resolvePromise({ status: res.statusCode ?? 0, headers: flat, body: Buffer.concat(chunks), header: (name) => flat[name.toLowerCase()] ?? null });
        });
      },
    );
    request.on('error', (err) => fail(signal.aborted ? stopped() : err));
    if (body) request.end(body);
    else request.end();
  });
}
