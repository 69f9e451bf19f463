/**
 * Raw node:http requests to a multi-tenant app on 127.0.0.1, addressing a tenant by header
 * (x-tenant-id) and/or by subdomain (Host `<sub>.localhost:<port>`) — fetch cannot set Host.
 * The request itself is bench/http.ts `tenantRequest`, shared with the multi-tenant benches; the
 * tests read the parsed body loosely (`json: any`).
 */
import { tenantRequest, type TenantRequest, type TenantResponse as SharedResponse } from '../../bench/http.js';

export type { TenantRequest };

export interface TenantResponse extends Omit<SharedResponse, 'json'> {
  json: any;
}

export function send(port: number, method: string, path: string, o: TenantRequest = {}): Promise<TenantResponse> {
  return tenantRequest(port, method, path, o);
}
