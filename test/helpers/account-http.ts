/**
 * The account page over plain HTTP (no browser), for tests whose subject is what the server does
 * with a form: an HttpSession signs in through the tenant's own authorization endpoint (the
 * built-in `svc-account` client) and keeps the cookies; `act` posts one action with the page's
 * CSRF token and returns the answer's status and its notice or error text. The same session can
 * then sign in to a relying party (`session.tokens`) without a second password prompt.
 */
import { HttpSession } from './code-flow.js';

export interface ActionAnswer {
  status: number;
  html: string;
  /** The page's notice (role=status) or error (role=alert) text, '' when neither. */
  text: string;
}

export class AccountHttp {
  readonly account: string;

  private constructor(
    readonly session: HttpSession,
    origin: string,
  ) {
    this.account = `${origin}/account`;
  }

  /** Signs `user` in from /account and lands on the page. */
  static async signIn(issuer: string, user: { email: string; password: string }): Promise<AccountHttp> {
    const origin = new URL(issuer).origin;
    const session = new HttpSession(issuer, user);
    const callback = await session.authorize(`${origin}/account`, `${origin}/account/callback`);
    const landed = await session.visit(callback.href);
    if (landed.status !== 200 || landed.url !== `${origin}/account`) throw new Error(`account sign-in ended at ${landed.url} (HTTP ${landed.status})`);
    return new AccountHttp(session, origin);
  }

  async page(): Promise<string> {
    return (await this.session.visit(this.account)).html;
  }

  /** Posts `action` with `fields` from the page (its CSRF token), following a 303 back. */
  async act(action: string, fields: Record<string, string> = {}): Promise<ActionAnswer> {
    const csrf = /name="csrf_token" value="([^"]*)"/.exec(await this.page())?.[1];
    if (!csrf) throw new Error('no CSRF token on the account page');
    const res = await this.session.visit(this.account, new URLSearchParams({ csrf_token: csrf, action, ...fields }));
    const text = /<p class="notice" role="status">([^<]*)<\/p>/.exec(res.html)?.[1] ?? /role="alert"[^>]*>(?:<p>)?([^<]*)/.exec(res.html)?.[1] ?? '';
    return { status: res.status, html: res.html, text: text.replace(/&#39;/g, "'").replace(/&quot;/g, '"').replace(/&amp;/g, '&') };
  }
}
