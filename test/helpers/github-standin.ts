/**
 * A local stand-in for GitHub's OAuth app endpoints, shaped exactly like GitHub's documented API
 * (docs.github.com: "Authorizing OAuth apps", REST "Get the authenticated user", "List email
 * addresses for the authenticated user"): GET /login/oauth/authorize, POST
 * /login/oauth/access_token (JSON with `Accept: application/json`; errors as 200 + `error`, as
 * GitHub does), GET /user and GET /user/emails with a Bearer token. The OAuth 2.0 mechanics are
 * the common stand-in's (oauth2-standin.ts).
 */
import { startOAuth2Standin, type OAuth2Standin, type TokenFailure } from './oauth2-standin.js';

export interface GithubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
  visibility: 'public' | 'private' | null;
}

export interface GithubStandin extends OAuth2Standin {
  user: { login: string; id: number; name: string | null; email: string | null };
  emails: GithubEmail[];
}

const TOKEN_ERRORS: Record<TokenFailure, { error: string; error_description: string }> = {
  client: { error: 'incorrect_client_credentials', error_description: 'The client_id and/or client_secret passed are incorrect.' },
  code: { error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.' },
  redirect_uri: { error: 'redirect_uri_mismatch', error_description: 'The redirect_uri MUST match the registered callback URL for this application.' },
  pkce: { error: 'bad_verification_code', error_description: 'PKCE verification failed' },
};

export async function startGithubStandin(clientId = 'Iv1.standin', clientSecret = 'gh-secret-0123456789abcdef'): Promise<GithubStandin> {
  const data = {
    user: { login: 'octocat', id: 583231, name: 'The Octocat', email: null } as GithubStandin['user'],
    emails: [{ email: 'octocat@github.example', primary: true, verified: true, visibility: 'private' }] as GithubEmail[],
  };
  const base = await startOAuth2Standin(
    {
      authorizePath: '/login/oauth/authorize',
      tokenPath: '/login/oauth/access_token',
      tokenMethods: ['POST'],
      denied: { error: 'access_denied', error_description: 'The user has denied your application access.', error_uri: 'https://docs.github.com/apps/troubleshooting-authorization-request-errors/#access-denied' },
      // GitHub answers token errors with 200 and an `error` field.
      tokenError: (failure) => ({ status: 200, body: TOKEN_ERRORS[failure] }),
      tokenSuccess: (token) => ({ status: 200, body: { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' } }),
      tokenPrefix: 'gho_',
      tokenInQuery: false,
      apiPaths: ['/user', '/user/emails'],
      api: (path) => (path === '/user' ? { status: 200, body: { ...data.user, type: 'User', avatar_url: 'https://avatars.example/u/1' } } : { status: 200, body: data.emails }),
      unauthorized: () => ({ status: 401, body: { message: 'Requires authentication', documentation_url: 'https://docs.github.com/rest' } }),
      notFound: { status: 404, body: { message: 'Not Found' } },
    },
    clientId,
    clientSecret,
  );
  // The test sets `user` and `emails` on the returned object; the answers read them from `data`.
  return Object.defineProperties(base, {
    user: { get: () => data.user, set: (v: GithubStandin['user']) => (data.user = v), enumerable: true },
    emails: { get: () => data.emails, set: (v: GithubEmail[]) => (data.emails = v), enumerable: true },
  }) as GithubStandin;
}
