/**
 * The baseline: stock oidc-provider 9 on node:http, standing in for "what users would run instead".
 * It is configured to do the same work as the product for the benchmarked requests: confidential
 * client_credentials clients (client_secret_basic) allowed `svc:clients:read`, JWT access tokens for
 * the resource urn:svc:api:v1 signed with the client's algorithm, one RS256, one ES256 and one EdDSA
 * key, introspection on. Storage is an unbounded in-memory adapter (baseline-adapter.ts; no
 * database), which flatters the baseline a little; JWT access tokens are not stored anyway.
 *
 * Stock oidc-provider refuses to introspect JWT access tokens, so the introspection scenario uses
 * an opaque token, which is what a client_credentials request *without* `resource` returns here.
 *
 * For the refresh scenario it also has a relying party (authorization code + refresh_token,
 * client_secret_basic, refresh tokens rotated on every use as the product does) and oidc-provider's
 * devInteractions sign-in, which accepts any login name and password: there is no password hashing
 * here, so the product's password login scenario has no baseline counterpart.
 *
 * The process entry point is baseline-main.ts.
 */
import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import Provider, { errors, type ClientMetadata, type JWK } from 'oidc-provider';
import { MemoryAdapter } from './baseline-adapter.js';
import { OIDC_PATH, RESOURCE, SCOPE, isSigningAlg, type SigningAlg } from './constants.js';

export interface BaselineClient {
  client_id: string;
  client_secret: string;
  /** Signing algorithm of this client's JWT access tokens. */
  alg: SigningAlg;
}

function toSigningJwk(key: KeyObject, alg: SigningAlg, kid: string): JWK {
  const jwk = key.export({ format: 'jwk' });
  return { ...jwk, kid, alg, use: 'sig' };
}

/** Fresh private keys, one per algorithm the product signs with by default. */
export function generateJwks(): { keys: JWK[] } {
  return {
    keys: [
      toSigningJwk(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey, 'RS256', 'bench-rs256'),
      toSigningJwk(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey, 'ES256', 'bench-es256'),
      toSigningJwk(generateKeyPairSync('ed25519').privateKey, 'EdDSA', 'bench-eddsa'),
    ],
  };
}

/** The relying party of the refresh scenario. */
export interface BaselineRelyingParty {
  client_id: string;
  client_secret: string;
  redirect_uri: string;
}

export function createBaselineProvider(issuer: string, clients: readonly BaselineClient[], rp?: BaselineRelyingParty): Provider {
  const clientMetadata: ClientMetadata[] = clients.map((c) => ({
    client_id: c.client_id,
    client_secret: c.client_secret,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
    scope: SCOPE,
    // Only used below to pick the access token algorithm, as the product does with this field.
    id_token_signed_response_alg: c.alg,
  }));

  if (rp) {
    clientMetadata.push({
      client_id: rp.client_id,
      client_secret: rp.client_secret,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [rp.redirect_uri],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: 'openid offline_access',
    });
  }

  return new Provider(issuer, {
    adapter: MemoryAdapter,
    clients: clientMetadata,
    jwks: generateJwks(),
    scopes: ['openid', 'offline_access', SCOPE],
    // The product's default lifetimes (CONTRACT.md), so long runs never see expiry.
    ttl: { ClientCredentials: 3600, AccessToken: 3600, IdToken: 3600, RefreshToken: 1209600, Grant: 1209600, Session: 1209600, Interaction: 3600, AuthorizationCode: 60 },
    // The product rotates refresh tokens on every use: the same work per refresh here.
    rotateRefreshToken: true,
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    features: {
      devInteractions: { enabled: rp !== undefined },
      clientCredentials: { enabled: true },
      introspection: {
        enabled: true,
        // oidc-provider's default policy, written out (which also silences its start-up notice):
        // any authenticated client may introspect; public clients only their own tokens.
        allowedPolicy: (ctx, client, token) => !(client.clientAuthMethod === 'none' && token.clientId !== ctx.oidc.client?.clientId),
      },
      resourceIndicators: {
        enabled: true,
        // No `resource` parameter means no resource server: an opaque token (introspection scenario).
        defaultResource: () => undefined,
        useGrantedResource: () => false,
        getResourceServerInfo: (_ctx, resourceIndicator, client) => {
          if (resourceIndicator !== RESOURCE) throw new errors.InvalidTarget();
          // oidc-provider signs JWT access tokens with the resource server's jwt.sign.alg (see
          // lib/models/formats/jwt.js), so the per-client algorithm is chosen here.
          const wanted = client.idTokenSignedResponseAlg;
          const alg: SigningAlg = isSigningAlg(wanted) ? wanted : 'RS256';
          return { scope: SCOPE, audience: RESOURCE, accessTokenFormat: 'jwt', accessTokenTTL: 3600, jwt: { sign: { alg } } };
        },
      },
    },
  });
}

/** Mounts the provider under OIDC_PATH, as the product does, on a plain node:http server. */
export async function startBaseline(host: string, port: number, clients: readonly BaselineClient[], rp?: BaselineRelyingParty): Promise<Server> {
  const provider = createBaselineProvider(`http://${host}:${port}${OIDC_PATH}`, clients, rp);
  const callback = provider.callback();
  const prefix = OIDC_PATH;
  const server = createServer((req, res) => {
    // Mount oidc-provider under a path the way Express does: strip the prefix from req.url and
    // keep the full path in req.originalUrl, from which oidc-provider derives the mount path of
    // the URLs it publishes (lib/helpers/oidc_context.js urlFor).
    const url = req.url ?? '/';
    if (url === prefix || url.startsWith(prefix + '/') || url.startsWith(prefix + '?')) {
      Object.assign(req, { originalUrl: url });
      const rest = url.slice(prefix.length);
      req.url = rest.startsWith('/') ? rest : '/' + rest;
      void callback(req, res);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
