/**
 * A real OpenID Connect upstream for social-login tests: stock oidc-provider on loopback, with its
 * development sign-in pages (any login, any password; the login is the account id). Accounts and
 * their claims are set by the test. The port is taken first so the issuer is known before the
 * service under test starts; the provider itself is built once the service's callback URL is known.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface UpstreamAccount {
  email?: string;
  email_verified?: boolean;
  given_name?: string;
  family_name?: string;
  name?: string;
}

export interface UpstreamOidc {
  /** http://127.0.0.1:<port> */
  issuer: string;
  /** Accounts by login (what the tester types on the upstream's sign-in page). */
  accounts: Map<string, UpstreamAccount>;
  /** Builds the provider with one confidential client (client_secret_basic). */
  register(client: { client_id: string; client_secret: string; redirect_uris: string[] }): void;
  close(): Promise<void>;
}

export async function startUpstreamOidc(): Promise<UpstreamOidc> {
  let handler: ((req: never, res: never) => void) | undefined;
  const server: Server = createServer((req, res) => {
    if (!handler) {
      res.statusCode = 503;
      res.end('not ready');
      return;
    }
    handler(req as never, res as never);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const accounts = new Map<string, UpstreamAccount>();
  return {
    issuer,
    accounts,
    register(client) {
      const provider = new Provider(issuer, {
        clients: [{ ...client, grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic' }],
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['given_name', 'family_name', 'name'] },
        pkce: { required: () => true },
        findAccount: async (_ctx, sub) => {
          const account = accounts.get(sub);
          if (!account) return undefined;
          return { accountId: sub, claims: async () => ({ sub, ...account }) };
        },
      });
      handler = provider.callback() as unknown as (req: never, res: never) => void;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
