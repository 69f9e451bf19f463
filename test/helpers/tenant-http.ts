/**
 * Raw node:http requests to a multi-tenant app on 127.0.0.1, addressing a tenant by header
 * (x-tenant-id) and/or by subdomain (Host `<sub>.localhost:<port>`) — fetch cannot set Host.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';

export interface TenantResponse {
  status: number;
  headers: Record<string, string>;
  setCookie: string[];
  text: string;
  json: any;
}

export interface TenantRequest {
  /** Tenant by header (x-tenant-id). */
  tenant?: string;
  /** Tenant by subdomain: Host `<sub>.localhost:<port>`. */
  sub?: string;
  token?: string;
  /** A whole Authorization header (e.g. Basic). */
  auth?: string;
  cookie?: string;
  body?: unknown;
  form?: Record<string, string>;
  headers?: Record<string, string>;
}

function flat(h: IncomingHttpHeaders): Record<string, string> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v ?? '')]));
}

export function send(port: number, method: string, path: string, o: TenantRequest = {}): Promise<TenantResponse> {
  const headers: Record<string, string> = { host: o.sub ? `${o.sub}.localhost:${port}` : `localhost:${port}`, ...(o.headers ?? {}) };
  if (o.tenant) headers['x-tenant-id'] = o.tenant;
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.auth) headers.authorization = o.auth;
  if (o.cookie) headers.cookie = o.cookie;
  let payload: string | undefined;
  if (o.form) {
    payload = new URLSearchParams(o.form).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  } else if (o.body !== undefined) {
    payload = JSON.stringify(o.body);
    headers['content-type'] = 'application/json';
  }
  if (payload !== undefined) headers['content-length'] = String(Buffer.byteLength(payload));
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: flat(res.headers), setCookie: res.headers['set-cookie'] ?? [], text, json });
      });
    });
    req.on('error', (err) => reject(new Error(`${method} ${path}: ${err.message}`)));
    req.end(payload);
  });
}
