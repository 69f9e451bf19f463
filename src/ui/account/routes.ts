/**
 * The tenant's self-service pages on its own origin, under /account (the actor hands every
 * /account request here). Sign-up lives with the sign-in interaction (it continues it): see
 * signup.ts, routed by the OIDC interaction routes.
 */
import type { HttpRequest, HttpResponse } from '../../http/types.js';
import { messagePage } from '../pages.js';
import { buildPageUi } from '../page-ui.js';
import type { AccountHost } from './host.js';
import type { WindowLimiter } from './limiter.js';
import { FORGOT_PATH, RESET_PATH, handlePasswordReset } from './password-reset.js';
import { htmlPage } from './respond.js';
import { VERIFY_PATH, handleVerify } from './verify.js';
import { handleAccountPage } from './account-page.js';
import { ACCOUNT_PATH, CALLBACK_PATH } from './session.js';
import { PASSKEY_OPTIONS_PATH, handlePasskeyOptions } from './passkeys-section.js';
import { LINK_PATH, handleSocialLink } from './social-section.js';

/**
 * Further /account routes (the account page, passkeys, linked accounts) register here: a path
 * and its handler. Kept as a list so features add a line, not a branch.
 */
export type AccountRoute = { path: string; handle: (host: AccountHost, req: HttpRequest, limiter: WindowLimiter) => Promise<HttpResponse> };

const accountPage: AccountRoute['handle'] = (host, req, limiter) => handleAccountPage(host, req, host.exchange, limiter);

export const ACCOUNT_ROUTES: AccountRoute[] = [
  { path: ACCOUNT_PATH, handle: accountPage },
  { path: CALLBACK_PATH, handle: accountPage },
  { path: FORGOT_PATH, handle: handlePasswordReset },
  { path: RESET_PATH, handle: handlePasswordReset },
  { path: VERIFY_PATH, handle: handleVerify },
  { path: PASSKEY_OPTIONS_PATH, handle: (host, req) => handlePasskeyOptions(host, req) },
  { path: LINK_PATH, handle: (host, req) => handleSocialLink(host, req) },
];

export async function handleAccountRequest(host: AccountHost, req: HttpRequest, limiter: WindowLimiter): Promise<HttpResponse> {
  const route = ACCOUNT_ROUTES.find((r) => r.path === req.path);
  if (route) return route.handle(host, req, limiter);
  const { ui } = buildPageUi(host.ui, { path: req.path, headers: req.headers });
  return htmlPage(404, messagePage({ ui, title: ui.t('page.not_found.title'), message: ui.t('page.not_found.message'), error: true }));
}
