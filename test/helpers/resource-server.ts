/**
 * A customer's own API protected with our tokens, written the way the README tells customers to:
 * jose verifies the bearer JWT against the issuer's JWKS (issuer, audience = the resource's
 * identifier, typ at+jwt, expiry) and the handler requires a scope. A real HTTP server on 127.0.0.1.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';

export interface ResourceServerOptions {
  issuer: string;
  audience: string;
  /** The scope GET /orders needs. */
  requiredScope: string;
  /** The server's clock (a clock ahead of ours proves expired tokens are refused). */
  now?: () => Date;
  /** Where the keys come from (default: the issuer's /jwks). */
  keys?: JWTVerifyGetKey;
}

export interface ProtectedApi {
  url: string;
  /** GET /orders with the bearer token: status and JSON body. */
  call(token: string): Promise<{ status: number; body: Record<string, unknown>; wwwAuthenticate: string | null }>;
  close(): Promise<void>;
}

export async function startProtectedApi(opts: ResourceServerOptions): Promise<ProtectedApi> {
  const jwks = opts.keys ?? createRemoteJWKSet(new URL(`${opts.issuer}/jwks`));
  const server: Server = createServer((req, res) => {
    void (async () => {
      const send = (status: number, body: Record<string, unknown>, challenge?: string) => {
        res.statusCode = status;
        res.setHeader('content-type', 'application/json');
        if (challenge) res.setHeader('www-authenticate', challenge);
        res.end(JSON.stringify(body));
      };
      const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
      if (!m) return send(401, { error: 'invalid_token' }, 'Bearer error="invalid_token"');
      try {
        const { payload } = await jwtVerify(m[1]!, jwks, {
          issuer: opts.issuer,
          audience: opts.audience,
          typ: 'at+jwt',
          ...(opts.now ? { currentDate: opts.now() } : {}),
        });
        const scopes = String(payload.scope ?? '').split(' ');
        if (!scopes.includes(opts.requiredScope)) return send(403, { error: 'insufficient_scope' }, `Bearer error="insufficient_scope", scope="${opts.requiredScope}"`);
        return send(200, { sub: payload.sub, client_id: payload.client_id, scope: payload.scope, roles: payload.roles ?? null });
      } catch (err) {
        return send(401, { error: 'invalid_token', reason: (err as { code?: string }).code ?? 'invalid' }, 'Bearer error="invalid_token"');
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    async call(token) {
      const res = await fetch(`${url}/orders`, { headers: { authorization: `Bearer ${token}` } });
      return { status: res.status, body: (await res.json()) as Record<string, unknown>, wwwAuthenticate: res.headers.get('www-authenticate') };
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
