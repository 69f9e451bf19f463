/**
 * Errors a person sees: when a browser navigates to a page of the service (authorization, device,
 * sign-out, interaction, account and console paths, `Accept: text/html`) and the request fails
 * before a page could be drawn (unknown, suspended or unnamed tenant, storage down) or oidc-provider
 * refuses it (unregistered redirect_uri, unknown client), it gets a styled, translated page with a
 * plain explanation and the request id, instead of problem+json or protocol wording. APIs (any other
 * path or Accept) keep their JSON, and so does `_ops`, which has no pages (app.ts asks the front door).
 */
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { html } from './escape.js';
import { pageHeaders } from './html.js';
import type { MessageKey } from './i18n/index.js';
import { buildPageUi, type PageUi } from './page-ui.js';
import { messagePage } from './pages.js';

/** The stylesheet every tenant serves; also served without a tenant at this path (app.ts). */
export const GLOBAL_STYLESHEET_PATH = '/assets/app.css';

/** Problem codes (urn:svc:error:<code>) with an explanation of their own. */
const PROBLEM_MESSAGES: Record<string, MessageKey> = {
  'not-found': 'page.error.tenant_unknown',
  'tenant-suspended': 'page.error.tenant_suspended',
  'tenant-unresolved': 'page.error.tenant_unresolved',
  'invalid-tenant': 'page.error.tenant_unresolved',
  unavailable: 'page.error.unavailable',
};

/** True for a browser navigating to one of the service's pages under `oidcPath` or the page roots. */
export function wantsErrorPage(req: Pick<HttpRequest, 'method' | 'path' | 'headers'>, oidcPath: string): boolean {
  if (req.method !== 'GET' && req.method !== 'POST' && req.method !== 'HEAD') return false;
  if (!(req.headers.accept ?? '').includes('text/html')) return false;
  const p = req.path;
  if (p.startsWith(`${oidcPath}/`)) {
    const sub = p.slice(oidcPath.length);
    return /^\/(auth|device|session\/end|interaction|account|social)(\/|$)/.test(sub);
  }
  return /^\/(account|admin)(\/|$)/.test(p);
}

/** What a refused request was for: a refused sign-out is explained as one, never as a sign-in. */
export type PageFlow = 'sign_in' | 'sign_out';

/** oidc-provider's descriptions of a logout confirmation whose logout state is gone or replaced. */
const STALE_LOGOUT = new Set(['could not find logout details', 'xsrf token invalid']);

/**
 * The explanation of an oidc-provider refusal: its error code and English description mapped to a
 * message a person understands (the protocol text stays in the log). `sign_out`: the end-session
 * request and its confirmation, refused before anything was signed out.
 */
export function protocolMessage(error: string, description: string | undefined, flow: PageFlow = 'sign_in'): MessageKey {
  const signOut = flow === 'sign_out';
  if (error === 'invalid_redirect_uri' || (description ?? '').includes('redirect_uri')) return signOut ? 'page.error.logout_redirect_uri' : 'page.error.redirect_uri';
  if (error === 'invalid_client' || error === 'unauthorized_client') return signOut ? 'page.error.logout_client' : 'page.error.client';
  if (error === 'temporarily_unavailable') return 'page.error.unavailable';
  if (signOut) return STALE_LOGOUT.has(description ?? '') ? 'page.error.logout_expired' : 'page.error.logout_default';
  return 'page.error.default';
}

/** The error page of a problem (front-door refusal) for a browser. */
export function problemPage(req: HttpRequest, status: number, code: string, stylesheet = GLOBAL_STYLESHEET_PATH): HttpResponse {
  const { ui } = buildPageUi({ stylesheet }, { path: req.path, query: req.rawQuery, headers: req.headers });
  return { status, headers: pageHeaders(), body: errorPageHtml(ui, PROBLEM_MESSAGES[code] ?? 'page.error.default', req.id) };
}

export function errorPageHtml(ui: PageUi, message: MessageKey, requestId: string | undefined): string {
  const { t } = ui;
  return messagePage({
    ui,
    title: t('page.error.title'),
    message: t(message),
    error: true,
    links: requestId ? [html`<p><small>${t('page.error.reference', { id: requestId })}</small></p>`] : [],
  });
}
