/**
 * Password reset by e-mail (CONTRACT.md "Password reset"):
 *  GET/POST /account/password/forgot   the request form; the same answer whether the account
 *                                      exists or not, a mail only when it does; limits per address
 *                                      and per IP; audit `password_reset_requested`.
 *  GET/POST /account/password/reset    the mailed link (?token=): a single-use, expiring token
 *                                      stored as its sha256; the new password under the policy;
 *                                      afterwards every session and refresh token of the user ends;
 *                                      audit `password_reset`, a security alert.
 */
import type { HttpRequest, HttpResponse } from '../../http/types.js';
import { ipLimitKey } from '../../http/ip.js';
import { revokeAccount } from '../../sessions/store.js';
import type { UserRecord } from '../../storage/types.js';
import { unmetPasswordRules } from '../../users/password-policy.js';
import { html } from '../escape.js';
import { passwordResetMail } from '../mail-templates.js';
import { messagePage } from '../pages.js';
import { buildPageUi, type PageUi } from '../page-ui.js';
import type { Locale } from '../i18n/index.js';
import { formCsrf, formCsrfValid } from './csrf.js';
import { afterAnswer, hashToken, issueToken, mailAvailable, resetTtlSeconds, sendMail, wellFormedToken, type AccountHost } from './host.js';
import type { WindowLimiter } from './limiter.js';
import { backLink, forgotPage, resetPage } from './pages.js';
import { passwordRuleMessage } from './password-messages.js';
import { htmlPage } from './respond.js';
import { securityAlert } from './alerts.js';

export const FORGOT_PATH = '/account/password/forgot';
export const RESET_PATH = '/account/password/reset';

/**
 * Per address: a few mails an hour is enough for a real person and useless for mail-bombing. Also
 * the limit of the account page's confirmation mails to a new address (builtin-sections.ts).
 */
export const MAILS_PER_ADDRESS = { limit: 3, windowSeconds: 3600 };
const PER_IP = { limit: 20, windowSeconds: 3600 };
const EMAIL = /^[^\s@<>()[\]\\,;:"]{1,64}@[^\s@<>()[\]\\,;:"]{1,255}$/;

export function readForm(req: HttpRequest): URLSearchParams | undefined {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  return type === 'application/x-www-form-urlencoded' ? new URLSearchParams(req.body.toString('utf8')) : undefined;
}

/** "Back to sign in" only to this tenant's own interaction pages (never an open redirect). */
export function safeReturn(host: AccountHost, value: string | null): string | undefined {
  if (!value) return undefined;
  const pattern = new RegExp(`^${host.mountPath.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}/interaction/[A-Za-z0-9_-]{1,128}$`);
  return pattern.test(value) ? value : undefined;
}

function who(req: HttpRequest) {
  return { ip_address: req.ip, user_agent: req.headers['user-agent'] ?? null };
}

export async function handlePasswordReset(host: AccountHost, req: HttpRequest, limiter: WindowLimiter): Promise<HttpResponse> {
  const isForgot = req.path === FORGOT_PATH;
  const query = new URLSearchParams(req.rawQuery);
  // The switcher's links keep only what this page understands (a checked return path, the token),
  // from the query of a GET or the form of a POST: a new password refused by the policy is drawn
  // again, and its switcher must lead back to that form, not to "link no longer valid".
  const given = req.method === 'POST' ? (readForm(req) ?? new URLSearchParams()) : query;
  const kept = new URLSearchParams();
  const back = safeReturn(host, query.get('return'));
  const givenBack = safeReturn(host, given.get('return'));
  if (isForgot && givenBack) kept.set('return', givenBack);
  if (!isForgot && wellFormedToken(given.get('token'))) kept.set('token', given.get('token')!);
  if (query.get('lang')) kept.set('lang', query.get('lang')!);
  // The sign-in page's language (links.ts), a preference like the relying party's own ui_locales:
  // it ranks below a choice made with the switcher, and is never remembered.
  const uiLocales = (query.get('ui_locales') ?? '').slice(0, 100);
  const { ui, setCookie: langCookie } = buildPageUi(host.ui, { path: req.path, query: kept.toString(), headers: req.headers }, uiLocales);
  const { t } = ui;
  // The request form posts back with the language it was drawn in, so its answer and its mail keep it.
  const forgotAction = uiLocales ? `${FORGOT_PATH}?ui_locales=${t.lang}` : FORGOT_PATH;
  const secure = host.origin.protocol === 'https:';
  const csrf = formCsrf(host.csrfKey, req.headers.cookie, secure);
  const cookies = [langCookie, csrf.setCookie];
  const message = (status: number, title: string, text: string, error = false) => htmlPage(status, messagePage({ ui, title, message: text, error }), cookies);

  if (!mailAvailable(host)) return message(404, t('page.not_found.title'), t('page.not_found.message'), true);
  if (req.method !== 'GET' && req.method !== 'POST') return { status: 405, headers: { allow: 'GET, POST', 'cache-control': 'no-store' } };

  if (req.method === 'GET') {
    if (isForgot) return htmlPage(200, forgotPage({ ui, action: forgotAction, csrf: csrf.token, back }), cookies);
    const token = query.get('token');
    const record = wellFormedToken(token) ? await host.ctx.storage.accountTokens.findUsable(host.tenant, 'password_reset', hashToken(token), new Date().toISOString()) : undefined;
    if (!record) return invalidLink(ui, cookies);
    return htmlPage(200, resetPage({ ui, action: RESET_PATH, csrf: csrf.token, token: token!, email: record.email, minLength: host.config.security.password_policy.min_length }), cookies);
  }

  const form = readForm(req);
  if (!form || !formCsrfValid(host.csrfKey, req.headers.cookie, form.get('csrf_token'))) {
    host.ctx.log.info({ req_id: req.id, tenant: host.tenant, path: req.path }, 'self-service form refused: missing or invalid CSRF token');
    return message(403, t('page.form_expired.title'), t('page.form_expired.message'), true);
  }
  return isForgot ? requestReset(host, req, form, ui, cookies, csrf.token, limiter, forgotAction) : completeReset(host, req, form, ui, cookies, csrf.token);
}

function invalidLink(ui: PageUi, cookies: Array<string | undefined>): HttpResponse {
  const { t } = ui;
  // In this page's language, as a preference (not the switcher's remembered choice).
  const again = html`<p><a href="${FORGOT_PATH}?ui_locales=${t.lang}">${t('reset.again')}</a></p>`;
  return htmlPage(400, messagePage({ ui, title: t('reset.invalid.title'), message: t('reset.invalid.message'), error: true, links: [again] }), cookies);
}

async function requestReset(host: AccountHost, req: HttpRequest, form: URLSearchParams, ui: PageUi, cookies: Array<string | undefined>, csrf: string, limiter: WindowLimiter, action: string): Promise<HttpResponse> {
  const { t } = ui;
  const email = (form.get('email') ?? '').trim().slice(0, 320);
  // The way back to sign-in the form was drawn with (a hidden field), checked as the GET's query is.
  const back = safeReturn(host, form.get('return'));
  if (!EMAIL.test(email)) return htmlPage(400, forgotPage({ ui, action, csrf, email, error: t('reset.request.invalid_email'), back }), cookies);
  const ttl = resetTtlSeconds(host);
  const sent = htmlPage(200, messagePage({ ui, title: t('reset.sent.title'), message: t('reset.sent.message', { email, minutes: Math.round(ttl / 60) }), links: [backLink(ui, back)] }), cookies);

  // Limits answer like success: a refusal would tell an attacker the address is being watched. The
  // lookup, limits, audit entry, token and mail come after the answer, for every address alike, so
  // the answer's time does not tell whether an account has it (as the account page's e-mail change).
  afterAnswer(host, 'password_reset_request', () => sendReset(host, req, email, ui.t.lang, ttl, limiter, back));
  return sent;
}

/** After the answer: the reset mail when the address finds an account that may have one, within the limits; audited in every case. */
async function sendReset(host: AccountHost, req: HttpRequest, email: string, lang: Locale, ttl: number, limiter: WindowLimiter, back: string | undefined): Promise<void> {
  // The per-address count first, before any lookup: requests are counted in the order they came
  // (a slow lookup of one let later ones overtake it in the count).
  const ipOk = await limiter.allow(`${host.tenant}:reset-ip:${ipLimitKey(req.ip)}`, PER_IP.limit, PER_IP.windowSeconds);
  const user = await host.ctx.storage.users.findByEmail(host.tenant, email);
  // Per account when the address finds one: the storage matches addresses case-insensitively by
  // rules JavaScript's toLowerCase does not share (İ), so a key on the typed text gave each
  // spelling of one address its own three mails.
  const addressOk = await limiter.allow(`${host.tenant}:reset-addr:${user ? `user:${user.id}` : email.toLowerCase()}`, MAILS_PER_ADDRESS.limit, MAILS_PER_ADDRESS.windowSeconds);
  const eligible = user && !user.deleted_at && user.account_enabled && user.email;
  await host.ctx.audit.record(host.tenant, {
    type: 'password_reset_requested',
    status: ipOk && addressOk ? 'info' : 'warning',
    username: email,
    user_id: user?.id ?? null,
    ...who(req),
    details: { user_id: user?.id ?? null, mail_sent: Boolean(eligible && ipOk && addressOk), ...(ipOk && addressOk ? {} : { reason: ipOk ? 'address_limit' : 'ip_limit' }) },
  });
  if (!eligible || !ipOk || !addressOk) return;

  // A newer link replaces older ones.
  await host.ctx.storage.accountTokens.expireForUser(host.tenant, 'password_reset', user.id, new Date().toISOString());
  // The sign-in the request came from, for the "Password changed" page (checked again there).
  const raw = await issueToken(host, 'password_reset', user, user.email!, ttl, back ? { return: back } : null);
  const link = `${host.origin.origin}${RESET_PATH}?token=${raw}`;
  sendMail(host, 'password_reset', user, user.email!, lang, (a) => passwordResetMail(a, link, ttl));
}

async function completeReset(host: AccountHost, req: HttpRequest, form: URLSearchParams, ui: PageUi, cookies: Array<string | undefined>, csrf: string): Promise<HttpResponse> {
  const { t } = ui;
  const { ctx, tenant } = host;
  const token = form.get('token');
  const password = form.get('password') ?? '';
  if (!wellFormedToken(token)) return invalidLink(ui, cookies);
  const hash = hashToken(token);
  const record = await ctx.storage.accountTokens.findUsable(tenant, 'password_reset', hash, new Date().toISOString());
  if (!record) return invalidLink(ui, cookies);
  const user = await ctx.storage.users.get(tenant, record.user_id);
  if (!user || user.deleted_at || !user.account_enabled) return invalidLink(ui, cookies);

  const policy = host.config.security.password_policy;
  const unmet = unmetPasswordRules(password, policy, user.email);
  if (unmet.length) {
    const error = unmet.map((r) => passwordRuleMessage(t, r, policy)).join(' ');
    return htmlPage(400, resetPage({ ui, action: RESET_PATH, csrf, token, email: record.email, minLength: policy.min_length, error }), cookies);
  }
  // Hash before consuming: a full Argon2 queue (503) must not burn the link.
  const passwordHash = await ctx.passwords.hash(password);
  const used = await ctx.storage.accountTokens.consume(tenant, 'password_reset', hash, new Date().toISOString());
  if (!used) return invalidLink(ui, cookies);
  await setNewPassword(host, user, passwordHash);
  await ctx.audit.record(tenant, { type: 'password_reset', status: 'success', username: user.email, user_id: user.id, ...who(req), details: { user_id: user.id, by: 'user', method: 'email_link' } });
  if (!user.email_verified) await addressProven(host, req, user);
  securityAlert(host, user, 'password_changed', ui.t.lang);
  // Back to the sign-in the reset was asked from, when the link was asked from one (still checked:
  // stored data is not trusted as a redirect target).
  const back = safeReturn(host, typeof record.data?.return === 'string' ? record.data.return : null);
  // No language switcher: its links would open the used link again ("link no longer valid").
  const done = { ...ui, languages: [] };
  return htmlPage(200, messagePage({ ui: done, title: t('reset.done.title'), message: t('reset.done.message'), links: [backLink(ui, back)] }), cookies);
}

/**
 * A reset through the mailed link proves the address of an account that had not proven it (an
 * upstream's unverified e-mail created it through social login, or an administrator did): the
 * address is verified now, and the accounts linked while nobody had proven it are unlinked. An
 * attacker who signed up first with someone else's address through an upstream that does not
 * verify e-mails ("pre-account takeover") is locked out of the account its owner has just taken
 * back; the owner may link their own upstream accounts again from the account page.
 */
async function addressProven(host: AccountHost, req: HttpRequest, user: UserRecord): Promise<void> {
  const { ctx, tenant } = host;
  await ctx.storage.users.update(tenant, user.id, { email_verified: true });
  await ctx.audit.record(tenant, { type: 'email_verified', status: 'success', username: user.email, user_id: user.id, ...who(req), details: { user_id: user.id, method: 'password_reset' } });
  for (const link of await ctx.storage.socialIdentities.listByUser(tenant, user.id)) {
    if (!(await ctx.storage.socialIdentities.unlink(tenant, user.id, link.provider, link.subject))) continue;
    await ctx.audit.record(tenant, { type: 'social_unlink', status: 'success', username: user.email, user_id: user.id, ...who(req), details: { user_id: user.id, provider: link.provider, reason: 'address_proven_by_reset' } });
  }
}

/**
 * The new password, and everything the old one opened ends: sessions, grants and the refresh and
 * access tokens issued through them, other reset links, pending address changes. The account's failure count and lock are
 * left as they are (a reset is not an unlock).
 */
export async function setNewPassword(host: AccountHost, user: UserRecord, passwordHash: string): Promise<void> {
  const { ctx, tenant } = host;
  await ctx.storage.users.update(tenant, user.id, { password_hash: passwordHash });
  const now = new Date().toISOString();
  await ctx.storage.accountTokens.expireForUser(tenant, 'password_reset', user.id, now);
  // A pending address change asked for before the reset (perhaps by whoever the reset locks out).
  await ctx.storage.accountTokens.expireForUser(tenant, 'verify_email', user.id, now);
  await revokeAccount(ctx, tenant, user.id, host.config.oidc.ttl.session);
}
