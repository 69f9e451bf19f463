/**
 * The `_ops` tenant (spec 1.5): a stateless infrastructure gateway. It has no actor, no session
 * and no configuration; it answers JSON only. Health, readiness and metrics are served by the
 * front door for every host before tenant resolution, so `_ops` serves them too; this module adds
 * the social-login callback relay and answers 404 JSON for everything else.
 *
 * Relay: a tenant whose social provider cannot call back to the tenant's own subdomain registers
 * `{BASE_URL host prefixed by _ops.}/oauth/callback` with the provider and sends as `state` a value
 * made by RelayState.sign(tenant, its own state). The provider calls `_ops`, which checks the
 * signature and expiry and redirects (302) to `{tenant issuer}/social/callback` with the query
 * unchanged, where the tenant's flow unwraps the state again (RelayState.read).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { badRequest, notFound } from '../http/problem.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import type { TenantRegistry } from './registry.js';
import { type TenantResolver, isValidTenantName } from './resolver.js';

export const RELAY_PATH = '/oauth/callback';
/** Where a tenant receives relayed social-login callbacks, under its issuer. */
export const SOCIAL_CALLBACK_PATH = '/social/callback';
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
}

export class OpsGateway {
  constructor(private readonly deps: OpsDeps) {}

  async handle(req: HttpRequest): Promise<HttpResponse> {
    if (req.path === RELAY_PATH && (req.method === 'GET' || req.method === 'HEAD')) return this.relay(req);
    throw notFound(`No route for ${req.method} ${req.path} on _ops`);
  }

  private async relay(req: HttpRequest): Promise<HttpResponse> {
    const raw = new URLSearchParams(req.rawQuery).get('state');
    const state = raw ? this.deps.relay.read(raw) : undefined;
    if (!state) throw badRequest('The state parameter is missing, invalid or expired');
    // Unknown (404) and suspended (403) tenants are refused like any request to them.
    await this.deps.registry.require(state.tenant);
    const target = `${this.deps.resolver.issuerOf(state.tenant)}${SOCIAL_CALLBACK_PATH}${req.rawQuery ? `?${req.rawQuery}` : ''}`;
    return {
      status: 302,
      headers: {
        location: target,
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'no-store',
        // The query carries an authorization code: never leak it onward in a Referer.
        'referrer-policy': 'no-referrer',
      },
      body: req.method === 'HEAD' ? '' : JSON.stringify({ redirect_to: target }),
    };
  }
}
