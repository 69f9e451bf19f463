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
import { form } from './http.js';
import type { LoginForm } from './flows.js';
import type { FedRequest, RequestFeed } from './scenarios.js';

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
