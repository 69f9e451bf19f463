/**
 * A user's tokens from the authorization code flow + PKCE without a browser, for tests whose
 * subject is not the sign-in pages: openid-client builds the authorization request and redeems the
 * code (with DPoP when asked); the sign-in form is filled over plain HTTP with a cookie jar, the
 * redirects followed by hand. One HttpSession signs in once; later flows reuse its session cookie.
 * `loopbackFetch` reaches tenant subdomains (<tenant>.localhost, which the resolver does not know)
 * on 127.0.0.1 with the Host header of the URL.
 */
import { request as httpRequest } from 'node:http';
import * as oidc from 'openid-client';
import { expect } from 'vitest';

export type Fetch = (url: string, init?: { method?: string; headers?: HeadersInit; body?: BodyInit | null; redirect?: RequestRedirect; signal?: AbortSignal | null }) => Promise<Response>;

/** fetch to 127.0.0.1:`port` whatever the URL's host, which goes into the Host header. */
export function loopbackFetch(port: number): Fetch {
  return (url, init = {}) => {
    const target = new URL(url);
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((v, k) => (headers[k] = v));
    headers.host = target.host;
    const body = init.body === undefined || init.body === null ? undefined : String(init.body);
    if (body !== undefined) {
      headers['content-length'] = String(Buffer.byteLength(body));
      headers['content-type'] ??= 'application/x-www-form-urlencoded';
    }
    return new Promise((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, method: init.method ?? 'GET', path: target.pathname + target.search, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const out = new Headers();
          for (const [k, v] of Object.entries(res.headers)) for (const one of Array.isArray(v) ? v : [v ?? '']) out.append(k, one);
          const status = res.statusCode ?? 500;
          resolve(new Response([204, 304].includes(status) ? null : Buffer.concat(chunks), { status, headers: out }));
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  };
}

export interface CodeFlowClient {
  client_id: string;
  client_secret?: string;
  redirect_uri: string;
}

export interface CodeFlowOptions {
  scope: string;
  /** RFC 8707 resource indicator. */
  resource?: string;
  /** A DPoP key pair: the code is redeemed with DPoP proofs (the access token is bound). */
  dpop?: CryptoKeyPair;
  /** An OIDC nonce, sent and then expected in the ID token. */
  nonce?: string;
  /** The ID token algorithm the relying party expects (its registered metadata; RS256 when unset). */
  idTokenAlg?: string;
  /** More authorization request parameters (prompt, max_age, ...). */
  extra?: Record<string, string>;
}

/** A browser without a browser: cookies and hand-followed redirects. */
export class HttpSession {
  private readonly cookies = new Map<string, string>();

  /** Sign-in forms and consent pages submitted so far. */
  signIns = 0;
  consents = 0;
  /** The HTML of each consent page answered (newest last). */
  readonly consentPages: string[] = [];
  /** Whether authorize() answers a consent page with Allow (third-party clients). */
  consent = false;

  constructor(
    readonly issuer: string,
    readonly user: { email: string; password: string },
    readonly fetchImpl: Fetch = fetch,
  ) {}

  private async step(url: string, method = 'GET', body?: string): Promise<{ status: number; location?: string; html: string }> {
    const headers: Record<string, string> = { accept: 'text/html', cookie: this.cookieHeader() };
    if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await this.fetchImpl(url, { method, headers, body, redirect: 'manual' });
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';', 1)[0]!;
      const i = pair.indexOf('=');
      if (i > 0) this.cookies.set(pair.slice(0, i).trim(), pair.slice(i + 1).trim());
    }
    const location = res.headers.get('location');
    return { status: res.status, html: await res.text(), ...(location ? { location: new URL(location, url).href } : {}) };
  }

  /** GET (or POST `body`) and follow redirects to a page: its final URL, status and HTML. */
  async visit(url: string, body?: URLSearchParams): Promise<{ url: string; status: number; html: string }> {
    let current = url;
    let step = await this.step(url, body ? 'POST' : 'GET', body?.toString());
    for (let hops = 0; step.location && hops < 12; hops++) {
      current = step.location;
      step = await this.step(current);
    }
    return { url: current, status: step.status, html: step.html };
  }

  /** The Cookie header this browser sends (its jar). */
  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  /** Follows redirects (and fills the sign-in form when it comes) until the redirect URI. */
  async authorize(url: string, redirectUri: string): Promise<URL> {
    let step = await this.step(url);
    let current = url;
    for (let hops = 0; hops < 12; hops++) {
      if (step.location?.startsWith(redirectUri)) return new URL(step.location);
      if (step.location) {
        current = step.location;
        step = await this.step(current);
        continue;
      }
      const forms = [...step.html.matchAll(/<form\b[^>]*\baction="([^"]*)"[^>]*>([\s\S]*?)<\/form>/gi)];
      // The sign-in form, or (when `consent` allows it) the consent page's Allow form.
      const form = forms.find((f) => /name="password"/.test(f[2]!)) ?? (this.consent ? forms.find((f) => /\/confirm$/.test(f[1]!)) : undefined);
      if (!form) throw new Error(`no sign-in form at ${current} (HTTP ${step.status}): ${step.html.slice(0, 300)}`);
      const fields = new URLSearchParams();
      for (const m of form[2]!.matchAll(/<input\b[^>]*type="hidden"[^>]*>/gi)) {
        const name = /\bname="([^"]*)"/.exec(m[0])?.[1];
        if (name) fields.set(name, (/\bvalue="([^"]*)"/.exec(m[0])?.[1] ?? '').replace(/&amp;/g, '&'));
      }
      if (/name="password"/.test(form[2]!)) {
        fields.set('email', this.user.email);
        fields.set('password', this.user.password);
        this.signIns++;
      } else {
        this.consents++;
        this.consentPages.push(step.html);
      }
      current = new URL(form[1]!.replace(/&amp;/g, '&'), current).href;
      step = await this.step(current, 'POST', fields.toString());
    }
    throw new Error(`too many redirects from ${url}`);
  }

  /** The code flow for `client`: tokens from openid-client's code redemption. */
  async tokens(client: CodeFlowClient, opts: CodeFlowOptions): Promise<oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers> {
    const config = new oidc.Configuration(
      { issuer: this.issuer, authorization_endpoint: `${this.issuer}/auth`, token_endpoint: `${this.issuer}/token`, userinfo_endpoint: `${this.issuer}/userinfo` },
      client.client_id,
      { ...(client.client_secret ? { client_secret: client.client_secret } : {}), ...(opts.idTokenAlg ? { id_token_signed_response_alg: opts.idTokenAlg } : {}) },
      client.client_secret ? undefined : oidc.None(),
    );
    oidc.allowInsecureRequests(config);
    if (this.fetchImpl !== fetch) config[oidc.customFetch] = this.fetchImpl as unknown as oidc.CustomFetch;
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const params: Record<string, string> = {
      redirect_uri: client.redirect_uri,
      scope: opts.scope,
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      ...(opts.resource ? { resource: opts.resource } : {}),
      ...(opts.nonce ? { nonce: opts.nonce } : {}),
      ...opts.extra,
    };
    const callback = await this.authorize(oidc.buildAuthorizationUrl(config, params).href, client.redirect_uri);
    const DPoP = opts.dpop ? oidc.getDPoPHandle(config, opts.dpop) : undefined;
    return oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, ...(opts.nonce ? { expectedNonce: opts.nonce } : {}) }, undefined, DPoP ? { DPoP } : undefined);
  }
}

/**
 * A first-party relying party for the code flow (authorization_code + refresh_token, the usual user
 * scopes), created through the Management API with `token` (svc:clients:write); `extra` overrides.
 */
export async function codeFlowClient(
  t: { url: string },
  token: string,
  redirectUri: string,
  extra: Record<string, unknown> = {},
): Promise<CodeFlowClient> {
  const res = await fetch(`${t.url}/api/v1/clients`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: `rp ${Math.random().toString(16).slice(2, 8)}`,
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid profile email roles offline_access',
      first_party: true,
      ...extra,
    }),
  });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`client: ${res.status} ${text}`);
  const data = (JSON.parse(text) as { data: { client_id: string; client_secret?: string } }).data;
  return { client_id: data.client_id, client_secret: data.client_secret, redirect_uri: redirectUri };
}

/** openid-client's configuration of a confidential `client` at `issuer`'s token endpoint (refresh, for one). */
export function tokenEndpointConfig(issuer: string, client: CodeFlowClient): oidc.Configuration {
  const config = new oidc.Configuration({ issuer, token_endpoint: `${issuer}/token` }, client.client_id, { client_secret: client.client_secret! });
  oidc.allowInsecureRequests(config);
  return config;
}

/**
 * The token endpoint's 503 `temporarily_unavailable` with Retry-After, as openid-client reports it:
 * it takes only 400 and 401 for OAuth error answers (RFC 6749 5.2), so a 503 comes as
 * OAUTH_RESPONSE_IS_NOT_CONFORM with the response as its cause, whose body is read here.
 */
export async function expectTemporarilyUnavailable(err: unknown): Promise<void> {
  expect(err).toMatchObject({ code: 'OAUTH_RESPONSE_IS_NOT_CONFORM' });
  const res = (err as { cause: Response }).cause;
  expect(res.status).toBe(503);
  expect(res.headers.get('retry-after')).toBe('1');
  expect(JSON.parse(await res.clone().text())).toMatchObject({ error: 'temporarily_unavailable' });
}

