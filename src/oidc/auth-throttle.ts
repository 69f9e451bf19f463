/**
 * Throttles guessing at the OIDC endpoints (issue 12 item 11), with limits a real client or user
 * never reaches:
 * - client authentication (token, introspection, revocation, device authorization, PAR): failed
 *   authentications (401 invalid_client) are counted per client and source address (20 a minute)
 *   and per client overall (600 a minute); past either, the client's requests get 429 with
 *   Retry-After before anything is checked, so a secret cannot be tried 2,000 times a second. The
 *   per-client bound is kept high so that an attacker cannot easily lock a real client out.
 * - device user codes (RFC 8628 section 5.1): wrong codes typed at the verification page are
 *   counted per source address (10 per 10 minutes); past that the page answers 429.
 * Counts are the app's (Redis when configured: every instance; attempt-counter.ts). Each failure
 * counted is audited within the same limits (client-auth-audit.ts).
 */
import type { AppContext } from '../context.js';
import { OAuthError, oauthResponse } from '../http/problem.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { bodyForm } from '../http/urlencoded.js';
import { pageHeaders } from '../ui/html.js';
import { buildPageUi, type UiSettings } from '../ui/page-ui.js';
import { messagePage } from '../ui/pages.js';
import { attemptCounter, type AttemptCounter } from './attempt-counter.js';
import { isUnavailable } from '../errors.js';
import { ClearPairs } from './clear-pairs.js';
import { clientAuthFailedChannel, type ClientAuthFailedEvent } from '../events/bus.js';
import { auditClientAuthFailure, type ThrottleLimits } from './client-auth-audit.js';
import { CLIENT_NOT_FOUND, failureReason, takeClientAuthFailure } from './client-auth-failures.js';

export const CLIENT_FAILURES_PER_SOURCE = 20;
export const CLIENT_FAILURES_PER_CLIENT = 600;
const CLIENT_WINDOW_SECONDS = 60;
export const USER_CODE_FAILURES_PER_SOURCE = 10;
const USER_CODE_WINDOW_SECONDS = 600;

/**
 * With the counters in Redis, the client and address pairs found under both limits skip the
 * counters' round trip until a failure of that client is heard of (clear-pairs.ts). They are the
 * app's, by tenant, client and address, not a tenant actor's, so they outlive an actor's eviction
 * from the pool (a fleet of tenants evicts actors all the time).
 */
const clearPairs = new WeakMap<AppContext, ClearPairs>();
export function clearPairsOf(ctx: AppContext): ClearPairs {
  let pairs = clearPairs.get(ctx);
  if (!pairs) clearPairs.set(ctx, (pairs = new ClearPairs()));
  return pairs;
}

/** The throttled paths, by oidc-provider's names of their endpoints (as audit entries name them). */
const CLIENT_AUTH_PATHS = new Map([
  ['/token', 'token'],
  ['/token/introspection', 'introspection'],
  ['/token/revocation', 'revocation'],
  ['/device/auth', 'device_authorization'],
  ['/request', 'pushed_authorization_request'],
]);
const LIMITS: ThrottleLimits = { perSource: CLIENT_FAILURES_PER_SOURCE, perClient: CLIENT_FAILURES_PER_CLIENT, windowSeconds: CLIENT_WINDOW_SECONDS };
const DEVICE_PAGE = '/device';

function formOf(req: HttpRequest): URLSearchParams | undefined {
  if (!(req.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded')) return undefined;
  try {
    return bodyForm(req.body);
  } catch {
    return undefined; // the endpoint itself refuses it
  }
}

/** The client a request authenticates as: Basic user, else the form's client_id (bounded). */
export function claimedClientId(req: HttpRequest, form: URLSearchParams | undefined): string | undefined {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(req.headers.authorization ?? '');
  if (m) {
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) {
      try {
        return decodeURIComponent(decoded.slice(0, colon)).slice(0, 256);
      } catch {
        return decoded.slice(0, colon).slice(0, 256);
      }
    }
  }
  const id = form?.get('client_id');
  if (id) return id.slice(0, 256);
  // A client assertion needs no client_id (RFC 7523 3): the client it names (`sub`, which must
  // equal `iss`) is counted, unverified here: only the count depends on it.
  const assertion = form?.get('client_assertion');
  return assertion ? assertedClientId(assertion) : undefined;
}

function assertedClientId(jwt: string): string | undefined {
  const payload = jwt.split('.')[1];
  if (!payload || payload.length > 8192) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown };
    return typeof claims.sub === 'string' && claims.sub ? claims.sub.slice(0, 256) : undefined;
  } catch {
    return undefined;
  }
}

function tooManyClientFailures(): HttpResponse {
  return {
    status: 429,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'retry-after': String(CLIENT_WINDOW_SECONDS) },
    body: JSON.stringify({ error: 'invalid_client', error_description: `too many failed client authentications; retry after ${CLIENT_WINDOW_SECONDS} seconds` }),
  };
}

/** The device page's refusal, in the page's language and the tenant's brand like its other pages. */
function tooManyUserCodes(req: HttpRequest, ui: UiSettings | undefined): HttpResponse {
  const headers = { ...pageHeaders(), 'retry-after': String(USER_CODE_WINDOW_SECONDS) };
  // Without page settings (a throttle built for the token endpoints alone): the plain English page.
  if (!ui) return { status: 429, headers, body: PLAIN_TOO_MANY_CODES };
  const page = buildPageUi(ui, { path: req.path, headers: req.headers }).ui;
  return { status: 429, headers, body: messagePage({ ui: page, title: page.t('device.too_many.title'), message: page.t('device.too_many.message'), error: true }) };
}

const PLAIN_TOO_MANY_CODES =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Too many attempts</title></head><body><main><h1>Too many attempts</h1><p>Too many wrong codes were entered from your network. Wait a few minutes and try again.</p></main></body></html>';

export class AuthThrottle {
  /** The app's counter behind its fail-open guard, made once (the app keeps one counter for good). */
  private guarded: Pick<AttemptCounter, 'peek' | 'peekMany' | 'hit'> | undefined;
  /** Client and address pairs found under both limits in Redis (clear-pairs.ts). */
  private readonly clear: ClearPairs;

  constructor(
    private readonly ctx: AppContext,
    private readonly tenant: string,
    /** The tenant's page settings (language, brand) for the device page's refusal. */
    private readonly ui?: () => UiSettings,
    /** Whether a client id names a client of the tenant, answered without a storage read (the actor's cache). */
    private readonly clientKnown?: (clientId: string) => boolean,
  ) {
    this.clear = clearPairsOf(ctx);
  }

  /**
   * Runs `next` unless the caller is over a limit; counts the failures it answers. Only POSTs are
   * throttled: any other request is `next()` itself, without a promise of its own (issue 17).
   */
  around(req: HttpRequest, sub: string, next: () => Promise<HttpResponse>): Promise<HttpResponse> {
    return req.method !== 'POST' ? next() : this.aroundPost(req, sub, next);
  }

  private async aroundPost(req: HttpRequest, sub: string, next: () => Promise<HttpResponse>): Promise<HttpResponse> {
    const store = attemptCounter(this.ctx);
    const counter = (this.guarded ??= failOpen(store, (err) => this.ctx.log.warn({ err, tenant: this.tenant }, 'authentication throttle skipped: its counters are unavailable')));
    const endpoint = CLIENT_AUTH_PATHS.get(sub);
    if (endpoint !== undefined) {
      const form = formOf(req);
      const clientId = claimedClientId(req, form);
      if (clientId === undefined) return next();
      const perSource = `${clientId}\u0000${req.ip}`;
      // The in-process counter answers at once (every token request passes here: issue 17);
      // Redis gets both counts in one round trip, unless the pair is known under them (clear-pairs.ts).
      if (store.peekNow) {
        const mine = store.peekNow(this.tenant, 'client-auth-ip', perSource, CLIENT_WINDOW_SECONDS);
        const all = store.peekNow(this.tenant, 'client-auth', clientId, CLIENT_WINDOW_SECONDS);
        if (overLimits(mine, all)) return tooManyClientFailures();
      } else if (!this.clear.isClear(this.tenant, clientId, req.ip)) {
        const ticket = this.clear.ticket();
        const [mine = 0, all = 0] = await counter.peekMany(this.tenant, [
          { kind: 'client-auth-ip', subject: perSource, windowSeconds: CLIENT_WINDOW_SECONDS },
          { kind: 'client-auth', subject: clientId, windowSeconds: CLIENT_WINDOW_SECONDS },
        ]);
        if (overLimits(mine, all)) return tooManyClientFailures();
        this.clear.mark(this.tenant, clientId, req.ip, ticket);
      }
      // The actor's direct paths (client_credentials for an audience) refuse a client by throwing
      // its 401; oidc-provider answers one: both are counted.
      let res: HttpResponse;
      try {
        res = await next();
      } catch (err) {
        if (!(err instanceof OAuthError) || err.status !== 401) throw err;
        res = oauthResponse(err);
      }
      if (res.status === 401) {
        // This instance counts the client's pairs again at once; the others once the failure is in
        // the shared counts, so that the count they then read holds it.
        const shared = !store.peekNow;
        if (shared) this.clear.clientFailed(this.tenant, clientId);
        const [mine, all] = await Promise.all([
          counter.hit(this.tenant, 'client-auth-ip', perSource, CLIENT_WINDOW_SECONDS),
          counter.hit(this.tenant, 'client-auth', clientId, CLIENT_WINDOW_SECONDS),
        ]);
        if (shared) this.announceFailure(clientId);
        this.audit(req, endpoint, form, clientId, mine, all);
      }
      return res;
    }
    if (sub === DEVICE_PAGE) {
      const form = formOf(req);
      if (!form?.has('user_code')) return next();
      if ((await counter.peek(this.tenant, 'user-code', req.ip, USER_CODE_WINDOW_SECONDS)) >= USER_CODE_FAILURES_PER_SOURCE) return tooManyUserCodes(req, this.ui?.());
      const res = await next();
      // The input page again with 400 is a wrong (or expired) code (sign-in-config.ts).
      if (res.status === 400) await counter.hit(this.tenant, 'user-code', req.ip, USER_CODE_WINDOW_SECONDS);
      return res;
    }
    return next();
  }

  /** The failure's audit entry (client-auth-audit.ts), with why it failed (client-auth-failures.ts). */
  private audit(req: HttpRequest, endpoint: string, form: URLSearchParams | undefined, clientId: string, perSource: number, perClient: number): void {
    const failure = takeClientAuthFailure(req) ?? { detail: '' };
    let reason = failureReason(failure, form?.has('client_assertion') ?? false);
    // oidc-provider says "client not found" of a deactivated client too: the actor's cache knows it.
    const exists = failure.exists ?? (this.clientKnown?.(clientId) ?? false);
    if (reason === 'unknown_client' && exists) reason = 'client_inactive';
    const detail = failure.detail || (reason === 'unknown_client' ? CLIENT_NOT_FOUND : 'client authentication failed');
    auditClientAuthFailure(this.ctx, { tenant: this.tenant, clientId, ip: req.ip, userAgent: req.headers['user-agent'], endpoint, reason, detail, exists, perSource, perClient }, LIMITS);
  }

  /**
   * Tells the other instances of a failure counted here: their pairs of this client are counted
   * again on their next request. Not awaited: the answer does not wait for the announcement, and a
   * bus that was down meanwhile has made every instance forget its pairs anyway.
   */
  private announceFailure(clientId: string): void {
    const event: ClientAuthFailedEvent = { tenant: this.tenant, client_id: clientId };
    this.ctx.events.publish(clientAuthFailedChannel(this.tenant, this.ctx.config.redis.key_prefix), event).catch((err: unknown) => {
      this.ctx.log.warn({ err, tenant: this.tenant }, 'a failed client authentication could not be announced to the other instances');
    });
  }
}

const overLimits = (mine: number, all: number) => mine >= CLIENT_FAILURES_PER_SOURCE || all >= CLIENT_FAILURES_PER_CLIENT;

/**
 * The counters as the throttle uses them, failing open: while Redis is down a client with a valid
 * secret still gets its token (client_credentials needs no Redis), and guesses are not counted
 * for that while. The secrets are 256-bit random values and user codes expire in minutes, so the
 * throttle is a second line of defence; refusing every client during an outage would turn a Redis
 * failure into a full token outage.
 */
function failOpen(counter: ReturnType<typeof attemptCounter>, onSkip: (err: unknown) => void): Pick<ReturnType<typeof attemptCounter>, 'peek' | 'peekMany' | 'hit'> {
  const guard = async <T>(run: () => Promise<T>, open: T): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      if (!isUnavailable(err)) throw err;
      onSkip(err);
      return open;
    }
  };
  return {
    peek: (...args: Parameters<typeof counter.peek>) => guard(() => counter.peek(...args), 0),
    peekMany: (...args: Parameters<typeof counter.peekMany>) => guard(() => counter.peekMany(...args), []),
    hit: (...args: Parameters<typeof counter.hit>) => guard(() => counter.hit(...args), 0),
  };
}
