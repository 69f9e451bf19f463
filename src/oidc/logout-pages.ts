/**
 * RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0) around oidc-provider's end-session
 * endpoint: what its page hooks (sign-in-config.ts) need, and what the endpoint leaves to us.
 *
 * - Without a session (ended by the API, expired, ended in another tab, a fresh browser) nobody is
 *   asked: oidc-provider answers with its own auto-submitting form, whose submission is answered by
 *   a 303 to the client's post_logout_redirect_uri. Chromium checks form-action on that redirect,
 *   so the page's CSP allows the validated URI's origin (endSessionPages), never one taken from
 *   the request unvalidated.
 * - The language `ui_locales` asked for reaches the success page, a request of its own after the
 *   confirmation's redirect, in a short cookie on the end-session path (the logout state in the
 *   session is gone by then: the session is destroyed, or its state cleared on "Stay signed in").
 * - An id_token_hint naming another user than the signed-in one, or another session of the client,
 *   is suspect (RP-Initiated Logout 1.0 section 2): the request goes on as one without a client
 *   (docs/decisions.md "Logout with a hint for someone else").
 */
import type { Client, KoaContextWithOIDC } from 'oidc-provider';
import type { Logger } from '../log.js';
import { autoSubmitHeaders, formTargetOf } from '../ui/html.js';
import { isLocale, type Locale } from '../ui/i18n/index.js';
import { uiLocalesLocale, type LocaleSettings } from '../ui/i18n/negotiate.js';
import { cookieValue } from '../ui/page-ui.js';

/** The language `ui_locales` asked for on the end-session request, for the pages after it. */
export const LOGOUT_LANG_COOKIE = 'svc_logout_lang';
/** Long enough for the question to wait a while; the cookie says nothing but a language. */
const LOGOUT_LANG_MAX_AGE = 1800;

/** The part of the session state oidc-provider's end-session endpoint keeps for its confirmation. */
interface LogoutState {
  clientId?: string;
  state?: string;
  postLogoutRedirectUri?: string;
}

/**
 * The post_logout_redirect_uri of the request when it is registered for the request's client (the
 * client of id_token_hint or client_id); undefined otherwise. oidc-provider already refused an
 * unregistered one or dropped it without a client; checked again here, where a CSP is built on it.
 */
export function validatedPostLogoutUri(ctx: KoaContextWithOIDC): string | undefined {
  const uri = (ctx.oidc.params as { post_logout_redirect_uri?: unknown } | undefined)?.post_logout_redirect_uri;
  const client = ctx.oidc.client;
  return typeof uri === 'string' && client?.postLogoutRedirectUriAllowed(uri) ? uri : undefined;
}

/**
 * True unless the id_token_hint is for someone else than the signed-in session: its `sub` must be
 * the session account's subject at the hint's client (pairwise for a pairwise client, as in
 * oidc-provider's own id_token_hint check at the authorization endpoint) and its `sid`, when both
 * it and the session's authorization of that client have one, the session's. No hint, no client
 * or no session: nothing to compare.
 */
export function hintMatchesSession(ctx: KoaContextWithOIDC, subjectOf: (accountId: string, client: Client) => string): boolean {
  const hint = ctx.oidc.entities.IdTokenHint?.payload;
  const { client, session } = ctx.oidc;
  const accountId = session?.accountId;
  if (!hint || !client || !accountId) return true;
  if (hint.sub !== subjectOf(accountId, client)) return false;
  // Read directly: Session#sidFor would add an empty authorization for a client the session never had.
  const sid = session.authorizations?.[client.clientId]?.sid;
  return hint.sid === undefined || sid === undefined || hint.sid === sid;
}

/**
 * The end-session request goes on as one without a client: the confirmation neither redirects to
 * the hint client's URI (nor hands it the state) nor names or revokes that client, and its audit
 * entry has no client. The question page, drawn after this, does not name it either.
 */
export function forgetHintClient(ctx: KoaContextWithOIDC, log: Logger, tenant: string): void {
  const state = ctx.oidc.session?.state as LogoutState | undefined;
  if (state) {
    state.clientId = undefined;
    state.state = undefined;
    state.postLogoutRedirectUri = undefined;
  }
  log.warn({ tenant, client_id: ctx.oidc.client?.clientId }, 'end-session id_token_hint is for another user or session than the signed-in one: treated as a logout without a client');
}

const cookiePath = (mountPath: string) => `${mountPath}/session/end`;

/** The language carried from the end-session request (its cookie), on the confirmation and success pages. */
export function carriedUiLocales(ctx: KoaContextWithOIDC): Locale | undefined {
  const route = (ctx.oidc as KoaContextWithOIDC['oidc'] | undefined)?.route;
  if (route !== 'end_session_confirm' && route !== 'end_session_success') return undefined;
  const lang = cookieValue(ctx.get('cookie'), LOGOUT_LANG_COOKIE);
  return isLocale(lang) ? lang : undefined;
}

/** The success page closes the flow: the carried language is not kept for anything after it. */
export function dropCarriedLanguage(ctx: KoaContextWithOIDC, mountPath: string): void {
  if (cookieValue(ctx.get('cookie'), LOGOUT_LANG_COOKIE) === undefined) return;
  ctx.append('set-cookie', `${LOGOUT_LANG_COOKIE}=; Path=${cookiePath(mountPath)}; Max-Age=0; SameSite=Lax; HttpOnly`);
}

/**
 * After oidc-provider's answer to the end-session request (the question page, or without a session
 * its auto-submitting form): the language of `ui_locales` carried on (a request without one drops
 * an earlier one), and the form page's headers with the validated post_logout_redirect_uri allowed.
 */
export function endSessionPages(host: { mountPath: string; ui: { application?: LocaleSettings } }) {
  return async function endSessionPages(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
    await next();
    const oidc = ctx.oidc as KoaContextWithOIDC['oidc'] | undefined;
    if (oidc?.route !== 'end_session' || ctx.status !== 200) return;
    const uiLocales = (oidc.params as { ui_locales?: unknown } | undefined)?.ui_locales;
    const lang = typeof uiLocales === 'string' ? uiLocalesLocale(uiLocales, host.ui.application) : undefined;
    if (lang) ctx.append('set-cookie', `${LOGOUT_LANG_COOKIE}=${lang}; Path=${cookiePath(host.mountPath)}; Max-Age=${LOGOUT_LANG_MAX_AGE}; SameSite=Lax; HttpOnly`);
    else dropCarriedLanguage(ctx, host.mountPath);
    // The question page (logoutSource) has its headers; oidc-provider's own form page has none yet.
    if (typeof ctx.body === 'string' && !ctx.response.get('content-security-policy')) {
      for (const [k, v] of Object.entries(autoSubmitHeaders(ctx.body, formTargetOf(validatedPostLogoutUri(ctx))))) ctx.set(k, v);
    }
  };
}
