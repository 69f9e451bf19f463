/**
 * Linking an upstream account from the account page (CONTRACT.md "Account page": links social
 * accounts, audit `social_link`). The signed-in user proves both sides: this service's session
 * started the flow, and the upstream sign-in ends it, so no password and no verified-e-mail rule.
 *   start   GET /account/social/link?provider=<name>&csrf_token=<t>  (src/ui/account/social-section.ts):
 *           the token is an HMAC bound to the sign-in session and the provider; the sealed state
 *           names the session and user, the browser-binding cookie is set as for sign-in.
 *   finish  {issuer}/social/<name>/callback (social-signin.ts, after state, binding and replay
 *           checks): the same session and user must still be signed in here; an upstream identity
 *           linked to another user is refused (409), one already linked to this user changes nothing.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { withNodeObjects } from '../http/koa-bridge.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { linkIdentity, type Who } from '../social/accounts.js';
import type { SocialProvider } from '../social/providers.js';
import { UpstreamError, authorizationUrl, exchangeCode, type UpstreamIdentity } from '../social/upstream.js';
import type { FlowState } from '../social/state.js';
import { socialErrorPage } from '../ui/social-pages.js';
import { canSignIn } from './accounts.js';
import { page, redirect, type SignInHost } from './interactions.js';
import { MAX_PARAM, appleUser, callbackUrl, resultPageUi, socialBindingCookie, type SocialContext } from './social-common.js';

const ACCOUNT_PAGE = '/account';

/** The upstream authorization request of a link, with its binding cookie; undefined when the upstream is unreachable. */
export async function startAccountLink(
  ctx: SignInHost['ctx'],
  target: { mountPath: string; origin: URL },
  sc: SocialContext,
  p: SocialProvider,
  link: NonNullable<FlowState['link']>,
): Promise<HttpResponse | undefined> {
  const { state, flow } = sc.codec.create(p.name, 'account', Date.now(), link);
  const sent = sc.relayIssuer ? sc.relay.sign(flow.tenant, state) : state;
  try {
    const location = await authorizationUrl(ctx, p, { redirectUri: callbackUrl(sc, p.name), state: sent, nonce: flow.nonce, verifier: flow.verifier, timeoutMs: sc.settings.timeoutMs });
    const res = redirect(location);
    res.headers = { ...res.headers, 'set-cookie': socialBindingCookie(target, sc.codec.binding(flow.jti), 900) };
    return res;
  } catch (err) {
    ctx.log.warn({ tenant: flow.tenant, provider: p.name, reason: err instanceof Error ? err.message : String(err) }, 'social link could not start: upstream unavailable');
    return undefined;
  }
}

/** The oidc-provider session of the request: its uid and account. */
async function sessionOf(host: SignInHost, req: HttpRequest): Promise<{ uid: string; accountId?: string }> {
  let found: { uid: string; accountId?: string } = { uid: '' };
  await withNodeObjects(req, host.target, async (nreq, nres) => {
    const session = await host.provider.Session.get(host.provider.createContext(nreq as IncomingMessage, nres as ServerResponse));
    found = { uid: session.uid, ...(session.accountId ? { accountId: session.accountId } : {}) };
    return { status: 204 };
  });
  return found;
}

export async function finishAccountLink(
  host: SignInHost,
  sc: SocialContext,
  p: SocialProvider,
  req: HttpRequest,
  link: NonNullable<FlowState['link']>,
  secrets: { verifier: string; nonce: string },
  clear: string,
): Promise<HttpResponse> {
  const { ctx, tenant } = host;
  // Every refusal leads back to the account page: so does its language switcher.
  const ui = resultPageUi(host.ui, req, ACCOUNT_PAGE);
  const { t } = ui;
  const vars = { provider: p.displayName };
  const q = new URLSearchParams(req.rawQuery);
  const who: Who = { ip_address: req.ip, user_agent: req.headers['user-agent'] ?? null };
  const end = (res: HttpResponse) => {
    res.headers = { ...res.headers, 'set-cookie': clear };
    return res;
  };
  const refuse = async (status: number, reason: string, title: string, message: string, userId: string | null) => {
    ctx.metrics.socialLogins.inc({ provider: p.label, result: 'refused' });
    ctx.log.info({ req_id: req.id, tenant, provider: p.name, reason }, 'social link refused');
    await ctx.audit.record(tenant, { type: 'social_link', status: 'failed', user_id: userId, ...who, details: { provider: p.name, reason, ...(userId ? { user_id: userId } : {}) } });
    return end(page(status, socialErrorPage({ ui, title, message, back: ACCOUNT_PAGE })));
  };

  // The flow belongs to one sign-in session and user: a state started by another session is refused.
  const session = await sessionOf(host, req);
  if (session.uid !== link.session || session.accountId !== link.user) {
    return refuse(403, 'session_mismatch', t('social.invalid.title'), t('social.wrong_browser.message'), null);
  }
  const user = await ctx.storage.users.get(tenant, link.user);
  if (!user || user.deleted_at || !canSignIn(user)) return refuse(403, 'account_unavailable', t('social.refused.title'), t('signin.cannot'), link.user);

  const error = q.get('error');
  if (error !== null) {
    if (error === 'access_denied') return refuse(401, 'upstream_denied', t('social.cancelled.title'), t('social.cancelled.message', vars), user.id);
    return refuse(502, `upstream error ${error.slice(0, 64)}`, t('social.failed.title', vars), t('social.account.link_failed', vars), user.id);
  }
  const code = q.get('code');
  if (!code || code.length > MAX_PARAM) return refuse(400, 'no code', t('social.failed.title', vars), t('social.no_code.message', vars), user.id);
  let identity: UpstreamIdentity;
  try {
    identity = await exchangeCode(ctx, p, { code, redirectUri: callbackUrl(sc, p.name), verifier: secrets.verifier, nonce: secrets.nonce, iss: q.get('iss') ?? undefined, appleUser: appleUser(q.get('user')), timeoutMs: sc.settings.timeoutMs });
  } catch (err) {
    if (!(err instanceof UpstreamError)) throw err;
    return refuse(502, `${err.reason}: ${err.message}`, t('social.failed.title', vars), t('social.account.link_failed', vars), user.id);
  }

  const existing = await ctx.storage.socialIdentities.find(tenant, p.name, identity.subject);
  if (existing && existing.user_id === user.id) return end(redirect(`${ACCOUNT_PAGE}?social=already&provider=${encodeURIComponent(p.name)}`));
  // Never moves an identity between users: whoever holds it keeps it.
  if (existing || (await linkIdentity(ctx, tenant, user, p, identity, who)) === 'taken') {
    return refuse(409, 'identity_linked_to_another_user', t('social.link.taken.title'), t('social.link.taken.message', vars), user.id);
  }
  ctx.metrics.socialLogins.inc({ provider: p.label, result: 'linked' });
  return end(redirect(`${ACCOUNT_PAGE}?social=linked&provider=${encodeURIComponent(p.name)}`));
}
