/**
 * The common part of the local OAuth 2.0 stand-ins for upstreams that cannot exist here (GitHub,
 * Facebook: test/helpers/github-standin.ts, facebook-standin.ts). It does what every such
 * authorization server does, checked as strictly as the real ones: an authorization page that
 * issues a single-use code bound to the client, redirect_uri and PKCE challenge; a token endpoint
 * that checks the client's credentials, the code, redirect_uri and code_verifier; bearer-protected
 * API paths. Each stand-in supplies the shapes its provider documents (paths, answers, errors,
 * where the access token may travel).
 *
 * The authorization page shows links instead of the provider's consent screen: `#continue` (the
 * callback with a code) and `#cancel` (the callback with the provider's "user denied" answer), so
 * a test can follow either, or take the URL and tamper with it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Answer {
  status: number;
  body: unknown;
}

/** Why a token request is refused; the stand-in turns it into its provider's error answer. */
export type TokenFailure = 'client' | 'code' | 'redirect_uri' | 'pkce';

export interface StandinShape {
  authorizePath: string;
  tokenPath: string;
  /** Methods the token endpoint accepts (parameters from the query for GET, the form for POST). */
  tokenMethods: Array<'GET' | 'POST'>;
  /** Query parameters the provider sends back when the person declines. */
  denied: Record<string, string>;
  tokenError(failure: TokenFailure): Answer;
  tokenSuccess(accessToken: string): Answer;
  /** Prefix of the access tokens issued (GitHub `gho_`, Facebook `EAA`). */
  tokenPrefix: string;
  /** Also accepts the access token as `?access_token=` (Facebook's Graph API). */
  tokenInQuery: boolean;
  /** Bearer-protected paths (GET). */
  apiPaths: readonly string[];
  /** The answer of an API path for a known access token. */
  api(path: string, url: URL, accessToken: string): Answer;
  unauthorized(path: string): Answer;
  notFound: Answer;
}

export interface OAuth2Standin {
  /** http://127.0.0.1:<port> */
  origin: string;
  clientId: string;
  clientSecret: string;
  /** Token requests that reached the token endpoint (a refused state never gets this far). */
  tokenRequests: number;
  /** Requests to the API paths, with the access token they carried. */
  apiRequests: Array<{ path: string; query: URLSearchParams }>;
  /** The next token request is answered with this failure, whatever it carries. */
  failNextToken: TokenFailure | undefined;
  /** The next API request (with a valid token) is answered with this instead. */
  failNextApi: Answer | undefined;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

function attr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

export async function startOAuth2Standin(shape: StandinShape, clientId: string, clientSecret: string): Promise<OAuth2Standin> {
  const codes = new Map<string, { challenge: string; redirectUri: string }>();
  const tokens = new Set<string>();
  let origin = '';
  const state: OAuth2Standin = { origin: '', clientId, clientSecret, tokenRequests: 0, apiRequests: [], failNextToken: undefined, failNextApi: undefined, close: async () => undefined };

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', origin);
    const send = (a: Answer) => {
      res.writeHead(a.status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(a.body));
    };
    if (url.pathname === shape.authorizePath && req.method === 'GET') {
      const p = url.searchParams;
      if (p.get('client_id') !== clientId) return send(shape.notFound);
      const redirectUri = p.get('redirect_uri') ?? '';
      const code = randomBytes(10).toString('hex');
      codes.set(code, { challenge: p.get('code_challenge') ?? '', redirectUri });
      const back = new URL(redirectUri);
      back.searchParams.set('code', code);
      back.searchParams.set('state', p.get('state') ?? '');
      const denied = new URL(redirectUri);
      for (const [k, v] of Object.entries(shape.denied)) denied.searchParams.set(k, v);
      denied.searchParams.set('state', p.get('state') ?? '');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!DOCTYPE html><html lang="en"><title>Authorize</title><a id="continue" href="${attr(back.href)}">Continue</a> <a id="cancel" href="${attr(denied.href)}">Cancel</a></html>`);
      return;
    }
    if (url.pathname === shape.tokenPath && shape.tokenMethods.includes(req.method as 'GET' | 'POST')) {
      state.tokenRequests++;
      const params = req.method === 'POST' ? new URLSearchParams(await readBody(req)) : url.searchParams;
      const code = params.get('code') ?? '';
      const grant = codes.get(code);
      codes.delete(code);
      const forced = state.failNextToken;
      state.failNextToken = undefined;
      if (forced) return send(shape.tokenError(forced));
      if (params.get('client_id') !== clientId || params.get('client_secret') !== clientSecret) return send(shape.tokenError('client'));
      if (!grant) return send(shape.tokenError('code'));
      if (grant.redirectUri !== params.get('redirect_uri')) return send(shape.tokenError('redirect_uri'));
      if (grant.challenge && createHash('sha256').update(params.get('code_verifier') ?? '').digest('base64url') !== grant.challenge) return send(shape.tokenError('pkce'));
      const token = `${shape.tokenPrefix}${randomBytes(18).toString('hex')}`;
      tokens.add(token);
      return send(shape.tokenSuccess(token));
    }
    const header = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const token = header ?? (shape.tokenInQuery ? url.searchParams.get('access_token') ?? undefined : undefined);
    if (req.method === 'GET' && shape.apiPaths.includes(url.pathname)) {
      if (token === undefined || !tokens.has(token)) return send(shape.unauthorized(url.pathname));
      state.apiRequests.push({ path: url.pathname, query: url.searchParams });
      const forced = state.failNextApi;
      state.failNextApi = undefined;
      return send(forced ?? shape.api(url.pathname, url, token));
    }
    send(shape.notFound);
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
