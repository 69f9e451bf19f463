/**
 * Request feeds (scenarios.ts RequestFeed) for the scenarios whose request changes every time.
 *
 * Refresh tokens rotate: each answer carries the next token and the one sent is spent. The feed
 * keeps a pool: a connection takes a token for its next request and the answer puts the new one
 * back, so `connections` tokens circulate. A token taken for a request that autocannon never sends
 * (the request built after the last answer of a window) or never answers is lost, so the pool is
 * topped up before every window with fresh tokens of the same signed-in session (no sign-in, no
 * Argon2). A token is never sent twice: a replay would make the server revoke the whole grant.
 *
 * Password logins: the sign-in forms of several browser sessions (each its own interaction and
 * cookie), posted round-robin.
 */
import { basicAuth, form } from './http.js';
import { authUrl, pkce, type RelyingParty } from './flows.js';
import type { LoginForm } from './flows.js';
import { OIDC_PATH } from './constants.js';
import type { FedRequest, RequestFeed } from './load.js';

export class RefreshTokenFeed implements RequestFeed {
  private readonly pool: string[] = [];
  private missing = 0;

  /** `mint(n)` obtains n new refresh tokens (code flows on a signed-in session). */
  constructor(private readonly mint: (count: number) => Promise<string[]>) {}

  async prepare(connections: number): Promise<void> {
    const want = connections * 2;
    if (this.pool.length < want) this.pool.push(...(await this.mint(want - this.pool.length)));
  }

  next(): FedRequest {
    const token = this.pool.shift();
    if (token === undefined) this.missing++;
    return { body: form({ grant_type: 'refresh_token', refresh_token: token ?? 'pool-exhausted' }) };
  }

  onResponse(status: number, body: string): void {
    if (status !== 200) return;
    try {
      const token = (JSON.parse(body) as { refresh_token?: unknown }).refresh_token;
      if (typeof token === 'string') this.pool.push(token);
    } catch {
      // not JSON: the request failed and is counted as such
    }
  }

  starved(): number {
    return this.missing;
  }
}

export class LoginFormFeed implements RequestFeed {
  private i = 0;

  constructor(private readonly forms: readonly LoginForm[]) {
    if (!forms.length) throw new Error('LoginFormFeed needs at least one form');
  }

  async prepare(): Promise<void> {}

  next(): FedRequest {
    const f = this.forms[this.i++ % this.forms.length]!;
    const url = new URL(f.url);
    return { path: url.pathname + url.search, headers: { cookie: f.cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: f.body };
  }

  starved(): number {
    return 0;
  }
}

/**
 * Silent re-authentication, as an SPA renews: step 0 is `GET /auth?prompt=none` with a signed-in
 * session's cookie (answered with a redirect carrying a code), step 1 exchanges that code with
 * PKCE. One iteration = two requests; the code rides in the connection's context between them.
 * Each connection renews a session of its own (as many sessions as connections: the users of an
 * SPA, each renewing in a browser of theirs), so one session is not renewed by fifty clients. A
 * redirect without a code (login_required, ...) or a step 1 without a code counts as starved (a
 * failure). Every authorization request uses the same PKCE pair and state: codes are single-use
 * whatever the verifier, and a fresh pair per request would only cost load-generator CPU.
 */
export class SilentAuthFeed implements RequestFeed {
  readonly steps = 2;
  private missing = 0;
  private readonly authPath: string;
  private readonly verifier: string;
  /** Sessions handed to connections so far (each connection keeps the one it got). */
  private assigned = 0;

  constructor(
    base: string,
    private readonly rp: RelyingParty,
    /** The signed-in browsers' cookie headers: connection n renews session n modulo their number. */
    private readonly cookies: ReadonlyArray<() => string>,
  ) {
    if (!cookies.length) throw new Error('SilentAuthFeed: no signed-in session');
    const { verifier, challenge } = pkce();
    this.verifier = verifier;
    const url = new URL(authUrl(base, rp, { scope: 'openid', params: { prompt: 'none' } }, challenge));
    this.authPath = url.pathname + url.search;
  }

  async prepare(): Promise<void> {}

  next(context: Record<string, unknown> = {}, step = 0): FedRequest {
    if (step === 0) {
      if (typeof context.session !== 'number') context.session = this.assigned++ % this.cookies.length;
      return { method: 'GET', path: this.authPath, headers: { cookie: this.cookies[context.session as number]!() } };
    }
    const code = typeof context.code === 'string' ? context.code : undefined;
    context.code = undefined;
    if (code === undefined) this.missing++;
    return {
      method: 'POST',
      path: `${OIDC_PATH}/token`,
      headers: { authorization: basicAuth(this.rp), 'content-type': 'application/x-www-form-urlencoded' },
      body: form({ grant_type: 'authorization_code', code: code ?? 'no-code', redirect_uri: this.rp.redirect_uri, code_verifier: this.verifier }),
    };
  }

  onResponse(status: number, _body: string, context: Record<string, unknown> = {}, headers: Record<string, string> = {}, step = 0): void {
    if (step !== 0) return;
    const location = headers.location ?? headers.Location;
    if (status >= 300 && status < 400 && location) {
      const code = new URL(location, 'http://x').searchParams.get('code');
      if (code) context.code = code;
    }
  }

  starved(): number {
    return this.missing;
  }
}

/** One request kind of the mixed profile. */
export interface MixedPart {
  name: string;
  weight: number;
  request(): FedRequest;
}

/**
 * The mixed profile: every request picks a kind by weight (client_credentials, introspection,
 * refresh, userinfo); refresh tokens come from and go back to a RefreshTokenFeed.
 */
export class MixedFeed implements RequestFeed {
  private readonly total: number;
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly parts: readonly MixedPart[],
    private readonly refresh: RefreshTokenFeed,
    private readonly refreshPart = 'refresh',
  ) {
    this.total = parts.reduce((n, p) => n + p.weight, 0);
  }

  prepare(connections: number): Promise<void> {
    return this.refresh.prepare(connections);
  }

  next(context: Record<string, unknown> = {}): FedRequest {
    let r = Math.random() * this.total;
    let part = this.parts[this.parts.length - 1]!;
    for (const p of this.parts) {
      if ((r -= p.weight) < 0) {
        part = p;
        break;
      }
    }
    context.kind = part.name;
    this.counts.set(part.name, (this.counts.get(part.name) ?? 0) + 1);
    return part.name === this.refreshPart ? { ...part.request(), ...this.refresh.next() } : part.request();
  }

  onResponse(status: number, body: string, context: Record<string, unknown> = {}): void {
    if (context.kind === this.refreshPart) this.refresh.onResponse(status, body);
  }

  starved(): number {
    return this.refresh.starved();
  }
}
