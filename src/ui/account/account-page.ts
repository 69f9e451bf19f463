/**
 * GET/POST /account: the signed-in user's account page (CONTRACT.md "Account page"), and
 * /account/callback, the end of its sign-in. No-store, CSRF token bound to the sign-in session on
 * every form, no scripts (CSP). Its sections come from sections.ts (built-in ones in
 * builtin-sections.ts; features register more).
 */
import { timingSafeEqual } from 'node:crypto';
import { ACCOUNT_CLIENT_ID } from '../../clients/system-clients.js';
import type { HttpRequest, HttpResponse } from '../../http/types.js';
import { html } from '../escape.js';
import { layout } from '../html.js';
import { errorBlock, messagePage } from '../pages.js';
import { buildPageUi } from '../page-ui.js';
import './builtin-sections.js';
import './passkeys-section.js';
import './social-section.js';
import type { AccountHost } from './host.js';
import type { WindowLimiter } from './limiter.js';
import { readForm } from './password-reset.js';
import { htmlPage } from './respond.js';
import { accountSections, type AccountVisit, type ActionOutcome } from './sections.js';
import { ACCOUNT_PATH, currentSession, finishSignIn, startSignIn } from './session.js';
import { csrfOf } from './session-csrf.js';

export { csrfOf } from './session-csrf.js';

/**
 * RP-initiated logout as the account page's own client, in the page's language: the end-session
 * page asks for confirmation (a link cannot carry its form secret), then signs the browser out and
 * comes back here, which starts a new sign-in.
 */
function signOutUrl(v: AccountVisit): string {
  const { origin, mountPath } = v.host;
  const params = new URLSearchParams({ client_id: ACCOUNT_CLIENT_ID, post_logout_redirect_uri: `${origin.origin}${ACCOUNT_PATH}`, ui_locales: v.ui.t.lang });
  return `${origin.origin}${mountPath}/session/end?${params.toString()}`;
}

async function renderAccount(v: AccountVisit, status: number, message?: { notice?: string; error?: string }): Promise<HttpResponse> {
  const { t } = v.ui;
  // A section's failure is shown by that section (form-errors.ts); here only one no section showed.
  const parts = [];
  let script: string | undefined;
  for (const s of accountSections()) {
    const part = await s.render(v);
    if (part) parts.push(part);
    if (part && s.script) script ??= s.script(v);
  }
  const body = html`<h1>${t('account.title')}</h1>
<p>${t.html('account.signed_in_as', { email: html`<strong>${v.session.user.email ?? ''}</strong>` })} <a href="${signOutUrl(v)}">${t('logout.submit')}</a></p>
${errorBlock(v.failure && !v.failure.shown ? v.failure.error : message?.error)}
${message?.notice ? html`<p class="notice" role="status">${message.notice}</p>` : html``}
${parts}`;
  return htmlPage(status, layout({ title: t('account.title'), ui: v.ui, ...(script ? { script } : {}) }, body), [], [], Boolean(script));
}

export async function handleAccountPage(host: AccountHost, req: HttpRequest, exchange: (body: URLSearchParams) => Promise<HttpResponse>, limiter: WindowLimiter): Promise<HttpResponse> {
  const { ui, setCookie } = buildPageUi(host.ui, { path: ACCOUNT_PATH, query: req.method === 'GET' ? req.rawQuery : '', headers: req.headers });
  const withLang = (res: HttpResponse) => (setCookie ? { ...res, headers: { ...res.headers, 'set-cookie': [setCookie, ...([] as string[]).concat(res.headers?.['set-cookie'] ?? [])] } } : res);
  const message = (status: number, title: string, text: string) => htmlPage(status, messagePage({ ui, title, message: text, error: true }), [setCookie]);

  if (req.path !== ACCOUNT_PATH) {
    // /account/callback
    if (req.method !== 'GET') return { status: 405, headers: { allow: 'GET', 'cache-control': 'no-store' } };
    const done = await finishSignIn(host, req, exchange);
    return done === 'failed' ? message(400, ui.t('signin.expired.title'), ui.t('signin.expired.message')) : done;
  }
  if (req.method !== 'GET' && req.method !== 'POST') return { status: 405, headers: { allow: 'GET, POST', 'cache-control': 'no-store' } };

  const session = await currentSession(host, req);
  if (!session) {
    if (req.method === 'POST') return message(403, ui.t('page.form_expired.title'), ui.t('page.form_expired.message'));
    return withLang(startSignIn(host, ui.t.lang));
  }
  const v: AccountVisit = { host, req, session, ui, csrf: csrfOf(host, session.sessionUid), limiter };
  if (req.method === 'GET') return withLang(await renderAccount(v, 200));

  const form = readForm(req);
  const given = Buffer.from(form?.get('csrf_token') ?? '');
  const expected = Buffer.from(v.csrf);
  if (!form || given.length !== expected.length || !timingSafeEqual(given, expected)) {
    host.ctx.log.info({ req_id: req.id, tenant: host.tenant }, 'account form refused: missing or invalid CSRF token');
    return message(403, ui.t('page.form_expired.title'), ui.t('page.form_expired.message'));
  }
  if (!(await host.guard.allowIp(host.tenant, req.ip))) return message(429, ui.t('page.too_many.title'), ui.t('page.too_many.message'));
  const [sectionId, actionName] = (form.get('action') ?? '').split('.', 2);
  const section = accountSections().find((s) => s.id === sectionId);
  const action = section && actionName && Object.hasOwn(section.actions, actionName) ? section.actions[actionName] : undefined;
  if (!action) return renderAccount(v, 400, { error: ui.t('page.error.default') });
  const outcome: ActionOutcome = await action(v, form);
  if ('page' in outcome) return outcome.page;
  if ('error' in outcome) {
    v.failure = { section: section!.id, error: outcome.error, fields: outcome.fields ?? [], values: outcome.values ?? {} };
    return renderAccount(v, outcome.status ?? 400);
  }
  return renderAccount(v, 200, { notice: outcome.notice });
}
