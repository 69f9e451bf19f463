/**
 * The `_ops` tenant (spec 1.5): a stateless infrastructure gateway. It has no actor, no session
 * and no configuration; it answers JSON only. Health, readiness and metrics are served by the
 * front door for every host before tenant resolution, so `_ops` serves them too; this module adds
 * the social-login callback relay and answers 404 JSON for everything else.
 *
 * Relay (`features.social_login.relay`): tenants whose social provider cannot call back to their
 * own subdomain register `{_ops issuer}/social/<name>/callback` with the provider (one URL for every
 * tenant) and send as `state` a value made by RelayState.sign(tenant, their own sealed state). The
 * provider calls `_ops`, which checks the signature and expiry and redirects to
 * `{tenant issuer}/social/<name>/callback` with the query unchanged (302), or, for a form_post
 * answer (Apple), with the posted parameters as the query (303). The tenant's flow checks the
 * envelope names it (RelayState.read) and then its own sealed, single-use state (src/social/state.ts).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { badRequest, notFound } from '../http/problem.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import type { TenantRegistry } from './registry.js';
import { type TenantResolver, isValidTenantName } from './resolver.js';

/** The relayed callback, under the OIDC path: `/social/<provider>/callback`. */
const RELAY_ROUTE = /^\/social\/([a-z][a-z0-9-]{0,31})\/callback$/;
/** Callback parameters carried from a form post into the query (nothing else is relayed). */
const FORM_POST_PARAMS = ['code', 'state', 'error', 'error_description', 'iss', 'user'];
/** A relayed state is accepted this long after it was made (a sign-in at a provider takes minutes). */
export const RELAY_STATE_TTL_S = 900;

export interface RelayedState {
  tenant: string;
  /** The tenant flow's own state value. */
  state: string;
}

/** Signed, expiring envelope `<base64url JSON>.<HMAC>` naming the tenant that started the flow. */
export class RelayState {
  constructor(private readonly key: Buffer) {}

  sign(tenant: string, state: string, nowMs = Date.now()): string {
    const body = Buffer.from(JSON.stringify({ t: tenant, s: state, e: Math.floor(nowMs / 1000) + RELAY_STATE_TTL_S })).toString('base64url');
    return `${body}.${this.mac(body)}`;
  }

  /** The tenant and inner state, or undefined when the value is forged, malformed or expired. */
  read(value: string, nowMs = Date.now()): RelayedState | undefined {
    const parts = value.split('.');
    if (parts.length !== 2 || !parts[0] || !parts[1]) return undefined;
    const expected = Buffer.from(this.mac(parts[0]));
    const given = Buffer.from(parts[1]);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
    try {
      const { t, s, e } = JSON.parse(Buffer.from(parts[0], 'base64url').toString()) as { t?: unknown; s?: unknown; e?: unknown };
      if (typeof t !== 'string' || typeof s !== 'string' || typeof e !== 'number' || !isValidTenantName(t)) return undefined;
      if (e * 1000 <= nowMs) return undefined;
      return { tenant: t, state: s };
    } catch {
      return undefined;
    }
  }

  private mac(body: string): string {
    return createHmac('sha256', this.key).update(`relay|${body}`).digest('base64url');
  }
}

export interface OpsDeps {
  resolver: TenantResolver;
  registry: TenantRegistry;
  relay: RelayState;
  /** The OIDC mount path (config oidc.path): the relay's callback lives under it, as on tenants. */
  oidcPath: string;
}

export class OpsGateway {
  constructor(private readonly deps: OpsDeps) {}

  async handle(req: HttpRequest): Promise<HttpResponse> {
    const sub = req.path.startsWith(`${this.deps.oidcPath}/`) ? req.path.slice(this.deps.oidcPath.length) : undefined;
    const route = sub === undefined ? null : RELAY_ROUTE.exec(sub);
    if (route && (req.method === 'GET' || req.method === 'HEAD' || req.method === 'POST')) return this.relay(req, route[1]!);
    throw notFound(`No route for ${req.method} ${req.path} on _ops`);
  }

  private async relay(req: HttpRequest, provider: string): Promise<HttpResponse> {
    let query = req.rawQuery;
    if (req.method === 'POST') {
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (type !== 'application/x-www-form-urlencoded') throw badRequest('A form post callback must be application/x-www-form-urlencoded');
      const form = new URLSearchParams(req.body.toString('utf8'));
      const kept = new URLSearchParams();
      for (const key of FORM_POST_PARAMS) {
        const value = form.get(key);
        if (value !== null) kept.set(key, value);
      }
      query = kept.toString();
    }
    const raw = new URLSearchParams(query).get('state');
    const state = raw ? this.deps.relay.read(raw) : undefined;
    if (!state) throw badRequest('The state parameter is missing, invalid or expired');
    // Unknown (404) and suspended (403) tenants are refused like any request to them.
    await this.deps.registry.require(state.tenant);
    const target = `${this.deps.resolver.issuerOf(state.tenant)}/social/${provider}/callback${query ? `?${query}` : ''}`;
    return {
      // 303 turns a form post into a GET (the tenant's callback takes the query).
      status: req.method === 'POST' ? 303 : 302,
      headers: {
        location: target,
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'no-store',
        // The query carries an authorization code: never leak it onward in a Referer.
        'referrer-policy': 'no-referrer',
      },
      // HEAD too: the front door writes its length, not its content.
      body: JSON.stringify({ redirect_to: target }),
    };
  }
}
