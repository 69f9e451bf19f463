/**
 * Social login in the sign-in flow (CONTRACT.md "End-user surface"):
 *   GET  {issuer}/interaction/<uid>/social/<name>   start: sealed state, browser-binding cookie,
 *                                                    303 to the upstream's authorization endpoint
 *   GET  {issuer}/social/<name>/callback             the upstream's answer (query response mode)
 *   POST {issuer}/social/<name>/callback             form_post (Apple): 303 to the GET above, so the
 *                                                    SameSite=Lax binding cookie comes along
 *   POST {issuer}/interaction/<uid>/link             password confirmation of a link to an existing
 *   POST {issuer}/interaction/<uid>/link-cancel      user with the same (verified) e-mail
 * The callback completes the interaction without its cookie (the uid is in the sealed state, the
 * browser proven by the binding cookie) and sends the browser to the interaction's resume URL,
 * which oidc-provider checks against its own resume cookie. Every failure ends on a page that
 * says what happened, with nothing created; the reason goes to the log, audit and metrics.
 *
 * Over 300 lines, on purpose: start, callback and link confirmation share one interaction state
 * machine and one failure path; split across files, each would have to re-derive the other's checks.
 */
import type { InteractionResults } from 'oidc-provider';
import { withNodeObjects } from '../http/koa-bridge.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { createSocialUser, linkIdentity, resolveAccount, type Who } from '../social/accounts.js';
import type { SocialProvider } from '../social/providers.js';
import { UpstreamError, authorizationUrl, exchangeCode, type UpstreamIdentity } from '../social/upstream.js';
import type { UserRecord } from '../storage/types.js';
import { formTargetOf, pageHeaders } from '../ui/html.js';
import type { PageUi } from '../ui/page-ui.js';
import { socialButtons, socialErrorPage, socialLinkPage } from '../ui/social-pages.js';
import { canSignIn } from './accounts.js';
import {
  MFA_PENDING_SECONDS,
  csrfFor,
  csrfValid,
  grantConsent,
  holdForSecondStep,
  page,
  pageUiFor,
  readForm,
  redirect,
  saveInteractionResult,
  type FirstFactor,
  type Interaction,
  type SignInHost,
  type SocialHooks,
} from './interactions.js';
import { finishAccountLink } from './social-account-link.js';
import { BINDING_COOKIE, MAX_PARAM, appleUser, callbackUrl, resultPageUi, socialBindingCookie, type SocialContext } from './social-common.js';

export { MAX_PARAM, appleUser, callbackUrl, socialBindingCookie };

export type { SocialContext } from './social-common.js';

export type SocialResult =
  | 'success'
  | 'created'
  | 'link_required'
  | 'linked'
  | 'mfa_required'
  | 'invalid_state'
  | 'replayed_state'
  | 'wrong_browser'
  | 'upstream_denied'
  | 'upstream_failed'
  | 'refused'
  | 'expired';

const LINK_PENDING = 'svc_social_link';
const CALLBACK_PARAMS = ['code', 'state', 'error', 'error_description', 'iss', 'user'] as const;

interface PendingLink {
  accountId: string;
  provider: string;
  subject: string;
  email: string;
  exp: number;
}

function pendingLink(details: Pick<Interaction, 'result'>): PendingLink | undefined {
  const p = details.result?.[LINK_PENDING] as Partial<PendingLink> | undefined;
  if (!p || typeof p.accountId !== 'string' || typeof p.provider !== 'string' || typeof p.subject !== 'string' || typeof p.email !== 'string' || typeof p.exp !== 'number') return undefined;
  return p.exp > Date.now() / 1000 ? (p as PendingLink) : undefined;
}

function cookieOf(req: HttpRequest, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

function bindingCookie(host: SignInHost, value: string, maxAge: number): string {
  return socialBindingCookie(host.target, value, maxAge);
}

function withCookie(res: HttpResponse, cookie: string): HttpResponse {
  res.headers = { ...res.headers, 'set-cookie': cookie };
  return res;
}

export function socialHooks(host: SignInHost, sc: SocialContext): SocialHooks {
  const base = (uid: string) => `${host.target.mountPath}/interaction/${encodeURIComponent(uid)}`;
  return {
    buttons: (uid, ui) => socialButtons(sc.settings.providers.map((p) => ({ name: p.displayName, href: `${base(uid)}/social/${p.name}`, ...(p.label !== 'oidc' ? { preset: p.label } : {}) })), ui),
    pending: (details, uid, ui, formTargets) => {
      const link = pendingLink(details);
      if (!link) return undefined;
      const provider = sc.settings.providers.find((p) => p.name === link.provider);
      return page(200, socialLinkPage({ ui, action: `${base(uid)}/link`, cancelAction: `${base(uid)}/link-cancel`, csrf: csrfFor(host, uid), provider: provider?.displayName ?? link.provider, email: link.email }), formTargets);
    },
  };
}

/** The social routes of the tenant's OIDC path, or undefined when `sub` is none of them. */
export async function handleSocial(host: SignInHost, sc: SocialContext | undefined, req: HttpRequest, sub: string): Promise<HttpResponse | undefined> {
  const start = /^\/interaction\/([A-Za-z0-9_-]{1,128})\/social\/([a-z][a-z0-9-]{0,31})$/.exec(sub);
  const link = /^\/interaction\/([A-Za-z0-9_-]{1,128})\/(link|link-cancel)$/.exec(sub);
  const callback = /^\/social\/([a-z][a-z0-9-]{0,31})\/callback$/.exec(sub);
  if (!start && !link && !callback) return undefined;
  const method = req.method;
  if (start && method !== 'GET') return { status: 405, headers: { allow: 'GET', ...pageHeaders() }, body: 'Method Not Allowed' };
  if (link && method !== 'POST') return { status: 405, headers: { allow: 'POST', ...pageHeaders() }, body: 'Method Not Allowed' };
  if (callback && method !== 'GET' && method !== 'POST') return { status: 405, headers: { allow: 'GET, POST', ...pageHeaders() }, body: 'Method Not Allowed' };
  const uid = start?.[1] ?? link?.[1];
  // The callback's pages until its state names the sign-in: no switcher (social-common.ts resultPageUi).
  const ui = uid ? pageUiFor(host, req, uid).ui : resultPageUi(host.ui, req, undefined);
  const name = start?.[2] ?? callback?.[1];
  const provider = name ? sc?.settings.providers.find((p) => p.name === name) : undefined;
  if ((name && !provider) || !sc) {
    return page(404, socialErrorPage({ ui, title: ui.t('social.unavailable.title'), message: ui.t('social.unavailable.message') }));
  }
  if (start) return startFlow(host, sc, provider!, req, start[1]!, ui);
  if (callback) return method === 'POST' ? formPostToQuery(req) : finishFlow(host, sc, provider!, req);
  return confirmLink(host, sc, req, link![1]!, link![2] === 'link-cancel', ui);
}

function count(host: SignInHost, p: SocialProvider, result: SocialResult): void {
  host.ctx.metrics.socialLogins.inc({ provider: p.label, result });
}

function expiredPage(ui: PageUi, mismatch = false): HttpResponse {
  return page(400, socialErrorPage({ ui, title: ui.t('signin.expired.title'), message: ui.t(mismatch ? 'signin.mismatch.message' : 'signin.expired.message') }));
}

/** `early`: the page context before the interaction is read (without its ui_locales). */
async function startFlow(host: SignInHost, sc: SocialContext, p: SocialProvider, req: HttpRequest, uid: string, early: PageUi): Promise<HttpResponse> {
  return withNodeObjects(req, host.target, async (nreq, nres) => {
    let details: Interaction;
    try {
      details = await host.provider.interactionDetails(nreq as never, nres as never);
    } catch {
      return expiredPage(early);
    }
    if (details.uid !== uid || details.prompt.name !== 'login') return expiredPage(early, true);
    // Its page in the sign-in's language, as the sign-in page was (ui_locales).
    const { ui } = pageUiFor(host, req, uid, details.params.ui_locales);
    const { state, flow } = sc.codec.create(p.name, uid);
    const sent = sc.relayIssuer ? sc.relay.sign(host.tenant, state) : state;
    let location: string;
    try {
      location = await authorizationUrl(host.ctx, p, { redirectUri: callbackUrl(sc, p.name), state: sent, nonce: flow.nonce, verifier: flow.verifier, timeoutMs: sc.settings.timeoutMs });
    } catch (err) {
      count(host, p, 'upstream_failed');
      host.ctx.log.warn({ req_id: req.id, tenant: host.tenant, provider: p.name, reason: err instanceof Error ? err.message : String(err) }, 'social sign-in could not start: upstream unavailable');
      const vars = { provider: p.displayName };
      return page(502, socialErrorPage({ ui, title: ui.t('social.down.title', vars), message: ui.t('social.down.message', vars), back: `${host.target.mountPath}/interaction/${encodeURIComponent(uid)}` }));
    }
    return withCookie(redirect(location), bindingCookie(host, sc.codec.binding(flow.jti), 900));
  });
}

/** form_post: the same parameters as a query, by a 303 (a top-level GET carries SameSite=Lax cookies). */
function formPostToQuery(req: HttpRequest): HttpResponse {
  const form = readForm(req) ?? new URLSearchParams();
  const query = new URLSearchParams();
  for (const key of CALLBACK_PARAMS) {
    const value = form.get(key);
    if (value !== null && value.length <= MAX_PARAM) query.set(key, value);
  }
  return redirect(`${req.path}?${query.toString()}`);
}

type Fail = (status: number, result: SocialResult, reason: string, title: string, message: string, back?: string, userId?: string) => Promise<HttpResponse>;

async function finishFlow(host: SignInHost, sc: SocialContext, p: SocialProvider, req: HttpRequest): Promise<HttpResponse> {
  const { ctx, tenant } = host;
  const vars = { provider: p.displayName };
  const q = new URLSearchParams(req.rawQuery);
  const clear = bindingCookie(host, '', 0);
  const who: Who = { ip_address: req.ip, user_agent: req.headers['user-agent'] ?? null };
  // The sign-in's `ui_locales`, once the state has named its interaction: every page from then on
  // is in the language the sign-in page was in (CONTRACT.md "Languages").
  let uiLocales: unknown;
  const uiFor = (back?: string) => resultPageUi(host.ui, req, back, uiLocales);
  let { t } = uiFor();
  const fail: Fail = async (status, result, reason, title, message, back, userId) => {
    count(host, p, result);
    ctx.log.info({ req_id: req.id, tenant, provider: p.name, result, reason }, 'social sign-in refused');
    await ctx.audit.record(tenant, { type: 'social_login', status: 'failed', user_id: userId ?? null, ...who, details: { provider: p.name, reason: result, ...(userId ? { user_id: userId } : {}) } });
    return withCookie(page(status, socialErrorPage({ ui: uiFor(back), title, message, ...(back ? { back } : {}) })), clear);
  };
  const invalid = (reason: string) => fail(400, 'invalid_state', reason, t('social.invalid.title'), t('social.invalid.message'));

  // 1. The state: the relay envelope (naming this tenant) when callbacks go through _ops, then ours.
  let raw = q.get('state') ?? '';
  if (sc.relayIssuer) {
    const relayed = sc.relay.read(raw);
    if (!relayed || relayed.tenant !== tenant) return invalid('relay envelope invalid, expired or of another tenant');
    raw = relayed.state;
  }
  const flow = sc.codec.read(raw, p.name);
  if (flow === 'expired') return fail(400, 'expired', 'state expired', t('signin.expired.title'), t('social.expired.message'));
  if (typeof flow === 'string') return invalid(`state ${flow}`);
  const back = `${host.target.mountPath}/interaction/${encodeURIComponent(flow.uid)}`;
  // The sign-in it belongs to (a link from the account page has none).
  const interaction = flow.link ? undefined : await host.provider.Interaction.find(flow.uid);
  uiLocales = interaction?.params.ui_locales;
  ({ t } = uiFor());
  // 2. The browser that started it (a callback URL handed to someone else does not sign them in).
  if (!sc.codec.bindingValid(flow.jti, cookieOf(req, BINDING_COOKIE))) {
    return fail(400, 'wrong_browser', 'binding cookie missing or not of this state', t('social.invalid.title'), t('social.wrong_browser.message'));
  }
  // 3. Once only.
  if (!(await sc.replay.unique('social-state', flow.jti, flow.exp))) {
    return fail(400, 'replayed_state', 'state already used', t('social.replayed.title'), t('social.replayed.message'));
  }
  // A link started from the account page (src/oidc/social-account-link.ts), not a sign-in.
  if (flow.link) return finishAccountLink(host, sc, p, req, flow.link, { verifier: flow.verifier, nonce: flow.nonce }, clear);
  if (!interaction) return fail(400, 'expired', 'interaction gone', t('signin.expired.title'), t('signin.expired.message'));
  who.client_id = typeof interaction.params.client_id === 'string' ? interaction.params.client_id : null;

  // 4. The upstream's answer.
  const error = q.get('error');
  if (error !== null) {
    if (error === 'access_denied') return fail(401, 'upstream_denied', 'upstream error access_denied', t('social.cancelled.title'), t('social.cancelled.message', vars), back);
    return fail(502, 'upstream_denied', `upstream error ${error.slice(0, 64)}`, t('social.failed.title', vars), t('social.failed.message', vars), back);
  }
  const code = q.get('code');
  if (!code || code.length > MAX_PARAM) return fail(400, 'upstream_failed', 'no code', t('social.failed.title', vars), t('social.no_code.message', vars), back);
  let identity: UpstreamIdentity;
  try {
    identity = await exchangeCode(ctx, p, { code, redirectUri: callbackUrl(sc, p.name), verifier: flow.verifier, nonce: flow.nonce, iss: q.get('iss') ?? undefined, appleUser: appleUser(q.get('user')), timeoutMs: sc.settings.timeoutMs });
  } catch (err) {
    if (!(err instanceof UpstreamError)) throw err;
    if (err.reason === 'timeout') return fail(502, 'upstream_failed', `${err.reason}: ${err.message}`, t('social.timeout.title', vars), t('social.timeout.message', vars), back);
    return fail(502, 'upstream_failed', `${err.reason}: ${err.message}`, t('social.failed.title', vars), t('social.unverified.message', vars), back);
  }

  // 5. Who that is here.
  const resolution = await resolveAccount(ctx, tenant, sc.config, p, identity);
  if (resolution.kind === 'refused') {
    const key = ({ email_in_use: 'social.refused.email_in_use', signup_closed: 'social.refused.signup_closed', domain_not_allowed: 'social.refused.domain_not_allowed', no_email: 'social.refused.no_email' } as const)[resolution.reason];
    return fail(403, 'refused', resolution.reason, t('social.refused.title'), t(key, vars), back);
  }
  if (resolution.kind === 'confirm_link') {
    const pending: PendingLink = { accountId: resolution.user.id, provider: p.name, subject: identity.subject, email: resolution.user.email ?? identity.email!, exp: Math.floor(Date.now() / 1000) + MFA_PENDING_SECONDS };
    await saveInteractionResult(host.provider, flow.uid, { [LINK_PENDING]: pending });
    count(host, p, 'link_required');
    return withCookie(redirect(back), clear);
  }
  let user: UserRecord;
  let result: SocialResult = 'success';
  if (resolution.kind === 'create') {
    const created = await createSocialUser(ctx, tenant, p, identity, who);
    if (!created) return fail(409, 'refused', 'e-mail taken meanwhile', t('social.refused.title'), t('social.refused.raced'), back);
    user = created;
    result = 'created';
  } else {
    user = resolution.user;
    await ctx.storage.socialIdentities.touch(tenant, p.name, identity.subject, new Date().toISOString());
  }
  return withCookie(await completeSignIn(host, p, interaction as unknown as Interaction, user, ['fed'], who, result, fail, uiFor(back)), clear);
}

/** The user is known: a second factor when enrolled, otherwise the login handed to oidc-provider. */
async function completeSignIn(host: SignInHost, p: SocialProvider, details: Interaction, user: UserRecord, amr: FirstFactor['amr'], who: Who, result: SocialResult, fail: Fail, ui: PageUi): Promise<HttpResponse> {
  const { ctx, tenant } = host;
  const back = `${host.target.mountPath}/interaction/${encodeURIComponent(details.uid)}`;
  const found = await host.guard.liftExpiredLock(tenant, user);
  if (!canSignIn(found)) {
    return fail(403, 'refused', found.account_enabled ? 'account_locked' : 'account_disabled', ui.t('social.refused.title'), ui.t('signin.cannot'), undefined, user.id);
  }
  // The upstream vouches for one factor; the second is this service's own (TOTP, a recovery code or
  // a passkey), and under required MFA a user without one enrols here as after a password.
  if (await holdForSecondStep(host, details.uid, found, { amr, method: `social:${p.name}` })) {
    count(host, p, 'mfa_required');
    return redirect(back);
  }
  count(host, p, result);
  await ctx.storage.users.update(tenant, found.id, { last_login_at: new Date().toISOString() });
  await ctx.audit.record(tenant, { type: 'social_login', status: 'success', username: found.email, user_id: found.id, ...who, details: { user_id: found.id, provider: p.name } });
  await ctx.audit.record(tenant, { type: 'login', status: 'success', username: found.email, user_id: found.id, ...who, details: { method: `social:${p.name}` } });
  await ctx.audit.record(tenant, { type: 'session.created', status: 'info', username: found.email, user_id: found.id, ...who, details: { user_id: found.id } });
  const interactionResult: InteractionResults = { login: { accountId: found.id, amr, remember: true } };
  const client = await host.loadClient(String(details.params.client_id ?? ''));
  if (client?.metadata.first_party) interactionResult.consent = { grantId: await grantConsent(host, details, found.id) };
  return redirect(await saveInteractionResult(host.provider, details.uid, interactionResult));
}

/** The password confirmation (or its cancellation) of a pending link. */
async function confirmLink(host: SignInHost, sc: SocialContext, req: HttpRequest, uid: string, cancel: boolean, early: PageUi): Promise<HttpResponse> {
  const { ctx, tenant } = host;
  return withNodeObjects(req, host.target, async (nreq, nres) => {
    let details: Interaction;
    try {
      details = await host.provider.interactionDetails(nreq as never, nres as never);
    } catch {
      return expiredPage(early);
    }
    // The link page again (wrong password) in the sign-in's language, as it was first drawn (ui_locales).
    const { ui } = pageUiFor(host, req, uid, details.params.ui_locales);
    const { t } = ui;
    const base = `${host.target.mountPath}/interaction/${encodeURIComponent(uid)}`;
    const form = readForm(req);
    if (details.uid !== uid || !form || !csrfValid(host, uid, form.get('csrf_token'))) {
      return page(403, socialErrorPage({ ui, title: t('page.form_expired.title'), message: t('page.form_expired.message') }));
    }
    const pending = pendingLink(details);
    const p = pending ? sc.settings.providers.find((x) => x.name === pending.provider) : undefined;
    if (!pending || !p) return redirect(base);
    if (cancel) {
      await saveInteractionResult(host.provider, uid, {});
      return redirect(base);
    }
    const vars = { provider: p.displayName };
    const who: Who = { ip_address: req.ip, user_agent: req.headers['user-agent'] ?? null, client_id: typeof details.params.client_id === 'string' ? details.params.client_id : null };
    // The submission ends at the client's redirect URI: the form's CSP must allow it (as on the sign-in page).
    const targets = formTargetOf(typeof details.params.redirect_uri === 'string' ? details.params.redirect_uri : undefined);
    const again = (status: number, error: string) =>
      page(status, socialLinkPage({ ui, action: `${base}/link`, cancelAction: `${base}/link-cancel`, csrf: csrfFor(host, uid), provider: p.displayName, email: pending.email, error }), targets);
    const cannot = () => page(403, socialErrorPage({ ui, title: t('social.refused.title'), message: t('signin.cannot') }));
    if (!(await host.guard.allowIp(tenant, req.ip))) return again(429, t('signin.too_many'));
    const password = form.get('password') ?? '';
    if (!password || password.length > 1024) return again(400, t('social.link.missing_password'));
    const found = await ctx.storage.users.get(tenant, pending.accountId);
    const user = found ? await host.guard.liftExpiredLock(tenant, found) : undefined;
    if (!user || user.deleted_at) return redirect(base);
    if (!user.password_hash) return again(400, t('social.link.no_password', vars));
    const ok = await ctx.passwords.verify(user.password_hash, password);
    if (!ok) {
      ctx.metrics.loginAttempts.inc({ result: 'failure' });
      await ctx.audit.record(tenant, { type: 'failed_login', status: 'failed', username: user.email, user_id: user.id, ...who, details: { reason: 'wrong_password', step: 'social_link', provider: p.name } });
      if (await host.guard.recordFailure(tenant, user, req.ip, req.headers['user-agent'], t.lang)) return cannot();
      return again(401, t('social.link.wrong_password'));
    }
    if (!canSignIn(user)) return cannot();
    const identity: UpstreamIdentity = { subject: pending.subject, email: pending.email, emailVerified: true, claims: {} };
    if ((await linkIdentity(ctx, tenant, user, p, identity, who)) === 'taken') {
      return page(409, socialErrorPage({ ui, title: t('social.link.taken.title'), message: t('social.link.taken.message', vars) }));
    }
    await host.guard.recordSuccess(tenant, user);
    const fail: Fail = async (status, result, reason, title, message, back) => {
      count(host, p, result);
      ctx.log.info({ req_id: req.id, tenant, provider: p.name, result, reason }, 'social sign-in refused');
      return page(status, socialErrorPage({ ui, title, message, ...(back ? { back } : {}) }));
    };
    return completeSignIn(host, p, details, user, ['pwd', 'fed'], who, 'linked', fail, ui);
  });
}
