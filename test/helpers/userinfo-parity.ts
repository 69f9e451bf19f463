/**
 * Userinfo answered by the product (TenantActor.handleOidc) and by oidc-provider (TenantActor.bridge)
 * for the same request: the answers must match in status, body bytes and the headers a client
 * reads; a spy on the bridge tells whether the product answered without oidc-provider.
 */
import { expect, vi } from 'vitest';
import type { HttpRequest, HttpResponse } from '../../src/http/types.js';
import type { TenantActor } from '../../src/tenancy/actor.js';

export interface UserinfoRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  rawQuery?: string;
}

/** A userinfo request as the front door hands it to the actor; `token` as `Authorization: Bearer`. */
export function userinfoRequest(host: string, token: string | undefined, o: UserinfoRequest = {}): HttpRequest {
  const body = Buffer.from(o.body ?? '');
  const headers: Record<string, string> = { host, ...(token ? { authorization: `Bearer ${token}` } : {}), ...o.headers };
  if (o.body !== undefined) headers['content-length'] = String(body.length);
  return { id: 'userinfo-parity', method: o.method ?? 'GET', path: '/oidc/v1/userinfo', rawQuery: o.rawQuery ?? '', headers, ip: '127.0.0.1', body, params: {} };
}

const HEADERS = ['content-type', 'cache-control', 'www-authenticate', 'vary', 'access-control-allow-origin', 'access-control-expose-headers'];
const view = (res: HttpResponse) => ({
  status: res.status,
  body: String(res.body ?? ''),
  headers: Object.fromEntries(HEADERS.map((h) => [h, res.headers?.[h]])),
});

export interface Compared {
  /** True when the product answered without handing the request to oidc-provider. */
  direct: boolean;
  status: number;
  json: any;
  res: HttpResponse;
}

/** Both answers, asserted equal. */
export async function compareUserinfo(actor: TenantActor, req: HttpRequest): Promise<Compared> {
  const spy = vi.spyOn(actor, 'bridge');
  let res: HttpResponse;
  let direct: boolean;
  try {
    res = await actor.handleOidc(req);
    direct = spy.mock.calls.length === 0;
  } finally {
    spy.mockRestore();
  }
  const stock = await actor.bridge(req);
  expect(view(res)).toEqual(view(stock));
  let json: unknown;
  try {
    json = JSON.parse(String(res.body));
  } catch {
    json = undefined;
  }
  return { direct, status: res.status, json, res };
}
