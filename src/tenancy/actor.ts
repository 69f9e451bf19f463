/**
 * TenantActor: everything one tenant needs at run time, built from the tenant's state
 * (tenancy/state-cache.ts: merged config, key set, client cache) on a pool miss and dropped on
 * eviction without losing anything (it holds no state storage cannot rebuild). Owns the tenant's
 * oidc-provider instance (built on first use), the rendered discovery document and the sign-in,
 * back-channel and client-assertion services.
 *
 * Over 300 lines, on purpose: it is the one object that implements both OidcRouteHost and
 * TenantHandle over one tenant's live state, and most members are one-line delegations to the
 * modules doing the work (oidc/token-verification.ts, tenancy/usage.ts, src/social, ui/account).
 * Splitting it would put another indirection in front of the state they share, not remove code.
 */
import type Provider from 'oidc-provider';
import type { AdapterPayload } from 'oidc-provider';
import { isSystemClientId, systemClient } from '../clients/system-clients.js';
import { MANAGEMENT_SCOPES } from '../oidc/scopes.js';
import type { AppContext } from '../context.js';
import { Unavailable, isUnavailable, rootCause } from '../errors.js';
import { etagOf } from '../http/etag.js';
import { runNodeCallback, type NodeCallback } from '../http/koa-bridge.js';
import { OAuthError, oauthResponse } from '../http/problem.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { SerialTask } from '../events/serial-task.js';
import type { KeySet } from '../keys/keystore.js';
import { accessTokenOwner, checkAccessToken, type AccessTokenOwner, type TokenCheck } from '../oidc/token-verification.js';
import { toProviderMetadata } from '../oidc/client-metadata.js';
import { BackchannelLogout } from '../oidc/backchannel.js';
import { claimEndSessionConfirm } from '../oidc/end-session-once.js';
import { pairwiseKeyOf, redirectSector } from '../oidc/pairwise.js';
import type { EndedSession } from '../sessions/ended.js';
import { defaultIdTokenAlg } from '../config/schema.js';
import { assertionServices } from '../oidc/assertion-services.js';
import type { AssertionServices } from '../oidc/client-assertion.js';
import { devicePollGuard } from '../oidc/device-and-auth.js';
import { findWithGrant } from '../oidc/grant-reads.js';
import type { SignInHost } from '../oidc/interactions.js';
import { LoginGuard } from '../oidc/login-guard.js';
import { relyingPartyOf } from '../users/passkeys.js';
import { AuthThrottle } from '../oidc/auth-throttle.js';
import { protectBearerIds } from '../oidc/bearer-at-rest.js';
import { inRequestScope, insideProvider, noteAudit, noteClientAuthError, noteServerError } from '../oidc/request-scope.js';
import { noteClientAuthFailure } from '../oidc/client-auth-failures.js';
import { claimsConfiguration, createProvider } from '../oidc/provider.js';
import type { UserinfoSetup } from '../oidc/userinfo.js';
import type { UserTokenSetup } from '../oidc/user-tokens.js';
import type { SilentAuthSetup } from '../oidc/silent-auth.js';
import { mergeConfiguration, prefilledDeviceCode, signInConfiguration } from '../oidc/sign-in-config.js';
import { endSessionPages } from '../oidc/logout-pages.js';
import { pageHeaders } from '../ui/html.js';
import { problemPage, wantsErrorPage } from '../ui/error-page.js';
import type { UiSettings } from '../ui/page-ui.js';
import { brandOf, brandStylesheet, brandStylesheetEtag, tenantBrand } from '../ui/branding.js';
import type { AccountHost } from '../ui/account/host.js';
import { WindowLimiter } from '../ui/account/limiter.js';
import { handleAccountRequest } from '../ui/account/routes.js';
import { adminChangeAlert, securityAlert } from '../ui/account/alerts.js';
import { registerRp } from '../oidc/register-rp.js';
import { ReplayStore } from '../oidc/replay-store.js';
import { socialHooks, type SocialContext } from '../oidc/social-signin.js';
import { socialSettings } from '../social/providers.js';
import { StateCodec } from '../social/state.js';
import { RelayState } from './ops.js';
import { OPS_TENANT } from './resolver.js';
import type { ClientRecord, OidcPayloadRow, OidcRowWithGrant, UserRecord, UserWithoutSecrets } from '../storage/types.js';
import { ResourceIndex } from '../resources/index-cache.js';
import { knownScopesOnly } from '../resources/provider-scopes.js';
import { loadCustomClaims } from '../resources/custom-claims.js';
import { discoveryMetadata, type EffectiveConfig } from './config/merge.js';
import type { TenantHandle } from './handle.js';
import { canonicalSub, DISCOVERY_PATH, documentResponse, jwksResponse, routeOidc, type OidcRouteHost } from './oidc-routes.js';
import { PLATFORM_TENANT } from './resolver.js';
import { reasonOf } from '../startup-errors.js';
import type { TenantState } from './state-cache.js';



/** The oidc-provider instance of the actor's current keys and config, and what was rendered with it. */
interface BuiltProvider {
  provider: Provider;
  callback: NodeCallback;
  discovery: { body: Buffer; etag: string };
  /** What the direct userinfo path needs of this build (oidc/userinfo.ts). */
  userinfo: UserinfoSetup;
  /** What the direct refresh and code grants need of this build (oidc/user-tokens.ts). */
  userTokens: UserTokenSetup;
  /** What the direct silent re-authentication needs of this build (oidc/silent-auth.ts). */
  silentAuth: SilentAuthSetup;
}

/**
 * Client assertion keys and the jti replay store, per tenant state rather than per actor: they
 * outlive the actor (a pool miss re-imports no client key and refetches no jwks_uri), and go with
 * the state when keys or configuration change. Keyed by the state's client cache, one per state.
 * ClientKeyCache keys its entries by what they were built from, so a changed client never
 * verifies with its old keys (client-keys.ts).
 */
const assertionsByState = new WeakMap<TenantState['clients'], AssertionServices>();

export class TenantActor implements OidcRouteHost, TenantHandle {
  readonly issuer: string;
  /** The issuer as a URL, parsed on first use (the client_credentials path never needs it). */
  get origin(): URL {
    return (this.originUrl ??= new URL(this.issuer));
  }
  private originUrl: URL | undefined;
  readonly mountPath: string;
  /** Global config with this tenant's overrides (tenancy/config). */
  get config(): EffectiveConfig {
    return this.current;
  }
  private current!: EffectiveConfig;
  keys!: KeySet;
  private clientCache!: TenantState['clients'];
  /** Clients already warned of an ID token algorithm no longer configured (warnRemovedAlg); emptied with each new state. */
  private removedAlgWarned = new Set<string>();
  /**
   * Built on first use, not with the actor: client_credentials, introspection, JWKS and the
   * Management API never need it, and it is most of an actor's cost (see tenancy/state-cache.ts).
   * Dropped whenever keys or config change; the next request builds it again.
   */
  private built: Promise<BuiltProvider> | undefined;
  /** `built` once it resolved: what a synchronous answer (publicDocumentNow) can use. */
  private ready: BuiltProvider | undefined;
  // What the client_credentials path never uses is made on first use, not with the actor: a pool
  // miss builds only the fields below that are assigned in the constructor (issue 17 item 6).
  /** Serialised, coalesced reloads: change events and API calls never race to swap the state. */
  private get refresh(): SerialTask {
    return (this.refreshTask ??= new SerialTask(async () => this.apply(await this.ctx.tenantStates.get(this.tenant))));
  }
  private refreshTask: SerialTask | undefined;
  private closed = false;
  private get guard(): LoginGuard {
    return (this.loginGuard ??= new LoginGuard(this.ctx, () => this.config, (_tenant, user, lang) => securityAlert(this.accountHost(), user, 'account_locked', lang)));
  }
  private loginGuard: LoginGuard | undefined;
  private readonly authThrottle: AuthThrottle;
  private get backchannel(): BackchannelLogout {
    return (this.backchannelLogout ??= new BackchannelLogout(this.ctx, this.tenant, this.issuer, () => this.keys, pairwiseKeyOf(this.ctx.sealer, this.tenant)));
  }
  private backchannelLogout: BackchannelLogout | undefined;
  private get devicePolls(): ReturnType<typeof devicePollGuard> {
    return (this.devicePollState ??= devicePollGuard());
  }
  private devicePollState: ReturnType<typeof devicePollGuard> | undefined;
  /** Per-address and per-IP limits of the self-service forms. */
  private get limiter(): WindowLimiter {
    return (this.windowLimiter ??= new WindowLimiter(this.ctx.redis?.client, `${this.ctx.config.redis.key_prefix}:${this.tenant}:limits`));
  }
  private windowLimiter: WindowLimiter | undefined;
  private readonly stylesheetPath: string;
  /** Derived on the first sign-in page, then kept (an HMAC per request otherwise). */
  private csrfKey: Buffer | undefined;
  /** The tenant's built-in first-party clients (clients/system-clients.ts), made on first use. */
  private readonly systemClients: Record<string, ClientRecord | undefined> = {};
  /** Client assertion keys and jti replay store of the token endpoint fast paths (per tenant state, see above). */
  get assertions(): AssertionServices {
    let services = assertionsByState.get(this.clientCache);
    if (!services) assertionsByState.set(this.clientCache, (services = assertionServices(this.ctx, this.tenant)));
    return services;
  }
  /** The tenant's API resources, read on first use; dropped with the state (a resource write reloads). */
  private resources: Promise<ResourceIndex> | undefined;
  /** Social login of the current config (built on first use, rebuilt when the config changes). */
  private social: { config: EffectiveConfig; context: SocialContext | undefined } | undefined;
  private socialReplay: ReplayStore | undefined;

  private constructor(
    readonly tenant: string,
    private readonly ctx: AppContext,
    state: TenantState,
  ) {
    this.apply(state);
    this.issuer = ctx.resolver.issuerOf(tenant);
    this.mountPath = ctx.config.oidc.path;
    this.authThrottle = new AuthThrottle(ctx, tenant, () => this.uiSettings(), (clientId) => this.clientKnown(clientId));
    this.stylesheetPath = `${this.mountPath}/assets/app.css`;
  }

  /**
   * The tenant's state comes from ctx.tenantStates (cached, or three storage reads); change events
   * reach the actor through tenant-events.ts, which calls reload().
   */
  static async create(ctx: AppContext, tenant: string): Promise<TenantActor> {
    return new TenantActor(tenant, ctx, await ctx.tenantStates.get(tenant));
  }

  /**
   * Reads keys, configuration and clients from storage again and swaps them in (after a rotation,
   * a configuration change, or an event bus reconnect). Resolves once the new state is live.
   */
  reload(): Promise<void> {
    this.ctx.tenantStates.invalidate(this.tenant);
    return this.refresh.run();
  }

  /** Swaps keys, config and client cache at once, so a request never sees two generations mixed. */
  private apply(state: TenantState): void {
    if (state.keys === this.keys && state.config === this.current) return;
    this.keys = state.keys;
    this.current = state.config;
    this.clientCache = state.clients;
    this.removedAlgWarned = new Set();
    this.resources = undefined;
    this.built = undefined;
    this.ready = undefined;
  }

  /** The oidc-provider instance (built now if this actor has none for its current state). */
  private provider(): Promise<BuiltProvider> {
    if (!this.built) {
      const build = this.buildProvider(this.keys, this.current);
      this.built = build;
      build.then(
        (done) => {
          if (this.built === build) this.ready = done;
        },
        // A failed build is not kept: the next request tries again.
        () => {
          if (this.built === build) this.built = undefined;
        },
      );
    }
    return this.built;
  }

  /** The tenant's API resources (issue 19), loaded once per state; a failed load is not kept. */
  resourceIndex(): Promise<ResourceIndex> {
    if (!this.resources) {
      const load = ResourceIndex.load(this.ctx.storage.resources, this.tenant);
      this.resources = load;
      load.catch(() => {
        if (this.resources === load) this.resources = undefined;
      });
    }
    return this.resources;
  }

  private async buildProvider(keys: KeySet, config: EffectiveConfig): Promise<BuiltProvider> {
    const { storage, sealer } = this.ctx;
    const [resources, customClaims] = await Promise.all([this.resourceIndex(), loadCustomClaims(storage.tenantConfig, this.tenant)]);
    const pairwiseKey = pairwiseKeyOf(sealer, this.tenant);
    // Refresh tokens and sessions under a keyed hash of their value (oidc/bearer-at-rest.ts).
    const oidcRepo = protectBearerIds(storage.oidc, sealer);
    const cookieKeys = [sealer.derive(`cookies:${this.tenant}`).toString('base64url')];
    const signInHost = { tenant: this.tenant, ctx: this.ctx, mountPath: this.mountPath, ui: this.uiSettings(config), pairwiseKey, mfa: config.security.mfa };
    const provider = createProvider({
      resources,
      customClaims,
      tenant: this.tenant,
      issuer: this.issuer,
      config,
      keys,
      oidcRepo,
      loadClient: (id) => this.loadProviderClient(id),
      cookieKeys,
      extend: (conf) => {
        mergeConfiguration(
          conf,
          signInConfiguration(signInHost),
        );
        // RFC 7591 clients find dynamic registration here (it is served by oidc/register-rp.ts,
        // not by oidc-provider's own registration feature, so oidc-provider would not announce it).
        conf.discovery = { ...conf.discovery, registration_endpoint: `${this.issuer}/register-rp`, ...discoveryMetadata(config) };
      },
      backchannelLogout: (client, sub, sid) => this.backchannel.send(client, sub, sid),
    });
    provider.use(prefilledDeviceCode(signInHost));
    provider.use(endSessionPages(signInHost));
    this.observe(provider);
    const callback = provider.callback() as unknown as NodeCallback;
    const discoveryResponse = await insideProvider(() => runNodeCallback(callback, syntheticGet(this.mountPath + DISCOVERY_PATH), { mountPath: this.mountPath, origin: this.origin }));
    if (discoveryResponse.status !== 200) throw new Error(`discovery document could not be built (${discoveryResponse.status})`);
    const body = Buffer.isBuffer(discoveryResponse.body) ? discoveryResponse.body : Buffer.from(discoveryResponse.body ?? '');
    const userinfo: UserinfoSetup = { claimsByScope: claimsConfiguration(customClaims), customClaims, pairwiseKey };
    const userTokens: UserTokenSetup = { ...userinfo, repo: oidcRepo, conformIdTokenClaims: config.oidc.id_token_claims === 'conform', resources };
    return { provider, callback, discovery: { body, etag: etagOf(body) }, userinfo, userTokens, silentAuth: { repo: oidcRepo, cookieKeys } };
  }

  /** Audit and metrics from oidc-provider's events. */
  private observe(provider: Provider): void {
    const { log, audit } = this.ctx;
    provider.on('server_error', (_ctx: unknown, err: Error) => {
      noteServerError(err);
      log.error({ err, tenant: this.tenant }, 'oidc-provider server_error');
    });
    // Why oidc-provider refused a client's authentication, for the throttle's audit entry (auth-throttle.ts).
    const clientAuthError = (_ctx: unknown, err: Error) => {
      const e = err as Error & { error?: unknown; error_detail?: unknown; statusCode?: unknown };
      if (e.error === 'invalid_client' && e.statusCode === 401) noteClientAuthError(typeof e.error_detail === 'string' ? e.error_detail : '');
    };
    provider.on('grant.error', clientAuthError);
    provider.on('introspection.error', clientAuthError);
    provider.on('revocation.error', clientAuthError);
    provider.on('device_authorization.error', clientAuthError);
    provider.on('pushed_authorization_request.error', clientAuthError);
    provider.on('grant.success', (kctx: { oidc: { client?: { clientId: string }; params?: { grant_type?: unknown } } }) => {
      const clientId = kctx.oidc.client?.clientId;
      if (clientId) this.tokenIssued(clientId, String(kctx.oidc.params?.grant_type ?? 'unknown'));
    });
    provider.on('end_session.success', (kctx: { ip?: string; get?: (h: string) => string; oidc: { session?: { accountId?: string }; client?: { clientId: string }; params?: { logout?: unknown } } }) => {
      const accountId = kctx.oidc.session?.accountId;
      // A logout is audited when someone was signed out: not for a visitor without an account (whose
      // form secret oidc-provider keeps in an accountless session), nor for "Stay signed in" with no
      // application to sign out of (oidc-provider then changes nothing). "Stay signed in" from an
      // application (id_token_hint / client_id) signs the user out of that one: audited, with it.
      if (!accountId || (!kctx.oidc.params?.logout && !kctx.oidc.client)) return;
      const entry = async () => {
        // The user's login name, as on their login entries, so the audit log's user filter finds it.
        const user = await this.findTokenUser(accountId);
        // The written entry, or undefined when it failed (request-scope.ts answers 503 then).
        return audit.record(this.tenant, {
          type: 'logout',
          user_id: accountId,
          username: user?.email ?? null,
          client_id: kctx.oidc.client?.clientId ?? null,
          ip_address: kctx.ip ?? null,
          user_agent: kctx.get?.('user-agent') ?? null,
          details: { user_id: accountId, method: 'rp_initiated' },
        });
      };
      // Awaited before the answer leaves (request-scope.ts): a logout is never accepted unaudited.
      noteAudit(entry());
    });
  }

  /** Social login settings of the current config; undefined when the tenant has no enabled provider. */
  socialContext(): SocialContext | undefined {
    const config = this.current;
    if (this.social?.config === config) return this.social.context;
    const { ctx } = this;
    const settings = socialSettings(config, this.tenant, ctx.sealer, ctx.log);
    let context: SocialContext | undefined;
    if (settings.providers.length) {
      this.socialReplay ??= new ReplayStore(ctx.storage.oidc, this.tenant, ctx.redis ? { client: ctx.redis.client, prefix: ctx.config.redis.key_prefix } : undefined);
      const relayed = settings.relay && ctx.config.multi_tenancy.enabled;
      context = {
        settings,
        config,
        codec: new StateCodec(ctx.sealer, this.tenant),
        replay: this.socialReplay,
        // The same platform key as the _ops gateway's (front-door.ts).
        relay: new RelayState(ctx.sealer.derive('ops-relay-state')),
        issuer: this.issuer,
        ...(relayed ? { relayIssuer: ctx.resolver.issuerOf(OPS_TENANT) } : {}),
      };
    }
    this.social = { config, context };
    return context;
  }

  async signInHost(): Promise<SignInHost> {
    const host = await this.baseSignInHost();
    const social = this.socialContext();
    return social ? { ...host, social: socialHooks(host, social) } : host;
  }

  private async baseSignInHost(): Promise<SignInHost> {
    return {
      tenant: this.tenant,
      ctx: this.ctx,
      target: { mountPath: this.mountPath, origin: this.origin },
      provider: (await this.provider()).provider,
      guard: this.guard,
      csrfKey: (this.csrfKey ??= this.ctx.sealer.derive(`csrf:${this.tenant}`)),
      stylesheet: this.stylesheetPath,
      ui: this.uiSettings(this.current),
      account: this.accountHost(),
      limiter: this.limiter,
      replay: this.assertions.replay,
      loadClient: (id) => this.loadClient(id),
      resources: () => this.resourceIndex(),
      // Passkeys and the MFA policy (issue 14): RP ID = this tenant's host, its settings as merged.
      mfa: this.current.security.mfa,
      relyingParty: relyingPartyOf(this.origin, this.current.overrides.branding?.company_name ?? this.current.overrides.application?.title ?? this.origin.hostname),
      script: `${this.mountPath}/assets/passkey.js`,
    };
  }

  /** The tenant as the self-service account surface sees it (src/ui/account/host.ts). */
  private accountHost(): AccountHost {
    return {
      tenant: this.tenant,
      ctx: this.ctx,
      config: this.current,
      origin: this.origin,
      mountPath: this.mountPath,
      ui: this.uiSettings(this.current),
      csrfKey: (this.csrfKey ??= this.ctx.sealer.derive(`csrf:${this.tenant}`)),
      guard: this.guard,
      provider: async () => (await this.provider()).provider,
      relyingParty: relyingPartyOf(this.origin, this.current.overrides.branding?.company_name ?? this.current.overrides.application?.title ?? this.origin.hostname),
      passkeyScript: `${this.mountPath}/assets/passkey.js`,
      social: () => this.socialContext(),
      exchange: (body) => {
        const bytes = Buffer.from(body.toString());
        const headers = { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(bytes.length), host: this.origin.host };
        return this.bridge({ id: 'account-code-exchange', method: 'POST', path: `${this.mountPath}/token`, rawQuery: '', headers, ip: '127.0.0.1', body: bytes, params: {} });
      },
    };
  }

  /** An administrator's password set or MFA reset, told to the user (ui/account/alerts.ts). */
  alertAdminChange(user: UserRecord, change: 'password_changed' | 'mfa_changed'): void {
    adminChangeAlert(this.accountHost(), user, change);
  }

  /** Every request under /account on the tenant's origin (password reset, verification, the account page). */
  async handleAccount(req: HttpRequest): Promise<HttpResponse> {
    return handleAccountRequest(this.accountHost(), req, this.limiter);
  }

  /** What the tenant's end-user pages are rendered with (stylesheet, languages, brand). */
  uiSettings(config: EffectiveConfig = this.current): UiSettings {
    const brand = tenantBrand(config);
    const css = this.brandCss(config);
    return {
      stylesheet: this.stylesheetPath,
      application: { ...withoutEmpty(config.application), ...config.overrides.application },
      brand,
      brandStylesheet: css.body ? `${this.mountPath}/assets/brand.css?v=${css.etag.slice(1, 9)}` : undefined,
    };
  }

  /** The tenant's brand stylesheet (palettes, font), rendered once per configuration. */
  brandCss(config: EffectiveConfig = this.current): { body: string; etag: string } {
    if (this.brandCssCache?.config !== config) {
      const body = brandStylesheet(brandOf(config.overrides.branding, undefined));
      this.brandCssCache = { config, body, etag: brandStylesheetEtag(body) };
    }
    return this.brandCssCache;
  }
  private brandCssCache: { config: EffectiveConfig; body: string; etag: string } | undefined;

  /** Client record, cached; writes through the Management API invalidate it. */
  async loadClient(clientId: string): Promise<ClientRecord | undefined> {
    if (isSystemClientId(clientId)) return (this.systemClients[clientId] ??= systemClient(clientId, this.origin.origin, MANAGEMENT_SCOPES));
    const cache = this.clientCache;
    const cached = cache.get(clientId);
    if (cached) return cached;
    const record = await this.ctx.storage.clients.get(this.tenant, clientId);
    if (record) cache.set(clientId, record);
    return record;
  }

  /**
   * Whether a client that oidc-provider found "not found" exists here all the same (deactivated):
   * every client authentication loads the client through loadClient, which keeps what it found, so
   * the cache answers without a read (an unknown id must not cost a second storage read).
   */
  private clientKnown(clientId: string): boolean {
    return this.clientCache.has(clientId) || (isSystemClientId(clientId) && this.systemClients[clientId] !== undefined);
  }

  invalidateClient(clientId: string): void {
    this.clientCache.delete(clientId);
  }

  private async loadProviderClient(clientId: string): Promise<AdapterPayload | undefined> {
    const record = await this.loadClient(clientId);
    if (!record || !record.active) return undefined;
    this.warnRemovedAlg(record);
    const metadata = toProviderMetadata(record, this.ctx.sealer, this.tenant);
    // A scope of a since-deleted resource would make oidc-provider refuse the whole client.
    return knownScopesOnly(metadata, await this.resourceIndex());
  }

  /**
   * A client registered with an ID token algorithm since taken out of security.key_store.algorithms:
   * oidc-provider refuses it (invalid_client_metadata) wherever it loads the client, and the sign-in
   * page can only show a generic error, so the operator learns here which client to change (its
   * ID tokens are never signed with another algorithm than the one it registered: docs/signing-keys.md).
   * Once per client and state: a reload (a key or configuration change) says it again.
   */
  private warnRemovedAlg(record: ClientRecord): void {
    const alg = record.metadata.id_token_signed_response_alg;
    const algorithms: readonly string[] = this.current.security.key_store.algorithms;
    if (alg === undefined || algorithms.includes(alg) || this.removedAlgWarned.has(record.client_id)) return;
    this.removedAlgWarned.add(record.client_id);
    this.ctx.log.warn(
      { tenant: this.tenant, client_id: record.client_id, id_token_signed_response_alg: alg, setting: 'SECURITY_KEY_STORE_ALGORITHMS' },
      `client ${record.client_id} is refused (invalid_client_metadata): its id_token_signed_response_alg ${alg} is not in SECURITY_KEY_STORE_ALGORITHMS (${algorithms.join(', ')}); change the client's algorithm or configure ${alg} again`,
    );
  }

  /**
   * Back-channel logouts for sessions the service ended (sessions/ended.ts), sent as the end-session
   * endpoint sends them (provider.ts): to each active client of the session that registered a
   * backchannel_logout_uri, signed with its ID token algorithm, with its (pairwise) subject.
   */
  logoutEndedSessions(sessions: readonly EndedSession[]): void {
    for (const session of sessions) {
      if (!session.account_id) continue;
      for (const [clientId, sid] of Object.entries(session.sids)) {
        this.logoutClient(clientId, session.account_id, sid).catch((err: unknown) =>
          this.ctx.log.warn({ err, tenant: this.tenant, client_id: clientId }, 'back-channel logout of an ended session not sent'),
        );
      }
    }
  }

  private async logoutClient(clientId: string, accountId: string, sid: string): Promise<void> {
    const record = await this.loadClient(clientId);
    const uri = record?.active ? record.metadata.backchannel_logout_uri : undefined;
    if (!record || !uri) return;
    const m = record.metadata;
    await this.backchannel.send(
      {
        clientId,
        backchannelLogoutUri: uri,
        idTokenSignedResponseAlg: m.id_token_signed_response_alg ?? defaultIdTokenAlg(this.ctx.config.security.key_store.algorithms),
        pairwiseSector: m.subject_type === 'pairwise' ? (redirectSector(m) ?? clientId) : undefined,
      },
      accountId,
      sid,
    );
  }

  tokenIssued(clientId: string, grantType: string): void {
    this.ctx.usage.record(this.tenant, clientId);
    this.ctx.metrics.tokensIssued.inc({ grant_type: grantType });
  }

  /** Writes the counted token usage now (it is written every second anyway; see tenancy/usage.ts). */
  flushUsage(): Promise<void> {
    return this.ctx.usage.flush();
  }

  /** Pending (not yet written) token count of a client, so stats are exact at any moment. */
  pendingUsage(clientId: string): number {
    return this.ctx.usage.pending(this.tenant, clientId);
  }

  claimProofJti(jkt: string, jti: string, expiresAt: number): Promise<boolean> {
    // The client assertions' replay store (shared through Redis when configured), in its own namespace.
    return this.assertions.replay.unique(`dpop:${jkt}`, jti, expiresAt);
  }

  checkAccessToken(token: string): Promise<TokenCheck> {
    return checkAccessToken(this, token);
  }

  findClientCredentials(id: string): Promise<OidcPayloadRow | undefined> {
    return this.ctx.storage.oidc.find(this.tenant, 'ClientCredentials', id);
  }

  findTokenUser(sub: string): Promise<UserWithoutSecrets | undefined> {
    const users = this.ctx.storage.users;
    return users.getForToken ? users.getForToken(this.tenant, sub) : users.get(this.tenant, sub);
  }

  async grantOf(grantId: string): Promise<{ accountId: string | undefined } | undefined> {
    const row = await this.findArtefact('Grant', grantId);
    if (!row) return undefined;
    return { accountId: typeof row.payload.accountId === 'string' ? row.payload.accountId : undefined };
  }

  readTogether<T>(reads: () => T): T {
    return this.ctx.storage.readTogether(reads);
  }

  /** The direct userinfo path serves only once oidc-provider is built: it answers with that build's settings. */
  userinfoSetup(): UserinfoSetup | undefined {
    return this.ready?.userinfo;
  }

  /** The direct refresh and code grants serve only once oidc-provider is built, with that build's settings. */
  userTokenSetup(): UserTokenSetup | undefined {
    return this.ready?.userTokens;
  }

  /** The setup of the built oidc-provider, building it first when needed (refresh-resource.ts). */
  async userTokenSetupBuilt(): Promise<UserTokenSetup> {
    return (await this.provider()).userTokens;
  }

  /** The direct silent re-authentication serves only once oidc-provider is built, with that build's cookie keys. */
  silentAuthSetup(): SilentAuthSetup | undefined {
    return this.ready?.silentAuth;
  }

  /** Access tokens and grants are stored as they are (only refresh tokens and sessions are keyed: bearer-at-rest.ts). */
  findArtefact(model: 'AccessToken' | 'Grant', id: string): Promise<OidcPayloadRow | undefined> {
    return this.ctx.storage.oidc.find(this.tenant, model, id);
  }

  findAccessToken(id: string): Promise<OidcRowWithGrant | undefined> {
    return findWithGrant(this.ctx.storage.oidc, this.tenant, 'AccessToken', id);
  }

  findSessionByUid(uid: string): Promise<OidcPayloadRow | undefined> {
    return this.ctx.storage.oidc.findByUid(this.tenant, 'Session', uid);
  }

  get platformTenant(): boolean {
    return this.tenant === PLATFORM_TENANT;
  }

  /** The user behind a Management token, checked for what a route needs (token-verification.ts). */
  accessTokenOwner(token: string, need: { scopes: readonly string[]; firstParty: boolean }): Promise<AccessTokenOwner> {
    return accessTokenOwner(this, token, need);
  }

  /** Every request under the OIDC path of this tenant: the route table (oidc-routes.ts), then oidc-provider. */
  async handleOidc(request: HttpRequest): Promise<HttpResponse> {
    const given = request.path.slice(this.mountPath.length) || '/';
    // `/TOKEN/` is oidc-provider's `/token`: everything below sees the one spelling (oidc-routes.ts).
    const sub = canonicalSub(given);
    const req = sub === given ? request : { ...request, path: this.mountPath + sub };
    // Failed client authentications and wrong device codes are throttled (oidc/auth-throttle.ts).
    try {
      return await this.authThrottle.around(req, sub, () => routeOidc(this, req, sub));
    } catch (err) {
      return this.oidcFailure(req, err);
    }
  }

  /** The one place OIDC errors become answers: OAuth errors as they are, neutral ones mapped. */
  private oidcFailure(req: HttpRequest, err: unknown): HttpResponse {
    if (err instanceof OAuthError) return oauthResponse(err);
    if (isUnavailable(err)) {
      // Storage (Redis) is down: fail fast with the OAuth error a client can retry on.
      this.ctx.log.warn({ req_id: req.id, tenant: this.tenant, path: req.path, reason: reasonOf(rootCause(err)) }, 'OIDC request refused: storage unavailable');
      return oauthResponse(new OAuthError(503, 'temporarily_unavailable', 'the service is temporarily unavailable; retry shortly', { 'retry-after': '1' }));
    }
    this.ctx.log.error({ err, req_id: req.id, tenant: this.tenant }, 'OIDC request failed');
    return oauthResponse(new OAuthError(500, 'server_error', 'an unexpected error occurred'));
  }

  /** The rendered discovery document of the current provider (built now if needed). */
  async discovery(): Promise<{ body: Buffer; etag: string }> {
    return (await this.provider()).discovery;
  }

  devicePoll(req: HttpRequest): Promise<HttpResponse | undefined> {
    return this.devicePolls.check({ tenant: this.tenant, config: this.config, ctx: this.ctx }, req);
  }

  registerClient(req: HttpRequest): Promise<HttpResponse> {
    return registerRp({ ctx: this.ctx, tenant: this.tenant }, req);
  }

  /**
   * JWKS and discovery answered synchronously (the front door's fast path), or undefined when
   * this is not such a request or the discovery document is not rendered yet.
   */
  publicDocumentNow(req: Pick<HttpRequest, 'method' | 'path' | 'headers'>): HttpResponse | undefined {
    const sub = req.path.slice(this.mountPath.length);
    if (sub === '/jwks') return jwksResponse(this, req);
    if (sub === DISCOVERY_PATH && this.ready) return documentResponse(req, this.ready.discovery);
    return undefined;
  }

  /** Hands a request to oidc-provider (Koa) through the bridge. */
  async bridge(given: HttpRequest): Promise<HttpResponse> {
    const { callback, silentAuth } = await this.provider();
    let req = given;
    if (req.method === 'POST' && req.path === `${this.mountPath}/session/end/confirm`) {
      // The logout confirmation writes an audit entry: refused up front while storage is down.
      await this.ctx.storage.ping().catch((err: unknown) => {
        throw new Unavailable('storage is unavailable', 1, { cause: err });
      });
      // Copies of one confirmation sent at once sign out once (oidc/end-session-once.ts).
      req = await claimEndSessionConfirm(this.assertions.replay, req, silentAuth.cookieKeys);
    }
    const res = await inRequestScope(
      () => runNodeCallback(callback, req, { mountPath: this.mountPath, origin: this.origin }),
      () => {
        this.ctx.log.error({ req_id: req.id, tenant: this.tenant, path: req.path }, 'OIDC request answered 503: its audit entry could not be written');
        return { status: 503, headers: { ...pageHeaders(), 'retry-after': '1' }, body: '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Try again</title></head><body><main><h1>Try again</h1><p>This could not be completed. Try again in a moment.</p></main></body></html>' };
      },
      (detail) => noteClientAuthFailure(req, { detail }),
    );
    return res.status === 503 ? this.retryLater(req, res) : res;
  }

  /**
   * oidc-provider's own 503s (storage down inside it: userinfo, revocation, end-session) say when to
   * retry, like every other outage answer, and a browser on a page path gets the styled page rather
   * than Koa's plain text.
   */
  private retryLater(req: HttpRequest, res: HttpResponse): HttpResponse {
    const type = String(res.headers?.['content-type'] ?? '');
    if (!type.startsWith('text/html') && wantsErrorPage(req, this.mountPath)) {
      const page = problemPage(req, 503, 'unavailable');
      return { ...page, headers: { ...page.headers, 'retry-after': '1' } };
    }
    return res.headers?.['retry-after'] === undefined ? { ...res, headers: { ...res.headers, 'retry-after': '1' } } : res;
  }

  /** Synchronous: an eviction on a pool miss costs no promise (pool.ts). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.backchannelLogout?.close();
    this.built = undefined;
  }
}

function syntheticGet(path: string): HttpRequest {
  return { id: 'startup', method: 'GET', path, rawQuery: '', headers: {}, ip: '127.0.0.1', body: Buffer.alloc(0), params: {} };
}

/** The global application settings without their empty defaults (an empty list means "all languages"). */
function withoutEmpty(app: EffectiveConfig['application']): { default_locale?: string; available_locales?: string[] } {
  return { default_locale: app.default_locale, ...(app.available_locales.length ? { available_locales: app.available_locales } : {}) };
}
