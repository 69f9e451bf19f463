/**
 * TenantActor: everything one tenant needs at run time, built from storage on first use and
 * dropped on eviction without losing anything (it holds no state storage cannot rebuild).
 * Owns the tenant's merged config, key set, oidc-provider instance, precomputed discovery/JWKS
 * bytes, a client cache and the batched client usage counters.
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type Provider from 'oidc-provider';
import type { AdapterPayload } from 'oidc-provider';
import type { AppContext } from '../context.js';
import { runNodeCallback, type NodeCallback } from '../http/koa-bridge.js';
import { OAuthError, isUnavailable, oauthResponse } from '../http/problem.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { clientChangedChannel, configChangedChannel, rotationChannel, type ClientChangedEvent } from '../events/bus.js';
import { SerialTask } from '../events/serial-task.js';
import { decodeJwt } from '../keys/jwt.js';
import { KeySet, ensureKeys } from '../keys/keystore.js';
import { checkAccessToken, clientCredentialsGrant, introspect, type TokenCheck, type TokenContext } from '../oidc/access-tokens.js';
import { toProviderMetadata } from '../oidc/client-metadata.js';
import { BackchannelLogout } from '../oidc/backchannel.js';
import { assertionServices } from '../oidc/assertion-services.js';
import type { AssertionServices } from '../oidc/client-assertion.js';
import { devicePollGuard, offlineAccessNeedsConsent, withDeviceInterval } from '../oidc/device-and-auth.js';
import { handleAccountMfa } from '../oidc/account-mfa.js';
import { handleInteraction, type InteractionAction, type SignInHost } from '../oidc/interactions.js';
import { LoginGuard } from '../oidc/login-guard.js';
import { createProvider } from '../oidc/provider.js';
import { mergeConfiguration, signInConfiguration } from '../oidc/sign-in-config.js';
import { formTargetOf, pageHeaders } from '../ui/html.js';
import { STYLESHEET, STYLESHEET_ETAG } from '../ui/style.js';
import { registerRp } from '../oidc/register-rp.js';
import type { ClientRecord, OidcPayloadRow } from '../storage/types.js';
import { discoveryMetadata, mergeConfig, type EffectiveConfig } from './config/merge.js';
import { loadEffectiveConfig } from './config/store.js';

const DISCOVERY_PATH = '/.well-known/openid-configuration';

/** Who an end user's access token belongs to (TenantActor.accessTokenOwner). */
export interface AccessTokenOwner {
  accountId: string;
  clientId: string;
  scope: string;
}
const PUBLIC_CACHE = 'public, max-age=300, must-revalidate';

interface Usage {
  count: number;
  last: string;
}

export class TenantActor implements TokenContext {
  readonly issuer: string;
  readonly origin: URL;
  readonly mountPath: string;
  /** Global config with this tenant's overrides (tenancy/config): the one the current provider was built with. */
  get config(): EffectiveConfig {
    return this.current;
  }
  private current: EffectiveConfig;
  /** The latest config read from storage; the next reloadKeys builds with it and makes it current. */
  private desired: EffectiveConfig;
  /** Serialised, coalesced reloadConfig: config:changed events and this instance's own updates. */
  readonly configRefresh: SerialTask;
  private readonly unsubscribeConfig: () => void;
  keys!: KeySet;
  private provider!: Provider;
  private callback!: NodeCallback;
  private discovery!: { body: Buffer; etag: string };
  private readonly clientCache = new LRUCache<string, ClientRecord>({ max: 2000, ttl: 30_000 });
  private usage = new Map<string, Usage>();
  private readonly flushTimer: NodeJS.Timeout;
  /** Serialised, coalesced reloadKeys: rotation events and API calls never race to swap keys. */
  readonly keyRefresh: SerialTask;
  private readonly unsubscribeRotation: () => void;
  private readonly unsubscribeClients: () => void;
  private closed = false;
  private readonly guard: LoginGuard;
  private readonly backchannel: BackchannelLogout;
  private readonly devicePolls = devicePollGuard();
  private readonly stylesheetPath: string;
  /** Client assertion keys and jti replay store of the token endpoint fast paths. */
  readonly assertions: AssertionServices;

  private constructor(
    readonly tenant: string,
    private readonly ctx: AppContext,
  ) {
    this.current = this.desired = mergeConfig(ctx.config, {});
    this.issuer = ctx.resolver.issuerOf(tenant);
    this.origin = new URL(this.issuer);
    this.mountPath = ctx.config.oidc.path;
    this.flushTimer = setInterval(() => void this.flushUsage(), 1000);
    this.flushTimer.unref();
    this.keyRefresh = new SerialTask(() => this.reloadKeys());
    // Subscribed before the first load, so a rotation during creation is not missed.
    const prefix = ctx.config.redis.key_prefix;
    this.unsubscribeRotation = ctx.events.subscribe(rotationChannel(tenant, prefix), () => {
      this.keyRefresh.run().catch((err: unknown) => ctx.log.error({ err, tenant }, 'signing keys could not be reloaded after a rotation event'));
    });
    // A client changed through any instance (clients/operations.ts) is read again on next use.
    this.unsubscribeClients = ctx.events.subscribe(clientChangedChannel(tenant, prefix), (event) => {
      const id = (event as Partial<ClientChangedEvent> | null)?.client_id;
      if (typeof id === 'string') this.clientCache.delete(id);
    });
    this.configRefresh = new SerialTask(() => this.reloadConfig());
    this.unsubscribeConfig = ctx.events.subscribe(configChangedChannel(tenant, prefix), () => {
      this.configRefresh.run().catch((err: unknown) => ctx.log.error({ err, tenant }, 'configuration could not be reloaded after a config:changed event'));
    });
    this.guard = new LoginGuard(ctx);
    this.backchannel = new BackchannelLogout(ctx, tenant, this.issuer, () => this.keys);
    this.stylesheetPath = `${this.mountPath}/assets/app.css`;
    this.assertions = assertionServices(ctx, tenant);
  }

  static async create(ctx: AppContext, tenant: string): Promise<TenantActor> {
    const actor = new TenantActor(tenant, ctx);
    try {
      // Reads the overrides, then builds keys and provider with them.
      await actor.configRefresh.run();
    } catch (err) {
      clearInterval(actor.flushTimer);
      actor.unsubscribeRotation();
      actor.unsubscribeClients();
      actor.unsubscribeConfig();
      throw err;
    }
    return actor;
  }

  /**
   * Re-reads the tenant's overrides; when they changed (or nothing is built yet) rebuilds keys,
   * provider and documents with them, so token lifetimes, discovery and rate limits follow at once.
   */
  async reloadConfig(): Promise<void> {
    const next = await loadEffectiveConfig(this.ctx, this.tenant);
    const changed = JSON.stringify(next.overrides) !== JSON.stringify(this.desired.overrides);
    if (changed) this.desired = next;
    if (changed || !this.keys) await this.keyRefresh.run();
  }

  /** Rebuilds key set, provider and precomputed documents from storage (first use, rotation, config change). */
  async reloadKeys(): Promise<void> {
    const { storage, sealer } = this.ctx;
    const config = this.desired;
    const records = await ensureKeys(storage.keys, this.tenant, config.security.key_store.algorithms, sealer);
    const keys = new KeySet(records, sealer, this.tenant, config.security.key_store.algorithms);
    const provider = createProvider({
      tenant: this.tenant,
      issuer: this.issuer,
      config,
      keys,
      oidcRepo: storage.oidc,
      loadClient: (id) => this.loadProviderClient(id),
      cookieKeys: [sealer.derive(`cookies:${this.tenant}`).toString('base64url')],
      extend: (conf) => {
        mergeConfiguration(
          conf,
          signInConfiguration({ tenant: this.tenant, ctx: this.ctx, mountPath: this.mountPath, stylesheet: this.stylesheetPath, pairwiseKey: sealer.derive(`pairwise:${this.tenant}`) }),
        );
        const discovery = discoveryMetadata(config);
        if (Object.keys(discovery).length) conf.discovery = { ...conf.discovery, ...discovery };
      },
      backchannelLogout: (client, sub, sid) => this.backchannel.send(client, sub, sid),
    });
    this.observe(provider);
    const callback = provider.callback() as unknown as NodeCallback;
    const discoveryResponse = await runNodeCallback(callback, syntheticGet(this.mountPath + DISCOVERY_PATH), { mountPath: this.mountPath, origin: this.origin });
    if (discoveryResponse.status !== 200) throw new Error(`discovery document could not be built (${discoveryResponse.status})`);
    const body = Buffer.isBuffer(discoveryResponse.body) ? discoveryResponse.body : Buffer.from(discoveryResponse.body ?? '');
    // Swap everything at once so a request never sees keys and provider from different generations.
    this.keys = keys;
    this.current = config;
    this.provider = provider;
    this.callback = callback;
    this.discovery = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
  }

  /** Audit and metrics from oidc-provider's events. */
  private observe(provider: Provider): void {
    const { log, audit } = this.ctx;
    provider.on('server_error', (_ctx: unknown, err: Error) => log.error({ err, tenant: this.tenant }, 'oidc-provider server_error'));
    provider.on('grant.success', (kctx: { oidc: { client?: { clientId: string }; params?: { grant_type?: unknown } } }) => {
      const clientId = kctx.oidc.client?.clientId;
      if (clientId) this.tokenIssued(clientId, String(kctx.oidc.params?.grant_type ?? 'unknown'));
    });
    provider.on('end_session.success', (kctx: { ip?: string; get?: (h: string) => string; oidc: { session?: { accountId?: string }; client?: { clientId: string } } }) => {
      const accountId = kctx.oidc.session?.accountId;
      void audit.record(this.tenant, {
        type: 'logout',
        user_id: accountId ?? null,
        client_id: kctx.oidc.client?.clientId ?? null,
        ip_address: kctx.ip ?? null,
        user_agent: kctx.get?.('user-agent') ?? null,
        details: { user_id: accountId ?? null, method: 'rp_initiated' },
      });
    });
  }

  private signInHost(): SignInHost {
    return {
      tenant: this.tenant,
      ctx: this.ctx,
      target: { mountPath: this.mountPath, origin: this.origin },
      provider: this.provider,
      guard: this.guard,
      csrfKey: this.ctx.sealer.derive(`csrf:${this.tenant}`),
      stylesheet: this.stylesheetPath,
      loadClient: (id) => this.loadClient(id),
    };
  }

  /** Client record, cached; writes through the Management API invalidate it. */
  async loadClient(clientId: string): Promise<ClientRecord | undefined> {
    const cached = this.clientCache.get(clientId);
    if (cached) return cached;
    const record = await this.ctx.storage.clients.get(this.tenant, clientId);
    if (record) this.clientCache.set(clientId, record);
    return record;
  }

  invalidateClient(clientId: string): void {
    this.clientCache.delete(clientId);
  }

  /** Drops every cached client (the event bus was away and may have missed client:changed events). */
  invalidateAllClients(): void {
    this.clientCache.clear();
  }

  private async loadProviderClient(clientId: string): Promise<AdapterPayload | undefined> {
    const record = await this.loadClient(clientId);
    if (!record || !record.active) return undefined;
    return toProviderMetadata(record, this.ctx.sealer, this.tenant);
  }

  tokenIssued(clientId: string, grantType: string): void {
    const now = new Date().toISOString();
    const u = this.usage.get(clientId);
    if (u) {
      u.count++;
      u.last = now;
    } else this.usage.set(clientId, { count: 1, last: now });
    this.ctx.metrics.tokensIssued.inc({ grant_type: grantType });
  }

  /** Writes the batched token counts (every second, and on close). */
  async flushUsage(): Promise<void> {
    if (!this.usage.size) return;
    const batch = this.usage;
    this.usage = new Map();
    for (const [clientId, u] of batch) {
      try {
        await this.ctx.storage.clients.recordUsage(this.tenant, clientId, u.count, u.last);
      } catch (err) {
        this.ctx.log.warn({ err, tenant: this.tenant, clientId }, 'client usage could not be recorded');
      }
    }
  }

  /** Pending (not yet flushed) token count of a client, so stats are exact at any moment. */
  pendingUsage(clientId: string): number {
    return this.usage.get(clientId)?.count ?? 0;
  }

  checkAccessToken(token: string): Promise<TokenCheck> {
    return checkAccessToken(this, token);
  }

  findClientCredentials(id: string): Promise<OidcPayloadRow | undefined> {
    return this.ctx.storage.oidc.find(this.tenant, 'ClientCredentials', id);
  }

  authFailed(clientId: string, reason: string): void {
    this.ctx.log.info({ tenant: this.tenant, client_id: clientId, reason }, 'client authentication failed');
  }

  /**
   * The end user an access token of this tenant was issued to (authorization code or device flow),
   * or undefined when it is not a live user token: opaque tokens through oidc-provider's own store
   * (expiry and session binding checked), JWTs through checkAccessToken. A client_credentials
   * token has no user (its `sub` is the client) and is refused.
   */
  async accessTokenOwner(token: string): Promise<AccessTokenOwner | undefined> {
    if (decodeJwt(token)) {
      const check = await this.checkAccessToken(token);
      if (!check.active || check.claims.sub === check.claims.client_id) return undefined;
      return { accountId: check.claims.sub, clientId: check.claims.client_id, scope: check.claims.scope ?? '' };
    }
    const stored = await this.provider.AccessToken.find(token);
    if (!stored?.accountId || !stored.clientId || stored.isExpired) return undefined;
    const client = await this.loadClient(stored.clientId);
    if (!client?.active) return undefined;
    return { accountId: stored.accountId, clientId: stored.clientId, scope: stored.scope ?? '' };
  }

  /** Every request under the OIDC path of this tenant. */
  async handleOidc(req: HttpRequest): Promise<HttpResponse> {
    const sub = req.path.slice(this.mountPath.length) || '/';
    try {
      if (req.method === 'GET' || req.method === 'HEAD') {
        if (sub === DISCOVERY_PATH) return this.publicDocument(req, this.discovery.body, this.discovery.etag);
        if (sub === '/jwks') return this.publicDocument(req, this.keys.jwksBody, this.keys.jwksEtag, 'application/jwk-set+json; charset=utf-8');
      }
      if (req.method === 'POST' && sub === '/register-rp') return await registerRp({ ctx: this.ctx, tenant: this.tenant }, req);
      if (sub === '/assets/app.css' && (req.method === 'GET' || req.method === 'HEAD')) {
        const headers = { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=86400', etag: STYLESHEET_ETAG, 'x-content-type-options': 'nosniff' };
        return etagMatches(req.headers['if-none-match'], STYLESHEET_ETAG) ? { status: 304, headers } : { status: 200, headers, body: STYLESHEET };
      }
      const interaction = /^\/interaction\/([A-Za-z0-9_-]{1,128})(?:\/(login|mfa|confirm|abort))?$/.exec(sub);
      if (interaction) {
        const action = (interaction[2] ?? 'show') as InteractionAction;
        if ((action === 'show') !== (req.method === 'GET')) return { status: 405, headers: { allow: action === 'show' ? 'GET' : 'POST', ...pageHeaders() }, body: 'Method Not Allowed' };
        return await handleInteraction(this.signInHost(), req, interaction[1]!, action);
      }
      if (sub === '/account/mfa' || sub === '/account/mfa/disable') return await handleAccountMfa(this.signInHost(), req, sub === '/account/mfa' ? 'manage' : 'disable');
      if (req.method === 'POST' && sub === '/token') {
        const fast = await clientCredentialsGrant(this, req);
        if (fast) return fast;
        const slow = await this.devicePolls.check({ tenant: this.tenant, config: this.config, ctx: this.ctx }, req);
        if (slow) return slow;
      } else if (req.method === 'POST' && sub === '/token/introspection') {
        const fast = await introspect(this, req);
        if (fast) return fast;
      } else if (sub === '/auth') {
        return secureHtml(await this.bridge(offlineAccessNeedsConsent(req)));
      } else if (req.method === 'POST' && sub === '/device/auth') {
        return withDeviceInterval(await this.bridge(req), this.config.oidc.device_poll_interval);
      }
      return secureHtml(await this.bridge(req));
    } catch (err) {
      if (err instanceof OAuthError) return oauthResponse(err);
      if (isUnavailable(err)) {
        // Storage (Redis) is down: fail fast with the OAuth error a client can retry on.
        this.ctx.log.warn({ req_id: req.id, tenant: this.tenant, path: req.path }, 'OIDC request refused: storage unavailable');
        return oauthResponse(new OAuthError(503, 'temporarily_unavailable', 'the service is temporarily unavailable; retry shortly', { 'retry-after': '1' }));
      }
      this.ctx.log.error({ err, req_id: req.id, tenant: this.tenant }, 'OIDC request failed');
      return oauthResponse(new OAuthError(500, 'server_error', 'an unexpected error occurred'));
    }
  }

  /** Hands a request to oidc-provider (Koa) through the bridge. */
  bridge(req: HttpRequest): Promise<HttpResponse> {
    return runNodeCallback(this.callback, req, { mountPath: this.mountPath, origin: this.origin });
  }

  private publicDocument(req: HttpRequest, body: Buffer, etag: string, type = 'application/json; charset=utf-8'): HttpResponse {
    const headers = { 'content-type': type, 'cache-control': PUBLIC_CACHE, etag, 'access-control-allow-origin': '*' };
    if (etagMatches(req.headers['if-none-match'], etag)) return { status: 304, headers };
    return { status: 200, headers, body: req.method === 'HEAD' ? '' : body };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.flushTimer);
    this.unsubscribeRotation();
    this.unsubscribeClients();
    this.unsubscribeConfig();
    this.backchannel.close();
    await this.flushUsage();
    this.clientCache.clear();
  }
}

/**
 * HTML that oidc-provider rendered without our page headers (its error paths, the form_post
 * response mode) still gets them; form_post's auto-submit script is allowed by its hash.
 */
function secureHtml(res: HttpResponse): HttpResponse {
  const type = res.headers?.['content-type'];
  // Redirects carry a tiny HTML body nobody renders: framing headers there would only get in the way.
  if (res.status >= 300 && res.status < 400) return res;
  if (typeof type !== 'string' || !type.startsWith('text/html') || res.headers?.['content-security-policy']) return res;
  const body = res.body?.toString() ?? '';
  const action = /<form method="post" action="([^"]+)"/.exec(body)?.[1]?.replace(/&amp;/g, '&');
  const headers: Record<string, string> = { ...pageHeaders(formTargetOf(action)), 'content-type': type };
  const script = /<script>([\s\S]*?)<\/script>/.exec(body)?.[1];
  if (script !== undefined) {
    headers['content-security-policy'] += `; script-src 'sha256-${createHash('sha256').update(script).digest('base64')}'`;
  }
  res.headers = { ...res.headers, ...headers };
  return res;
}

/** If-None-Match semantics (RFC 9110 13.1.2): a list, weak tags and `*` all count. */
function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === etag;
  });
}

function syntheticGet(path: string): HttpRequest {
  return { id: 'startup', method: 'GET', path, rawQuery: '', headers: {}, ip: '127.0.0.1', body: Buffer.alloc(0), params: {} };
}
