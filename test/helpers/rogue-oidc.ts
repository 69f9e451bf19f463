/**
 * A hand-made OpenID Connect upstream that can misbehave on purpose, for the hostile cases a stock
 * provider cannot produce: an ID token with another nonce, issuer or audience or issued in the
 * future, an error answer, a token endpoint that never answers, a callback without the `iss` its
 * discovery promises (RFC 9207). It checks what a real one checks (client secret, code, PKCE
 * S256, redirect_uri). Its authorization endpoint does not redirect by itself: it shows a link
 * "Continue" to the callback, so a test can follow it, or take the URL and tamper with it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';

export type RogueMode = 'ok' | 'wrong_nonce' | 'wrong_issuer' | 'wrong_audience' | 'future_iat' | 'error' | 'hang' | 'iss_missing';

export interface RogueOidc {
  issuer: string;
  mode: RogueMode;
  /** Claims of the next ID token (sub, email, email_verified...). */
  claims: Record<string, unknown>;
  clientId: string;
  clientSecret: string;
  /** Token requests answered (a refused state never reaches the token endpoint). */
  tokenRequests: number;
  close(): Promise<void>;
}

function body(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}

export async function startRogueOidc(clientId = 'svc-client', clientSecret = 'rogue-secret-0123456789'): Promise<RogueOidc> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'rogue-1', alg: 'ES256', use: 'sig' };
  const codes = new Map<string, { nonce: string; challenge: string; redirectUri: string }>();
  const hanging = new Set<import('node:http').ServerResponse>();
  let issuer = '';
  const state: RogueOidc = {
    issuer: '',
    mode: 'ok',
    claims: { sub: 'rogue-user-1', email: 'rogue@example.com', email_verified: true },
    clientId,
    clientSecret,
    tokenRequests: 0,
    close: async () => undefined,
  };
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', issuer);
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        id_token_signing_alg_values_supported: ['ES256'],
        token_endpoint_auth_methods_supported: ['client_secret_basic'],
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        authorization_response_iss_parameter_supported: true,
      });
    }
    if (url.pathname === '/jwks') return json(200, { keys: [jwk] });
    if (url.pathname === '/authorize') {
      const p = url.searchParams;
      const redirectUri = p.get('redirect_uri') ?? '';
      const back = new URL(redirectUri);
      if (state.mode === 'error') {
        back.searchParams.set('error', 'access_denied');
      } else {
        const code = randomBytes(16).toString('base64url');
        codes.set(code, { nonce: p.get('nonce') ?? '', challenge: p.get('code_challenge') ?? '', redirectUri });
        back.searchParams.set('code', code);
      }
      back.searchParams.set('state', p.get('state') ?? '');
      if (state.mode !== 'iss_missing') back.searchParams.set('iss', issuer);
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!DOCTYPE html><title>Rogue</title><a id="continue" href="${back.href.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}">Continue</a>`);
      return;
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      const form = new URLSearchParams(await body(req));
      if (state.mode === 'hang') {
        hanging.add(res);
        return; // never answers
      }
      state.tokenRequests++;
      const [id, secret] = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString().split(':').map(decodeURIComponent);
      if (id !== clientId || secret !== clientSecret) return json(401, { error: 'invalid_client' });
      const grant = codes.get(form.get('code') ?? '');
      codes.delete(form.get('code') ?? '');
      if (!grant || grant.redirectUri !== form.get('redirect_uri')) return json(400, { error: 'invalid_grant' });
      if (createHash('sha256').update(form.get('code_verifier') ?? '').digest('base64url') !== grant.challenge) return json(400, { error: 'invalid_grant', error_description: 'PKCE' });
      const idToken = await new SignJWT({ ...state.claims, nonce: state.mode === 'wrong_nonce' ? 'not-the-nonce' : grant.nonce })
        .setProtectedHeader({ alg: 'ES256', kid: 'rogue-1' })
        .setIssuer(state.mode === 'wrong_issuer' ? 'http://attacker.example' : issuer)
        .setAudience(state.mode === 'wrong_audience' ? 'another-client' : clientId)
        // future_iat: minted two days ahead (valid exp, no nbf): only the iat check refuses it.
        .setIssuedAt(state.mode === 'future_iat' ? Math.floor(Date.now() / 1000) + 172800 : undefined)
        .setExpirationTime(state.mode === 'future_iat' ? Math.floor(Date.now() / 1000) + 259200 : '5m')
        .sign(privateKey);
      return json(200, { access_token: randomBytes(16).toString('base64url'), token_type: 'Bearer', id_token: idToken, expires_in: 300 });
    }
    json(404, { error: 'not_found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.issuer = issuer;
  state.close = () =>
    new Promise<void>((resolve) => {
      for (const r of hanging) r.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
