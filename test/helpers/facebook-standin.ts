/**
 * A local stand-in for Facebook Login and the Graph API, shaped like Facebook's documentation
 * (developers.facebook.com: "Manually Build a Login Flow", "Graph API: User", "Securing Graph API
 * Requests"), one origin for what Facebook serves from www.facebook.com and graph.facebook.com:
 *   GET /v19.0/dialog/oauth              client_id, redirect_uri, state, scope (comma separated),
 *                                        optional code_challenge; a declined dialog comes back with
 *                                        error=access_denied, error_reason=user_denied
 *   GET|POST /v19.0/oauth/access_token   client_id, client_secret, redirect_uri, code (+
 *                                        code_verifier) -> {access_token, token_type, expires_in};
 *                                        errors are HTTP 400 {error: {message, type: "OAuthException",
 *                                        code, error_subcode, fbtrace_id}}
 *   GET /v19.0/me?fields=id,name,email   only the fields asked for that the person has: Facebook
 *                                        leaves `email` out when the person has no confirmed address
 * The access token is accepted as a Bearer header or `?access_token=`. With "Require App Secret"
 * on (`requireProof`, as the product's Facebook app should be set), every Graph call must carry
 * `appsecret_proof` = HMAC-SHA256(app secret, access token), hex.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { startOAuth2Standin, type Answer, type OAuth2Standin, type TokenFailure } from './oauth2-standin.js';

export const GRAPH_VERSION = 'v19.0';

/** What Facebook knows of the person; `email` absent: no confirmed address (phone-only account). */
export interface FacebookPerson {
  id: string;
  name: string;
  first_name?: string;
  last_name?: string;
  email?: string;
}

export interface FacebookStandin extends OAuth2Standin {
  person: FacebookPerson;
  /** "Require App Secret": Graph calls without a valid appsecret_proof are refused. */
  requireProof: boolean;
  /** The product's endpoints override for this stand-in. */
  endpoints: { authorization: string; token: string; user: string };
}

export function graphError(status: number, message: string, type: string, code: number, subcode?: number): Answer {
  return { status, body: { error: { message, type, code, ...(subcode ? { error_subcode: subcode } : {}), fbtrace_id: randomBytes(8).toString('base64url') } } };
}

const TOKEN_ERRORS: Record<TokenFailure, Answer> = {
  client: graphError(400, 'Error validating client secret.', 'OAuthException', 1),
  code: graphError(400, 'This authorization code has been used.', 'OAuthException', 100, 36009),
  redirect_uri: graphError(400, 'Error validating verification code. Please make sure your redirect_uri is identical to the one you used in the OAuth dialog request', 'OAuthException', 100, 36008),
  pkce: graphError(400, 'Invalid code verifier.', 'OAuthException', 100),
};

export async function startFacebookStandin(clientId = '1234567890123456', clientSecret = 'fb-app-secret-0123456789abcdef'): Promise<FacebookStandin> {
  const data: { person: FacebookPerson; requireProof: boolean } = {
    person: { id: '10158000000000001', name: 'Fiona Book', first_name: 'Fiona', last_name: 'Book', email: 'fiona@facebook.example' },
    requireProof: true,
  };
  const me = (url: URL, token: string): Answer => {
    const proof = url.searchParams.get('appsecret_proof');
    const expected = createHmac('sha256', clientSecret).update(token).digest('hex');
    if (proof !== null ? proof !== expected : data.requireProof) {
      return graphError(400, proof === null ? 'API calls from the server require an appsecret_proof argument' : 'Invalid appsecret_proof provided in the API argument', 'GraphMethodException', 100);
    }
    const fields = (url.searchParams.get('fields') ?? 'id,name').split(',').map((f) => f.trim());
    const person = data.person as unknown as Record<string, unknown>;
    return { status: 200, body: Object.fromEntries(fields.filter((f) => person[f] !== undefined).map((f) => [f, person[f]])) };
  };
  const base = await startOAuth2Standin(
    {
      authorizePath: `/${GRAPH_VERSION}/dialog/oauth`,
      tokenPath: `/${GRAPH_VERSION}/oauth/access_token`,
      tokenMethods: ['GET', 'POST'],
      denied: { error: 'access_denied', error_code: '200', error_description: 'Permissions error', error_reason: 'user_denied' },
      tokenError: (failure) => TOKEN_ERRORS[failure],
      tokenSuccess: (token) => ({ status: 200, body: { access_token: token, token_type: 'bearer', expires_in: 5183944 } }),
      tokenPrefix: 'EAAG',
      tokenInQuery: true,
      apiPaths: [`/${GRAPH_VERSION}/me`],
      api: (_path, url, token) => me(url, token),
      unauthorized: () => graphError(400, 'Invalid OAuth access token - Cannot parse access token', 'OAuthException', 190),
      notFound: graphError(400, 'Unknown path components', 'OAuthException', 2500),
    },
    clientId,
    clientSecret,
  );
  const origin = base.origin;
  return Object.defineProperties(base, {
    person: { get: () => data.person, set: (v: FacebookPerson) => (data.person = v), enumerable: true },
    requireProof: { get: () => data.requireProof, set: (v: boolean) => (data.requireProof = v), enumerable: true },
    endpoints: {
      value: {
        authorization: `${origin}/${GRAPH_VERSION}/dialog/oauth`,
        token: `${origin}/${GRAPH_VERSION}/oauth/access_token`,
        // The product's preset asks for these fields (src/social/presets.ts).
        user: `${origin}/${GRAPH_VERSION}/me?fields=id,name,email,first_name,last_name`,
      },
      enumerable: true,
    },
  }) as FacebookStandin;
}
