/**
 * E-mail verification: GET /account/verify?token= (the mailed link) marks the address confirmed
 * (single-use, expiring token; audit `email_verified`) and offers to continue the sign-in the
 * sign-up came from. The token names the address it confirms: after an e-mail change, the
 * confirmed address becomes the account's (see account page), and the previous address is told.
 */
import type { HttpRequest, HttpResponse } from '../../http/types.js';
import { html } from '../escape.js';
import { emailChangedMail } from '../mail-templates.js';
import { messagePage } from '../pages.js';
import { buildPageUi } from '../page-ui.js';
import { hashToken, mailAvailable, mailLocale, sendMail, wellFormedToken, type AccountHost } from './host.js';
import { expireMailedLinks } from '../../users/operations.js';
import { htmlPage } from './respond.js';
import { ACCOUNT_PATH } from './session.js';

export const VERIFY_PATH = '/account/verify';

export async function handleVerify(host: AccountHost, req: HttpRequest): Promise<HttpResponse> {
  const { ui, setCookie } = buildPageUi(host.ui, { path: req.path, headers: req.headers });
  const { t } = ui;
  if (req.method !== 'GET') return { status: 405, headers: { allow: 'GET', 'cache-control': 'no-store' } };
  const token = new URLSearchParams(req.rawQuery).get('token');
  // "Sign in to ask for a new one": the account page signs in and sends a new link from its e-mail section.
  const signIn = html`<p><a href="${ACCOUNT_PATH}">${t('verify.invalid.sign_in')}</a></p>`;
  const invalid = () => htmlPage(400, messagePage({ ui, title: t('verify.invalid.title'), message: t('verify.invalid.message'), error: true, links: [signIn] }), [setCookie]);
  if (!wellFormedToken(token)) return invalid();
  const { ctx, tenant } = host;
  const record = await ctx.storage.accountTokens.consume(tenant, 'verify_email', hashToken(token), new Date().toISOString());
  if (!record) return invalid();
  const user = await ctx.storage.users.get(tenant, record.user_id);
  if (!user || user.deleted_at) return invalid();
  // The address this link confirms: the current one, or (e-mail change) the new one, if still free.
  if (user.email?.toLowerCase() !== record.email.toLowerCase()) {
    const taken = await ctx.storage.users.findByEmail(tenant, record.email);
    if (taken && taken.id !== user.id) return invalid();
  }
  const before = user.email;
  const changed = Boolean(before) && before!.toLowerCase() !== record.email.toLowerCase();
  await ctx.storage.users.update(tenant, user.id, { email: record.email, email_verified: true });
  // Reset links mailed to the previous address no longer open the account: it is not theirs now.
  // Nor do the other confirmation links still pending (the sign-up's link to a mistyped address,
  // another change asked for earlier): opened later, one would move the account to its address.
  if (changed) await expireMailedLinks(host, user.id);
  await ctx.audit.record(tenant, {
    type: 'email_verified',
    status: 'success',
    username: record.email,
    user_id: user.id,
    ip_address: req.ip,
    user_agent: req.headers['user-agent'] ?? null,
    details: { user_id: user.id, ...(before?.toLowerCase() !== record.email.toLowerCase() ? { changed_from: before } : {}) },
  });
  // Told to the previous address whatever the user's alert choices: whoever moved the account could
  // have turned the alerts off first.
  if (changed && mailAvailable(host)) {
    sendMail(host, 'security_alert', user, before!, mailLocale(host, t.lang), (a) => emailChangedMail(a, record.email, `${host.origin.origin}/account`, new Date()));
  }
  const interaction = typeof record.data?.interaction === 'string' && /^[A-Za-z0-9_-]{1,128}$/.test(record.data.interaction) ? record.data.interaction : undefined;
  const links = interaction ? [html`<p><a href="${host.mountPath}/interaction/${interaction}">${t('verify.continue')}</a></p>`] : [];
  // No language switcher: its links would open the used link again, which says "link no longer
  // valid" in the other language, as if the confirmation had failed.
  const done = { ...ui, languages: [] };
  return htmlPage(200, messagePage({ ui: done, title: t('verify.done.title'), message: t('verify.done.message', { email: record.email }), links }), [setCookie]);
}
