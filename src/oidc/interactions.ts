/**
 * The interaction routes oidc-provider sends the browser to: sign-in (e-mail + password, Argon2
 * in the worker pool, brute-force guard), the second step for users with two-step verification
 * (TOTP or a recovery code), consent (skipped for first-party clients), abort.
 * Every form carries a CSRF token bound to the interaction.
 *
 * Over 300 lines, on purpose: the steps of one interaction share request-scoped helpers (the
 * page renderer, the CSRF check, the audit source, `complete`); a file per step would have to pass
 * a dozen closures around. What is not interaction flow lives elsewhere: the writes to the user in
 * users/sign-in.ts and users/mfa.ts, the pages in src/ui, passkey steps in passkey-steps.ts.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type Provider from 'oidc-provider';
import { errors, type InteractionResults } from 'oidc-provider';
import type { AuditEvent } from '../audit/audit-log.js';
import type { AppContext } from '../context.js';
import { withNodeObjects, type BridgeTarget } from '../http/koa-bridge.js';
import { Unavailable, isUnavailable } from '../errors.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import type { ClientRecord, TenantId, UserRecord } from '../storage/types.js';
import { clientDisplayName } from '../ui/client-name.js';
import { formTargetOf, pageHeaders } from '../ui/html.js';
import { buildPageUi, withCookie, type PageUi, type UiSettings } from '../ui/page-ui.js';
import type { AccountHost } from '../ui/account/host.js';
import type { WindowLimiter } from '../ui/account/limiter.js';
import { loginExtras } from '../ui/account/links.js';
import { recogniseDevice } from '../ui/account/devices.js';
import { securityAlert } from '../ui/account/alerts.js';
import { SIGNUP_PENDING, awaitsConfirmation, checkEmailView, handleSignupStep, remindConfirmation, signupPendingOf, type SignupStep } from '../ui/account/signup.js';
import type { Html } from '../ui/html.js';
import { consentPage, loginPage, messagePage, mfaChallengePage, type ConsentScope, type LoginExtras } from '../ui/pages.js';
import type { ResourceIndex } from '../resources/index-cache.js';
import { STANDARD_SCOPES } from '../resources/names.js';
import { logoImgSources } from '../ui/client-logo.js';
import { qrSvg } from '../ui/qr.js';
import { enrolledPage, enrolmentPage, passkeySignIn, secondStepPage } from '../ui/passkey-pages.js';
import { authenticationOptions, completeAuthentication, completeRegistration, passkeyAmr, registrationOptions, usableMethods } from '../users/passkeys.js';
import { lockMinutesLeft, lockedNow } from '../users/lockout.js';
import { recordSignIn } from '../users/sign-in.js';
import { canSignIn } from './accounts.js';
import type { LoginGuard } from './login-guard.js';
import { checkTotp, enableTotp, useRecoveryCode, verifyUserTotp } from '../users/mfa.js';
import {
  auditPasskeyRefusal,
  enrolmentBinding,
  mustEnrol,
  openEnrolmentSecret,
  optionsResponse,
  passkeyFailureKey,
  sealEnrolmentSecret,
  secondStepBinding,
  signInBinding,
  type PasskeyHostSettings,
} from './passkey-steps.js';
import { generateTotpSecret, otpauthUri } from '../users/totp.js';
import { SourceOverShare } from '../workers/fair-admission.js';
import type { ReplayStore } from './replay-store.js';
import { SIGNUP_CLAIM_ISSUER, SIGNUP_CLAIM_SECONDS, signupClaimId, whereFirstPostLed } from './signup-once.js';

export interface SignInHost extends PasskeyHostSettings {
  readonly tenant: TenantId;
  readonly ctx: AppContext;
  readonly target: BridgeTarget;
  readonly provider: Provider;
  readonly guard: LoginGuard;
  readonly csrfKey: Buffer;
  readonly stylesheet: string;
  /** What every page of this tenant needs (stylesheet, languages, brand). */
  readonly ui: UiSettings;
  /** The self-service account surface of the tenant (sign-up, reset links, verification). */
  readonly account: AccountHost;
  readonly limiter: WindowLimiter;
  /** Single-use claims (signup-once.ts), shared by every instance when Redis is configured. */
  readonly replay: Pick<ReplayStore, 'unique'>;
  loadClient(clientId: string): Promise<ClientRecord | undefined>;
  /** The tenant's API resources (the consent page shows their scopes' descriptions). */
  resources(): Promise<ResourceIndex>;
  /** Social login's part of the sign-in page (social-signin.ts); absent without providers. */
  readonly social?: SocialHooks;
}

/** What social login adds to the interaction pages. */
export interface SocialHooks {
  /** The "Continue with <name>" block of the sign-in page. */
  buttons(uid: string, ui: PageUi): Html;
  /** The page of a step social login left pending in the interaction (link confirmation), if any. */
  pending(details: Interaction, uid: string, ui: PageUi, formTargets: string[]): HttpResponse | undefined;
}

/** Two sets of sign-in page extras, one after the other. */
function mergeExtras(a: LoginExtras, b: LoginExtras | undefined): LoginExtras {
  return { afterPassword: [...(a.afterPassword ?? []), ...(b?.afterPassword ?? [])], afterForm: [...(a.afterForm ?? []), ...(b?.afterForm ?? [])] };
}

function socialExtras(host: SignInHost, uid: string, ui: PageUi): LoginExtras | undefined {
  return host.social ? { afterForm: [host.social.buttons(uid, ui)] } : undefined;
}

export type InteractionAction = 'show' | 'login' | 'mfa' | 'confirm' | 'abort' | 'passkey' | 'passkey/options' | 'mfa/options' | 'enrol' | 'enrol/options' | 'signup' | 'resend' | 'continue';

export type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

export function page(status: number, body: string, formTargets: string[] = [], script = false, imgSources: string[] = []): HttpResponse {
  return { status, headers: pageHeaders(formTargets, { script, imgSources }), body };
}

/** Retry-After of an Unavailable (the Argon2 queue is full, storage is down), at least 1 s. */
function retryAfterOf(err: unknown): string {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof Unavailable) return String(Math.max(1, Math.ceil(e.retryAfterSeconds)));
  }
  return '1';
}

/** A 503 answer for a browser: an HTML page (or the form again) with Retry-After, never a JSON error. */
function unavailable(res: HttpResponse, err: unknown): HttpResponse {
  res.headers = { ...res.headers, 'retry-after': retryAfterOf(err) };
  return res;
}

export function redirect(location: string): HttpResponse {
  return { status: 303, headers: { location, 'cache-control': 'no-store' } };
}

export function csrfFor(host: SignInHost, uid: string): string {
  return createHmac('sha256', host.csrfKey).update(`interaction:${uid}`).digest('base64url');
}

export function csrfValid(host: SignInHost, uid: string, given: string | null): boolean {
  if (!given) return false;
  const a = Buffer.from(csrfFor(host, uid));
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function readForm(req: HttpRequest): URLSearchParams | undefined {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  return type === 'application/x-www-form-urlencoded' ? new URLSearchParams(req.body.toString('utf8')) : undefined;
}

/**
 * "First factor verified for this account, second factor due", kept in the interaction itself through
 * interactionResult (not a hidden form field): it stays server side, is bound to this interaction
 * and its browser cookie, dies with it, and needs no token format of our own. oidc-provider ignores
 * the unknown key if the browser jumps to the resume URL early: without `login` it asks again.
 */
export const MFA_PENDING = 'svc_mfa_pending';
/** How long the second step may take after the password. */
export const MFA_PENDING_SECONDS = 300;

/** "Password verified, no usable second factor, the MFA policy requires one": enrolment due (same shape). */
const MFA_ENROL = 'svc_mfa_enrol';

/**
 * The factor a pending second step follows: its RFC 8176 `amr` values (`pwd` for the password,
 * `fed` for a social sign-in, both for a link confirmed with the password) and the `method` the
 * sign-in is audited with. Kept in the pending marker, so the ID token after the second step says
 * what was really used (a social sign-in + TOTP is not `pwd`).
 */
export interface FirstFactor {
  amr: Array<'pwd' | 'fed'>;
  method: string;
}

const PASSWORD: FirstFactor = { amr: ['pwd'], method: 'password' };

function pendingMfaAccount(details: Interaction, key = MFA_PENDING): string | undefined {
  const pending = details.result?.[key] as { accountId?: unknown; exp?: unknown } | undefined;
  if (typeof pending?.accountId !== 'string' || typeof pending.exp !== 'number') return undefined;
  return pending.exp > Date.now() / 1000 ? pending.accountId : undefined;
}

/** The first factor of a pending marker (the password for markers without one). */
function pendingFirstFactor(details: Interaction, key: string): FirstFactor {
  const pending = details.result?.[key] as { amr?: unknown; method?: unknown } | undefined;
  const amr = Array.isArray(pending?.amr) ? pending.amr.filter((v): v is 'pwd' | 'fed' => v === 'pwd' || v === 'fed') : [];
  if (!amr.length || typeof pending?.method !== 'string' || pending.method.length > 100) return PASSWORD;
  return { amr, method: pending.method };
}

/**
 * After a verified first factor (password, social sign-in, a sign-up): holds the sign-in for the
 * second step the MFA policy asks (the user's usable second factor, or enrolment when the policy
 * requires one and the user has none), stored server side in the interaction. False when the
 * sign-in may complete with the first factor alone.
 */
export async function holdForSecondStep(host: Pick<SignInHost, 'provider' | 'mfa'>, uid: string, user: UserRecord, first: FirstFactor): Promise<boolean> {
  const key = usableMethods(user, host.mfa).length > 0 ? MFA_PENDING : mustEnrol(host.mfa) ? MFA_ENROL : undefined;
  if (!key) return false;
  await saveInteractionResult(host.provider, uid, { [key]: { accountId: user.id, exp: Math.floor(Date.now() / 1000) + MFA_PENDING_SECONDS, amr: first.amr, method: first.method } });
  return true;
}

/**
 * What `provider.interactionResult(req, res, result, { mergeWithLastSubmission: false })` does,
 * minus its first step: that one reads the interaction cookie again (a Koa context, a signed-cookie
 * check: three HMACs) only to find the uid this request's interactionDetails already resolved from
 * the same cookie (and `interaction()` checked against the URL). The rest is the same, in the same
 * order: the interaction read afresh from storage (a sign-in resumed or expired in the meantime is
 * SessionNotFound, as before), its session still there under the same account, the result stored
 * for what is left of its lifetime, the resume URL returned.
 */
export async function saveInteractionResult(provider: Provider, uid: string, result: InteractionResults): Promise<string> {
  const interaction = await provider.Interaction.find(uid);
  if (!interaction) throw new errors.SessionNotFound('interaction session not found');
  if (interaction.session?.uid) {
    const session = await provider.Session.findByUid(interaction.session.uid);
    if (!session) throw new errors.SessionNotFound('session not found');
    if (interaction.session.accountId !== session.accountId) throw new errors.SessionNotFound('session principal changed');
  }
  interaction.result = result;
  await interaction.save(interaction.exp - Math.floor(Date.now() / 1000));
  return interaction.returnTo;
}

/**
 * The sign-in this authorization request already did, to be submitted again with its consent (what
 * oidc-provider's mergeWithLastSubmission does): without it, `prompt=login` or `max_age` sees no
 * sign-in in the result that resumes after consent and asks for one again (and `prompt=login
 * consent` went round for ever). Only the login: the pending markers of earlier steps stay behind.
 */
function loginOfThisRequest(details: Interaction): InteractionResults {
  // The consent step is an interaction of its own: the sign-in's result is its last submission.
  const login = details.result?.login ?? details.lastSubmission?.login;
  return login && typeof login === 'object' ? { login } : {};
}

/** The grant a consent (explicit or implied for first-party clients) stores. */
export async function grantConsent(host: SignInHost, details: Interaction, accountId: string): Promise<string> {
  const { Grant } = host.provider;
  const clientId = String(details.params.client_id);
  const grant = (details.grantId ? await Grant.find(details.grantId) : undefined) ?? new Grant({ accountId, clientId });
  const missing = details.prompt.details as {
    missingOIDCScope?: string[];
    missingOIDCClaims?: string[];
    missingResourceScopes?: Record<string, string[]>;
  };
  if (details.prompt.name === 'consent') {
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(' '));
  } else {
    // First-party client at sign-in: everything it asked for is granted.
    grant.addOIDCScope(String(details.params.scope ?? 'openid'));
  }
  return grant.save();
}

/** What a forced consent (prompt=consent, nothing missing) confirms again: the requested scopes the client's grant holds. */
async function reconfirmedScopes(host: SignInHost, details: Interaction): Promise<ConsentScope[]> {
  const grant = details.grantId ? await host.provider.Grant.find(details.grantId) : undefined;
  if (!grant) return [];
  const asked = [...new Set(String(details.params.scope ?? '').split(' '))];
  const heldIn = (scope: string) => new Set(scope.split(' '));
  const resources = [details.params.resource].flat().filter((r): r is string => typeof r === 'string');
  const oidcHeld = heldIn(grant.getOIDCScope());
  return consentItems(
    await host.resources(),
    asked.filter((s) => oidcHeld.has(s)),
    resources.map((r) => {
      const held = heldIn(grant.getResourceScope(r));
      return [r, asked.filter((s) => held.has(s))];
    }),
  );
}

/**
 * What the consent page lists: the OIDC scopes and each resource's scopes, with the description
 * the resource gives them. An API resource's scope asked for without `resource` is among
 * oidc-provider's OIDC scopes but never reaches a token (provider.ts getOIDCScopeFiltered): not
 * shown as given. Each scope once, in the order asked.
 */
function consentItems(index: ResourceIndex, oidcScopes: readonly string[], resourceScopes: ReadonlyArray<readonly [string, readonly string[]]>): ConsentScope[] {
  const items = new Map<string, ConsentScope>();
  for (const name of oidcScopes) if (STANDARD_SCOPES.has(name)) items.set(name, { name });
  for (const [identifier, names] of resourceScopes) {
    const defined = index.get(identifier)?.scopes;
    for (const name of names) if (name && !items.has(name)) items.set(name, { name, description: defined?.find((s) => s.name === name)?.description || undefined });
  }
  return [...items.values()];
}

export async function handleInteraction(host: SignInHost, req: HttpRequest, uid: string, action: InteractionAction): Promise<HttpResponse> {
  try {
    return await interaction(host, req, uid, action);
  } catch (err) {
    if (!isUnavailable(err)) throw err;
    host.ctx.log.warn({ req_id: req.id, tenant: host.tenant, uid, action, reason: err instanceof Error ? err.message : String(err) }, 'sign-in step refused: service temporarily unavailable');
    const { ui, setCookie } = pageUiFor(host, req, uid);
    return withCookie(unavailable(page(503, messagePage({ ui, title: ui.t('page.busy.title'), message: ui.t('page.busy.message'), error: true })), err), setCookie);
  }
}

/** The page context of an interaction page: its GET address for the switcher, the RP's ui_locales when known. */
export function pageUiFor(host: SignInHost, req: HttpRequest, uid: string, uiLocales?: unknown): { ui: PageUi; setCookie?: string } {
  const query = new URLSearchParams(req.method === 'GET' ? req.rawQuery : '');
  return buildPageUi(host.ui, { path: `${host.target.mountPath}/interaction/${encodeURIComponent(uid)}`, query: query.toString(), headers: req.headers }, uiLocales);
}

async function interaction(host: SignInHost, req: HttpRequest, uid: string, action: InteractionAction): Promise<HttpResponse> {
  const { provider } = host;
  return withNodeObjects(req, host.target, async (nreq, nres) => {
    let details: Interaction;
    try {
      details = await provider.interactionDetails(nreq as never, nres as never);
    } catch (err) {
      if (isUnavailable(err)) throw err; // storage down: a 503, not "sign-in expired"
      const { ui, setCookie } = pageUiFor(host, req, uid);
      return withCookie(page(400, messagePage({ ui, title: ui.t('signin.expired.title'), message: ui.t('signin.expired.message'), error: true })), setCookie);
    }
    const { ui, setCookie } = pageUiFor(host, req, uid, details.params.ui_locales);
    if (details.uid !== uid) {
      return withCookie(page(400, messagePage({ ui, title: ui.t('signin.expired.title'), message: ui.t('signin.mismatch.message'), error: true })), setCookie);
    }
    return withCookie(await step(host, req, uid, action, details, ui), setCookie);
  });
}

async function step(host: SignInHost, req: HttpRequest, uid: string, action: InteractionAction, details: Interaction, ui: PageUi): Promise<HttpResponse> {
  const { ctx, tenant, provider } = host;
  const { t } = ui;
  {
    const clientId = String(details.params.client_id ?? '');
    const client = await host.loadClient(clientId);
    const clientName = clientDisplayName(t, clientId, client?.metadata.client_name);
    const logoUri = client?.metadata.logo_uri;
    // Only pages need it (a URL parse): not the redirect that ends a successful sign-in.
    const formTargets = () => formTargetOf(typeof details.params.redirect_uri === 'string' ? details.params.redirect_uri : undefined);
    const base = `${host.target.mountPath}/interaction/${encodeURIComponent(uid)}`;
    const finish = async (result: InteractionResults) => redirect(await saveInteractionResult(provider, details.uid, result));
    const passkeys = host.mfa.webauthn_enabled;
    const withPasskey = (extras: LoginExtras): LoginExtras =>
      passkeys ? { ...extras, afterPassword: [passkeySignIn(ui, { action: `${base}/passkey`, optionsUrl: `${base}/passkey/options`, csrf: csrfFor(host, uid) }), ...(extras.afterPassword ?? [])] } : extras;
    const loginForm = (status: number, error?: string, email = '') =>
      retryAfterMinute(page(
        status,
        loginPage({
          ui,
          action: `${base}/login`,
          csrf: csrfFor(host, uid),
          clientName,
          logoUri,
          email,
          error,
          ...(passkeys ? { script: host.script } : {}),
          // Reset and sign-up links (src/ui/account/links.ts), the passkey button, the social providers.
          extras: mergeExtras(withPasskey(loginExtras(host.account, uid, ui)), socialExtras(host, uid, ui)),
        }),
        formTargets(),
        passkeys,
        logoImgSources(logoUri),
      ));
    /** The second step of a user with a usable passkey: the passkey, and the app code if enrolled. */
    const secondStep = (status: number, user: UserRecord, error?: string) => {
      const totp = usableMethods(user, host.mfa).includes('totp') ? { action: `${base}/mfa`, csrf: csrfFor(host, uid), recoveryHref: `${base}?method=recovery` } : undefined;
      const passkey = { action: `${base}/mfa`, optionsUrl: `${base}/mfa/options`, csrf: csrfFor(host, uid) };
      return page(status, secondStepPage({ ui, script: host.script, clientName, passkey, totp, error }), formTargets(), true);
    };
    /**
     * Enrolment the MFA policy requires: the tenant's enabled methods. The TOTP secret is a fresh one
     * when the page is first drawn, and the one already shown when the page comes back after a wrong
     * code (the user may have added it to an app already, as on the account page).
     */
    const enrolment = async (status: number, accountId: string, error?: string, shownSecret?: string) => {
      const user = await ctx.storage.users.get(tenant, accountId);
      const label = user?.email ?? user?.username ?? accountId;
      const secret = shownSecret ?? generateTotpSecret();
      const uri = otpauthUri(secret, host.target.origin.host, label);
      const totp = host.mfa.totp_enabled
        ? { action: `${base}/enrol`, csrf: csrfFor(host, uid), secret, uri, qrSvg: await qrSvg(uri), enrollment: sealEnrolmentSecret(ctx, tenant, uid, accountId, secret) }
        : undefined;
      const passkey = passkeys ? { action: `${base}/enrol`, optionsUrl: `${base}/enrol/options`, csrf: csrfFor(host, uid) } : undefined;
      return page(status, enrolmentPage({ ui, script: host.script, clientName, totp, passkey, error }), formTargets(), !!passkey);
    };

    const who = { ip_address: req.ip, user_agent: req.headers['user-agent'] ?? null, client_id: clientId };
    const tooMany = t('signin.too_many');
    const cannotSignIn = t('signin.cannot');
    /** Hole 6: the answer for an account that cannot sign in, from its state alone (users/lockout.ts). */
    const refusal = (u: UserRecord) => {
      const minutes = lockMinutesLeft(u);
      return minutes === undefined ? cannotSignIn : minutes === 1 ? t('signin.locked_one') : t('signin.locked_for', { minutes });
    };

    /** Every factor checked: clear the failure count, audit, and hand the login to oidc-provider. */
    const complete = async (user: UserRecord, amr: string[], method: string, render?: (resumeUrl: string) => HttpResponse) => {
      ctx.metrics.loginAttempts.inc({ result: 'success' });
      await recordSignIn(ctx, tenant, user, method, who);
      const result: InteractionResults = { login: { accountId: user.id, amr, remember: true } };
      if (client?.metadata.first_party) result.consent = { grantId: await grantConsent(host, details, user.id) };
      if (render) return render(await saveInteractionResult(provider, details.uid, result));
      // Device matching (new-device alert); `user` is as read before this sign-in (its previous last_login_at).
      return withCookie(await finish(result), recogniseDevice(host.account, req, user, ui.t.lang));
    };
    /**
     * A first factor verified (the password, a sign-up): the second step the MFA policy asks for,
     * or done. A sign-up under required MFA enrols like any password sign-in.
     */
    const afterFirstFactor = async (user: UserRecord, first: FirstFactor = PASSWORD) => {
      // The failure count is deliberately not cleared here: otherwise re-entering the password
      // would buy unlimited guesses at the second factor. Post/redirect/get to the step's page.
      if (await holdForSecondStep(host, details.uid, user, first)) {
        ctx.metrics.loginAttempts.inc({ result: 'mfa_required' });
        return redirect(base);
      }
      return complete(user, first.amr, first.method);
    };
    /** Sign-up, confirmation of the address, resend (src/ui/account/signup.ts). */
    const signupStep = (): SignupStep => ({
      account: host.account,
      req,
      uid,
      base,
      ui,
      csrf: csrfFor(host, uid),
      clientName,
      clientId,
      formTargets: formTargets(),
      limiter: host.limiter,
      pending: signupPendingOf(details.result),
      savePending: async (pending) => {
        await saveInteractionResult(provider, details.uid, { [SIGNUP_PENDING]: pending });
      },
      complete: (user) => afterFirstFactor(user),
      refusal,
      // Redis or storage down: the post goes on unclaimed (the limiter falls back likewise); a
      // sign-up refused for want of the double-click guard would be worse than the double-click.
      claimPost: (email) => host.replay.unique(SIGNUP_CLAIM_ISSUER, signupClaimId(uid, email), Math.floor(Date.now() / 1000) + SIGNUP_CLAIM_SECONDS).catch(() => true),
      copyOfPost: async (email) =>
        redirect(await whereFirstPostLed(provider, details.uid, base, (result) => Boolean(result[MFA_PENDING] || result[MFA_ENROL] || signupPendingOf(result)?.email.toLowerCase() === email.toLowerCase()))),
    });

    if (action === 'show') {
      if (details.prompt.name === 'login') {
        const signup = signupStep();
        if (signup.pending) {
          const waiting = signup.pending.accountId ? await ctx.storage.users.get(tenant, signup.pending.accountId) : undefined;
          // Confirmed in the meantime (the mailed link, any browser): the sign-in goes on.
          if (waiting?.email_verified && canSignIn(waiting)) return afterFirstFactor(waiting);
          // Confirmed, but locked or disabled since: say so, as the sign-in form would.
          if (waiting?.email_verified && !waiting.deleted_at) return checkEmailView(signup, 403, { error: refusal(waiting) });
          return checkEmailView(signup, 200);
        }
        const enrolling = pendingMfaAccount(details, MFA_ENROL);
        if (enrolling) return enrolment(200, enrolling);
        const pendingId = pendingMfaAccount(details);
        if (pendingId) {
          const recovery = new URLSearchParams(req.rawQuery).get('method') === 'recovery';
          const pendingUser = await ctx.storage.users.get(tenant, pendingId);
          if (!recovery && pendingUser && usableMethods(pendingUser, host.mfa).includes('webauthn')) return secondStep(200, pendingUser);
          return page(200, mfaChallengePage({ ui, action: `${base}/mfa`, csrf: csrfFor(host, uid), clientName, recovery, switchHref: recovery ? base : `${base}?method=recovery` }), formTargets());
        }
        const pending = host.social?.pending(details, uid, ui, formTargets());
        if (pending) return pending;
        return loginForm(200, undefined, typeof details.params.login_hint === 'string' ? details.params.login_hint : undefined);
      }
      if (details.prompt.name === 'consent') {
        const accountId = details.session?.accountId;
        if (client?.metadata.first_party && accountId) return finish({ ...loginOfThisRequest(details), consent: { grantId: await grantConsent(host, details, accountId) } });
        const d = details.prompt.details as { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]> };
        const missing = consentItems(await host.resources(), d.missingOIDCScope ?? [], Object.entries(d.missingResourceScopes ?? {}));
        // prompt=consent on a grant that holds everything asked for: nothing is missing, and the
        // user is asked again about what the client asks for (OIDC Core 3.1.2.1).
        const scopes = missing.length ? missing : await reconfirmedScopes(host, details);
        const signedIn = accountId ? await ctx.storage.users.get(tenant, accountId) : undefined;
        const signedInAs = signedIn ? (signedIn.email ?? signedIn.username ?? undefined) : undefined;
        return page(200, consentPage({ ui, action: `${base}/confirm`, abortAction: `${base}/abort`, csrf: csrfFor(host, uid), clientName, logoUri, policyUri: client?.metadata.policy_uri ?? undefined, tosUri: client?.metadata.tos_uri ?? undefined, signedInAs, scopes }), formTargets(), false, logoImgSources(logoUri));
      }
      return page(400, messagePage({ ui, title: t('signin.unsupported.title'), message: t('signin.unsupported.message', { step: details.prompt.name }), error: true }));
    }

    if (action === 'signup' && req.method === 'GET') {
      if (details.prompt.name !== 'login') return page(400, messagePage({ ui, title: t('signin.unexpected.title'), message: t('signin.unexpected.already_signed_in'), error: true }));
      return handleSignupStep(signupStep(), 'signup', undefined);
    }

    const form = readForm(req);
    if (!form || !csrfValid(host, uid, form.get('csrf_token'))) {
      ctx.log.info({ req_id: req.id, tenant, uid }, 'interaction form refused: missing or invalid CSRF token');
      return page(403, messagePage({ ui, title: t('page.form_expired.title'), message: t('page.form_expired.message'), error: true }));
    }

    if (action === 'abort') {
      return finish({ error: 'access_denied', error_description: 'End-User aborted interaction' });
    }

    if (action === 'confirm') {
      const accountId = details.session?.accountId;
      if (details.prompt.name !== 'consent' || !accountId) return page(400, messagePage({ ui, title: t('signin.unexpected.title'), message: t('signin.unexpected.nothing_to_confirm'), error: true }));
      return finish({ ...loginOfThisRequest(details), consent: { grantId: await grantConsent(host, details, accountId) } });
    }

    if (details.prompt.name !== 'login') return page(400, messagePage({ ui, title: t('signin.unexpected.title'), message: t('signin.unexpected.already_signed_in'), error: true }));
    if (action === 'signup' || action === 'resend' || action === 'continue') return handleSignupStep(signupStep(), action, action === 'signup' ? form : undefined);

    /** The password is verified: a second step, an enrolment the MFA policy requires, or done. */
    const afterPassword = async (user: UserRecord, first: FirstFactor = PASSWORD) => {
      if (await awaitsConfirmation(host.account, user)) {
        // Password right, a self sign-up whose address is unconfirmed and the tenant requires it:
        // wait on the check-your-e-mail page, with a fresh link in the mail.
        ctx.metrics.loginAttempts.inc({ result: 'refused' });
        return remindConfirmation(signupStep(), user);
      }
      return afterFirstFactor(user, first);
    };

    /** The pending user of the second step or of enrolment, still allowed to sign in; or the page to show. */
    const pendingUser = async (key: string): Promise<UserRecord | HttpResponse> => {
      const accountId = pendingMfaAccount(details, key);
      if (!accountId) return loginForm(400, t('signin.mfa_timeout'));
      const found = await ctx.storage.users.get(tenant, accountId);
      const user = found ? await host.guard.liftExpiredLock(tenant, found) : undefined;
      if (!user || !canSignIn(user)) {
        ctx.metrics.loginAttempts.inc({ result: 'refused' });
        return loginForm(403, cannotSignIn);
      }
      return user;
    };

    if (action === 'passkey/options' || action === 'mfa/options' || action === 'enrol/options') {
      if (!passkeys) return page(404, messagePage({ ui, title: t('account.unavailable.title'), message: t('passkey.unavailable'), error: true }));
      if (!(await host.guard.allowIp(tenant, req.ip))) return page(429, messagePage({ ui, title: t('page.too_many.title'), message: tooMany, error: true }));
      if (action === 'passkey/options') {
        return optionsResponse(await authenticationOptions(ctx, tenant, host.relyingParty, signInBinding(tenant, uid), { userVerification: 'required' }));
      }
      const user = await pendingUser(action === 'mfa/options' ? MFA_PENDING : MFA_ENROL);
      if (!('id' in user)) return user;
      if (action === 'mfa/options') {
        return optionsResponse(await authenticationOptions(ctx, tenant, host.relyingParty, secondStepBinding(tenant, uid, user.id), { userId: user.id, userVerification: 'preferred' }));
      }
      return optionsResponse(await registrationOptions(ctx, tenant, host.relyingParty, user, enrolmentBinding(tenant, uid, user.id)));
    }

    if (action === 'passkey') {
      // Passwordless: the passkey alone, with user verification (possession + PIN or biometrics).
      if (!passkeys) return loginForm(404, t('passkey.unavailable'));
      if (!(await host.guard.allowIp(tenant, req.ip))) {
        ctx.metrics.loginAttempts.inc({ result: 'rate_limited' });
        return loginForm(429, tooMany);
      }
      const outcome = await completeAuthentication(ctx, tenant, host.relyingParty, signInBinding(tenant, uid), form.get('credential') ?? '', { requireUserVerification: true });
      if (!outcome.ok) {
        ctx.metrics.loginAttempts.inc({ result: 'failure' });
        await auditPasskeyRefusal(ctx, tenant, who, 'passwordless', outcome.reason, outcome.credential);
        return loginForm(401, t(passkeyFailureKey(outcome.reason)));
      }
      const found = await ctx.storage.users.get(tenant, outcome.credential.user_id);
      const user = found ? await host.guard.liftExpiredLock(tenant, found) : undefined;
      if (!user || !canSignIn(user)) {
        ctx.metrics.loginAttempts.inc({ result: 'refused' });
        await ctx.audit.record(tenant, { type: 'failed_login', status: 'failed', username: user?.email ?? null, user_id: outcome.credential.user_id, ...who, details: { method: 'passkey', reason: 'account_unavailable' } });
        return loginForm(403, cannotSignIn);
      }
      return complete(user, [passkeyAmr(outcome.credential), 'mfa'], 'passkey');
    }

    if (action === 'enrol') {
      const user = await pendingUser(MFA_ENROL);
      if (!('id' in user)) return user;
      // The secret this page showed (sealed in its form): kept on every answer that draws the page again.
      const shown = form.has('enrollment') ? openEnrolmentSecret(ctx, tenant, uid, user.id, form.get('enrollment') ?? '') : undefined;
      if (!(await host.guard.allowIp(tenant, req.ip))) return enrolment(429, user.id, tooMany, shown);
      const whoUser = { username: user.email, user_id: user.id, ...who };
      const first = pendingFirstFactor(details, MFA_ENROL);
      if (form.has('credential')) {
        if (!passkeys) return enrolment(404, user.id, t('passkey.unavailable'));
        const enabled = (c: { id: string }): AuditEvent => ({ type: 'mfa_enabled', status: 'success', ...whoUser, details: { user_id: user.id, method: 'webauthn', credential_id: c.id, at: 'sign_in' } });
        const outcome = await completeRegistration(ctx, tenant, host.relyingParty, user, enrolmentBinding(tenant, uid, user.id), form.get('credential') ?? '', '', enabled);
        if (!outcome.ok) {
          await ctx.audit.record(tenant, { type: 'mfa_enrollment_failed', status: 'failed', ...whoUser, details: { user_id: user.id, method: 'webauthn', reason: outcome.reason } });
          return enrolment(400, user.id, t(outcome.reason === 'duplicate' ? 'passkey.duplicate' : 'passkey.invalid'));
        }
        // The same alert as a passkey added on the account page (the user's alert choices apply).
        securityAlert(host.account, user, 'mfa_changed', t.lang);
        return complete(user, [...first.amr, passkeyAmr(outcome.credential), 'mfa'], `${first.method}+webauthn`);
      }
      if (!host.mfa.totp_enabled) return enrolment(404, user.id, t('mfa.totp_unavailable'));
      const secret = shown;
      if (!secret) return enrolment(400, user.id, t('mfa.enroll.expired'));
      const code = (form.get('code') ?? '').trim();
      const check = code && code.length <= 16 ? await checkTotp(ctx, tenant, user.id, secret, code) : 'invalid';
      if (check !== 'ok') {
        await ctx.audit.record(tenant, { type: 'mfa_enrollment_failed', status: 'failed', ...whoUser, details: { user_id: user.id, method: 'totp', reason: check } });
        if (await host.guard.recordFailure(tenant, user, req.ip, req.headers['user-agent'], t.lang)) return loginForm(403, cannotSignIn);
        return enrolment(400, user.id, t(check === 'replayed' ? 'mfa.enroll.code_used' : 'mfa.enroll.code_invalid'), secret);
      }
      const codes = await enableTotp(ctx, tenant, user.id, secret, { type: 'mfa_enabled', status: 'success', ...whoUser, details: { user_id: user.id, method: 'totp', methods: ['totp'], at: 'sign_in' } });
      // The same alert as the account page's set-up (the user's alert choices apply).
      securityAlert(host.account, user, 'mfa_changed', t.lang);
      return complete(user, [...first.amr, 'otp', 'mfa'], `${first.method}+totp`, (resumeUrl) => page(200, enrolledPage({ ui, codes, continueHref: resumeUrl })));
    }

    if (action === 'mfa') {
      const accountId = pendingMfaAccount(details);
      if (!accountId) return loginForm(400, t('signin.mfa_timeout'));
      if (form.has('credential')) {
        const user = await pendingUser(MFA_PENDING);
        if (!('id' in user)) return user;
        if (!(await host.guard.allowIp(tenant, req.ip))) {
          ctx.metrics.loginAttempts.inc({ result: 'rate_limited' });
          return secondStep(429, user, tooMany);
        }
        if (!usableMethods(user, host.mfa).includes('webauthn')) return afterPassword(user, pendingFirstFactor(details, MFA_PENDING));
        const outcome = await completeAuthentication(ctx, tenant, host.relyingParty, secondStepBinding(tenant, uid, user.id), form.get('credential') ?? '', { userId: user.id, requireUserVerification: false });
        if (!outcome.ok) {
          // A refused passkey is a failed sign-in for the brute-force guard, like a wrong code.
          ctx.metrics.loginAttempts.inc({ result: 'failure' });
          await auditPasskeyRefusal(ctx, tenant, who, 'second_factor', outcome.reason, { id: outcome.credential?.id ?? '', user_id: user.id }, user.email);
          if (await host.guard.recordFailure(tenant, user, req.ip, req.headers['user-agent'], t.lang)) return loginForm(403, cannotSignIn);
          return secondStep(401, user, t(passkeyFailureKey(outcome.reason)));
        }
        await ctx.audit.record(tenant, { type: 'mfa_verified', status: 'success', username: user.email, user_id: user.id, ...who, details: { user_id: user.id, method: 'webauthn', credential_id: outcome.credential.id } });
        const first = pendingFirstFactor(details, MFA_PENDING);
        return complete(user, [...first.amr, passkeyAmr(outcome.credential), 'mfa'], `${first.method}+webauthn`);
      }
      const recovery = form.has('recovery_code');
      const given = (form.get(recovery ? 'recovery_code' : 'code') ?? '').trim();
      const again = (status: number, error: string) =>
        page(status, mfaChallengePage({ ui, action: `${base}/mfa`, csrf: csrfFor(host, uid), clientName, recovery, switchHref: recovery ? base : `${base}?method=recovery`, error }), formTargets());
      if (!(await host.guard.allowIp(tenant, req.ip))) {
        ctx.metrics.loginAttempts.inc({ result: 'rate_limited' });
        return again(429, tooMany);
      }
      const found = await ctx.storage.users.get(tenant, accountId);
      const user = found ? await host.guard.liftExpiredLock(tenant, found) : undefined;
      if (!user || !canSignIn(user)) {
        ctx.metrics.loginAttempts.inc({ result: 'refused' });
        return loginForm(403, user ? refusal(user) : cannotSignIn);
      }
      // MFA reset by an administrator since the password step (or the method disabled): the policy decides.
      if (!usableMethods(user, host.mfa).includes('totp')) return afterPassword(user, pendingFirstFactor(details, MFA_PENDING));
      if (!given || given.length > 64) return again(400, recovery ? t('mfa.enter_recovery') : t('mfa.enter_code'));

      const method = recovery ? 'recovery_code' : 'totp';
      let outcome: 'ok' | 'invalid' | 'replayed';
      const verified = (extra: Record<string, unknown>): AuditEvent => ({ type: 'mfa_verified', status: 'success', username: user.email, user_id: user.id, ...who, details: { user_id: user.id, method, ...extra } });
      if (recovery) {
        // The code's removal and its mfa_verified entry are one transaction (users/mfa.ts).
        const left = await useRecoveryCode(ctx, tenant, user, given, (n) => verified({ recovery_codes_left: n }));
        outcome = left === undefined ? 'invalid' : 'ok';
      } else outcome = await verifyUserTotp(ctx, tenant, user, given);

      if (outcome !== 'ok') {
        // A wrong second factor is a failed sign-in for the brute-force guard, like a wrong password.
        ctx.metrics.loginAttempts.inc({ result: 'failure' });
        await ctx.audit.record(tenant, { type: 'mfa_failed', status: 'failed', username: user.email, user_id: user.id, ...who, details: { user_id: user.id, method, reason: outcome === 'replayed' ? 'code_already_used' : 'invalid_code' } });
        if (await host.guard.recordFailure(tenant, user, req.ip, req.headers['user-agent'], t.lang)) {
          return loginForm(403, refusal(lockedNow(user, ctx.config.security.login.lockout_seconds)));
        }
        if (outcome === 'replayed') return again(401, t('mfa.code_used'));
        return again(401, recovery ? t('mfa.recovery_invalid') : t('mfa.code_invalid'));
      }
      if (!recovery) await ctx.audit.record(tenant, verified({}));
      const first = pendingFirstFactor(details, MFA_PENDING);
      return complete(user, [...first.amr, 'otp', 'mfa'], `${first.method}+${method}`);
    }

    // action === 'login'
    const email = (form.get('email') ?? '').trim();
    const password = form.get('password') ?? '';
    const relogin = (status: number, error: string) => loginForm(status, error, email);

    if (!(await host.guard.allowIp(tenant, req.ip))) {
      ctx.metrics.loginAttempts.inc({ result: 'rate_limited' });
      return relogin(429, tooMany);
    }
    if (!email || !password || password.length > 1024) return relogin(400, t('signin.missing'));

    const found = await ctx.storage.users.findByEmail(tenant, email.slice(0, 320));
    const user = found ? await host.guard.liftExpiredLock(tenant, found) : undefined;
    // Verify even for unknown e-mails so response time does not tell whether the account exists.
    let ok: boolean;
    try {
      ok = await ctx.passwords.verify(user?.password_hash ?? (await host.guard.dummyHash()), password, req.ip);
    } catch (err) {
      // This address holds more than its share of the Argon2 queue (fair admission): 429 to it alone.
      if (err instanceof SourceOverShare) {
        ctx.metrics.loginAttempts.inc({ result: 'rate_limited' });
        return relogin(429, tooMany);
      }
      // The Argon2 queue is full (or the pool is closing): the form again, 503 with Retry-After.
      if (!isUnavailable(err)) throw err;
      ctx.metrics.loginAttempts.inc({ result: 'unavailable' });
      return unavailable(relogin(503, t('signin.busy')), err);
    }
    // Hole 6 (issue 12): a locked or disabled account gets one answer whatever the password, so the
    // lock is no password oracle; decided before `ok` is looked at (the hash was verified anyway,
    // so the time taken does not tell either).
    if (user && !canSignIn(user)) {
      ctx.metrics.loginAttempts.inc({ result: 'refused' });
      const reason = user.account_enabled && !user.deleted_at ? 'account_locked' : 'account_disabled';
      await ctx.audit.record(tenant, { type: 'failed_login', status: 'failed', username: user.email, user_id: user.id, ...who, details: { reason } });
      return relogin(403, refusal(user));
    }
    if (!user || !user.password_hash || !ok) {
      ctx.metrics.loginAttempts.inc({ result: 'failure' });
      await ctx.audit.record(tenant, { type: 'failed_login', status: 'failed', username: email.slice(0, 320), user_id: user?.id ?? null, ...who, details: { reason: user ? 'wrong_password' : 'unknown_account' } });
      if (user && (await host.guard.recordFailure(tenant, user, req.ip, req.headers['user-agent'], t.lang))) {
        // Locked by this very attempt: from now on every password gets the lock's answer.
        return relogin(403, refusal(lockedNow(user, ctx.config.security.login.lockout_seconds)));
      }
      return relogin(401, t('signin.invalid'));
    }
    // Locked while this password waited for its check (a burst of guesses ahead of it locked the
    // account): the lock's answer, as for any password now, or the right one would stand out.
    const current = await ctx.storage.users.get(tenant, user.id);
    if (!current || !canSignIn(current)) {
      ctx.metrics.loginAttempts.inc({ result: 'refused' });
      const reason = current?.account_enabled && !current.deleted_at ? 'account_locked' : 'account_disabled';
      await ctx.audit.record(tenant, { type: 'failed_login', status: 'failed', username: user.email, user_id: user.id, ...who, details: { reason } });
      return relogin(403, refusal(current ?? user));
    }
    return afterPassword(current);
  }
}

/** The per-address sign-in limit counts per minute (login-guard.ts allowIp): its 429 says when to come back. */
function retryAfterMinute(res: HttpResponse): HttpResponse {
  return res.status === 429 ? { ...res, headers: { ...res.headers, 'retry-after': '60' } } : res;
}
