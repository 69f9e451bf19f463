/**
 * The browser part of the authorization code flow with plain HTTP requests: a cookie jar, manual
 * redirects, and the sign-in/consent forms parsed out of the HTML (form action and hidden fields
 * such as csrf_token). It works against the product's pages (e-mail + password, Argon2) and
 * against stock oidc-provider's devInteractions (any login name). Used to prepare refresh tokens
 * and login forms for the load scenarios, outside the measured windows.
 */
import { createHash, randomBytes } from 'node:crypto';
import { OIDC_PATH } from './constants.js';
import { basicAuth, form, type ClientCredentials } from './http.js';

/** Cookies by name (paths and expiry are ignored: one flow, one origin). */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  store(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';', 1)[0]!;
      const i = pair.indexOf('=');
      if (i <= 0) continue;
      const name = pair.slice(0, i).trim();
      const value = pair.slice(i + 1).trim();
      if (value === '' || /;\s*expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

export interface HtmlForm {
  action: string;
  fields: Record<string, string>;
  /** Names of the visible inputs (email, login, password, ...). */
  inputs: string[];
}

const decodeEntities = (s: string) => s.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;|&#x27;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>');

/** The first POST form of a page: its action and hidden fields. */
export function parseForm(html: string): HtmlForm | undefined {
  const open = /<form\b[^>]*>/i.exec(html);
  if (!open) return undefined;
  const action = /\baction="([^"]*)"/i.exec(open[0])?.[1];
  if (action === undefined) return undefined;
  const end = html.indexOf('</form>', open.index);
  const body = html.slice(open.index, end < 0 ? undefined : end);
  const fields: Record<string, string> = {};
  const inputs: string[] = [];
  for (const m of body.matchAll(/<input\b[^>]*>/gi)) {
    const tag = m[0];
    const name = /\bname="([^"]*)"/i.exec(tag)?.[1];
    if (!name) continue;
    if (/\btype="hidden"/i.test(tag)) fields[name] = decodeEntities(/\bvalue="([^"]*)"/i.exec(tag)?.[1] ?? '');
    else inputs.push(name);
  }
  return { action: decodeEntities(action), fields, inputs };
}

export interface RelyingParty extends ClientCredentials {
  redirect_uri: string;
}

export interface UserCredentials {
  /** The product's e-mail, or any login name on devInteractions. */
  login: string;
  password: string;
}

/** A login form as a browser holds it: URL to POST to, cookies, body fields (password included). */
export interface LoginForm {
  url: string;
  cookie: string;
  body: string;
}

interface Step {
  status: number;
  location?: string;
  html?: string;
}

export class BrowserSession {
  readonly jar = new CookieJar();

  constructor(private readonly baseUrl: string) {}

  private absolute(location: string, from: string): string {
    return new URL(location, from).toString();
  }

  async request(url: string, init: { method?: string; body?: string } = {}): Promise<Step & { url: string }> {
    const headers: Record<string, string> = { cookie: this.jar.header(), accept: 'text/html' };
    if (init.body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await fetch(url, { method: init.method ?? 'GET', headers, body: init.body, redirect: 'manual', signal: AbortSignal.timeout(15_000) });
    this.jar.store(res);
    const location = res.headers.get('location');
    const text = await res.text();
    return { url, status: res.status, ...(location ? { location: this.absolute(location, url) } : {}), html: text };
  }

  /** Follows redirects from `url` until the redirect_uri (returns its query) or a page (returns it). */
  async follow(url: string, redirectUri: string, init?: { method?: string; body?: string }): Promise<{ callback: URLSearchParams } | { page: Step & { url: string } }> {
    let step = await this.request(url, init);
    for (let hops = 0; hops < 10; hops++) {
      if (!step.location) return { page: step };
      if (step.location.startsWith(redirectUri)) return { callback: new URL(step.location).searchParams };
      step = await this.request(step.location);
    }
    throw new Error(`too many redirects from ${url}`);
  }

  get base(): string {
    return this.baseUrl;
  }
}

export interface AuthorizeOptions {
  scope: string;
  /** Extra authorization parameters (prompt, ...). */
  params?: Record<string, string>;
}

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** Fills a sign-in form: the product's e-mail field or devInteractions' login field, and password. */
function signInBody(f: HtmlForm, user: UserCredentials): string {
  const fields: Record<string, string> = { ...f.fields };
  fields[f.inputs.includes('email') ? 'email' : 'login'] = user.login;
  fields.password = user.password;
  return form(fields);
}

/**
 * Runs /auth for `rp` in this browser session up to the sign-in form and returns it (without
 * posting it): the password login scenario replays this POST.
 */
export async function openLoginForm(session: BrowserSession, rp: RelyingParty, user: UserCredentials, opts: AuthorizeOptions): Promise<LoginForm> {
  const { challenge } = pkce();
  const url = authUrl(session.base, rp, opts, challenge);
  const out = await session.follow(url, rp.redirect_uri);
  if (!('page' in out)) throw new Error('expected a sign-in page, got a redirect to the client');
  const f = parseForm(out.page.html ?? '');
  if (!f || !f.inputs.includes('password')) throw new Error(`no sign-in form at ${out.page.url} (HTTP ${out.page.status})`);
  return { url: new URL(f.action, out.page.url).toString(), cookie: session.jar.header(), body: signInBody(f, user) };
}

export function authUrl(base: string, rp: RelyingParty, opts: AuthorizeOptions, challenge: string): string {
  const q = new URLSearchParams({
    client_id: rp.client_id,
    redirect_uri: rp.redirect_uri,
    response_type: 'code',
    scope: opts.scope,
    state: randomBytes(8).toString('base64url'),
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...opts.params,
  });
  return `${base}${OIDC_PATH}/auth?${q}`;
}

/**
 * The whole code flow in this session: signs in when asked (once per session), confirms consent
 * when asked, exchanges the code. Returns the token response.
 */
export async function codeFlow(session: BrowserSession, rp: RelyingParty, user: UserCredentials, opts: AuthorizeOptions): Promise<Record<string, unknown>> {
  const { verifier, challenge } = pkce();
  let out = await session.follow(authUrl(session.base, rp, opts, challenge), rp.redirect_uri);
  for (let pages = 0; 'page' in out; pages++) {
    if (pages > 4) throw new Error('too many interaction pages');
    const page = out.page;
    const f = parseForm(page.html ?? '');
    if (!f) throw new Error(`no form at ${page.url} (HTTP ${page.status}): ${(page.html ?? '').slice(0, 200)}`);
    const body = f.inputs.includes('password') ? signInBody(f, user) : form(f.fields);
    out = await session.follow(new URL(f.action, page.url).toString(), rp.redirect_uri, { method: 'POST', body });
  }
  const code = out.callback.get('code');
  if (!code) throw new Error(`no code in the callback: ${out.callback.toString()}`);
  const res = await fetch(`${session.base}${OIDC_PATH}/token`, {
    method: 'POST',
    headers: { authorization: basicAuth(rp), 'content-type': 'application/x-www-form-urlencoded' },
    body: form({ grant_type: 'authorization_code', code, redirect_uri: rp.redirect_uri, code_verifier: verifier }),
    signal: AbortSignal.timeout(15_000),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) throw new Error(`code exchange: HTTP ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** `count` refresh tokens of one user: one sign-in, then further code flows on the same session. */
export async function refreshTokens(baseUrl: string, rp: RelyingParty, user: UserCredentials, count: number, session = new BrowserSession(baseUrl)): Promise<string[]> {
  const out: string[] = [];
  const opts = { scope: 'openid offline_access', params: { prompt: 'consent' } };
  for (let i = 0; i < count; i++) {
    const tokens = await codeFlow(session, rp, user, opts);
    if (typeof tokens.refresh_token !== 'string') throw new Error(`no refresh_token in ${JSON.stringify(Object.keys(tokens))}`);
    out.push(tokens.refresh_token);
  }
  return out;
}
