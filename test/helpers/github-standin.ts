/**
 * A local stand-in for GitHub's OAuth app endpoints, shaped exactly like GitHub's documented API
 * (docs.github.com: "Authorizing OAuth apps", REST "Get the authenticated user", "List email
 * addresses for the authenticated user"): GET /login/oauth/authorize, POST
 * /login/oauth/access_token (JSON with `Accept: application/json`; errors as 200 + `error`, as
 * GitHub does), GET /user and GET /user/emails with a Bearer token. The authorize page shows a
 * "Continue" link back to the callback instead of GitHub's consent screen.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GithubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
  visibility: 'public' | 'private' | null;
}

export interface GithubStandin {
  /** http://127.0.0.1:<port> */
  origin: string;
  user: { login: string; id: number; name: string | null; email: string | null };
  emails: GithubEmail[];
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

function body(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

export async function startGithubStandin(clientId = 'Iv1.standin', clientSecret = 'gh-secret-0123456789abcdef'): Promise<GithubStandin> {
  const codes = new Map<string, { challenge: string; redirectUri: string }>();
  const tokens = new Set<string>();
  let origin = '';
  const state: GithubStandin = {
    origin: '',
    user: { login: 'octocat', id: 583231, name: 'The Octocat', email: null },
    emails: [{ email: 'octocat@github.example', primary: true, verified: true, visibility: 'private' }],
    clientId,
    clientSecret,
    close: async () => undefined,
  };
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', origin);
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(value));
    };
    if (url.pathname === '/login/oauth/authorize') {
      const p = url.searchParams;
      if (p.get('client_id') !== clientId) return json(404, { message: 'Not Found' });
      const redirectUri = p.get('redirect_uri') ?? '';
      const code = randomBytes(10).toString('hex');
      codes.set(code, { challenge: p.get('code_challenge') ?? '', redirectUri });
      const back = new URL(redirectUri);
      back.searchParams.set('code', code);
      back.searchParams.set('state', p.get('state') ?? '');
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!DOCTYPE html><title>Authorize</title><a id="continue" href="${back.href.replace(/&/g, '&amp;')}">Continue</a>`);
      return;
    }
    if (url.pathname === '/login/oauth/access_token' && req.method === 'POST') {
      const form = new URLSearchParams(await body(req));
      if (form.get('client_id') !== clientId || form.get('client_secret') !== clientSecret) return json(200, { error: 'incorrect_client_credentials', error_description: 'The client_id and/or client_secret passed are incorrect.' });
      const grant = codes.get(form.get('code') ?? '');
      codes.delete(form.get('code') ?? '');
      if (!grant || grant.redirectUri !== form.get('redirect_uri')) return json(200, { error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.' });
      if (grant.challenge && createHash('sha256').update(form.get('code_verifier') ?? '').digest('base64url') !== grant.challenge) return json(200, { error: 'bad_verification_code', error_description: 'PKCE verification failed' });
      const token = `gho_${randomBytes(18).toString('hex')}`;
      tokens.add(token);
      return json(200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
    }
    const bearer = (req.headers.authorization ?? '').replace(/^Bearer /i, '');
    if ((url.pathname === '/user' || url.pathname === '/user/emails') && req.method === 'GET') {
      if (!tokens.has(bearer)) return json(401, { message: 'Requires authentication', documentation_url: 'https://docs.github.com/rest' });
      if (url.pathname === '/user') return json(200, { ...state.user, type: 'User', avatar_url: 'https://avatars.example/u/1' });
      return json(200, state.emails);
    }
    json(404, { message: 'Not Found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.origin = origin;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
