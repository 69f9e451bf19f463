/**
 * The signed-in user's linked social accounts at {oidc}/account/social (until the account page
 * `/account` takes it in as its linked-accounts section): GET lists them, POST
 * /account/social/unlink removes one, never the last way to sign in (src/social/accounts.ts).
 * "Signed in" is an oidc-provider session, as for /account/mfa; forms carry a CSRF token bound to it.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { withNodeObjects } from '../http/koa-bridge.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { unlinkIdentity } from '../social/accounts.js';
import type { SocialProvider } from '../social/providers.js';
import type { UserRecord } from '../storage/types.js';
import { pageHeaders } from '../ui/html.js';
import { buildPageUi, withCookie, type PageUi } from '../ui/page-ui.js';
import { messagePage } from '../ui/pages.js';
import { linkedAccountsPage } from '../ui/social-pages.js';
import { canSignIn } from './accounts.js';
import { page, readForm, type SignInHost } from './interactions.js';

export async function handleAccountSocial(host: SignInHost, providers: readonly SocialProvider[], req: HttpRequest, action: 'list' | 'unlink'): Promise<HttpResponse> {
  const allowed = action === 'list' ? ['GET'] : ['POST'];
  if (!allowed.includes(req.method)) return { status: 405, headers: { allow: allowed.join(', '), ...pageHeaders() }, body: 'Method Not Allowed' };
  const { ui, setCookie } = buildPageUi(host.ui, { path: `${host.target.mountPath}/account/social`, headers: req.headers });
  const { t } = ui;
  const message = (status: number, title: string, text: string) => page(status, messagePage({ ui, title, message: text, error: true }));
  return withCookie(
    await withNodeObjects(req, host.target, async (nreq, nres) => {
      const session = await host.provider.Session.get(host.provider.createContext(nreq as IncomingMessage, nres as ServerResponse));
      if (!session.accountId) return message(401, t('account.sign_in_first.title'), t('account.sign_in_first.message'));
      const user = await host.ctx.storage.users.get(host.tenant, session.accountId);
      if (!user || !canSignIn(user)) return message(403, t('account.unavailable.title'), t('account.unavailable.message'));
      const csrf = createHmac('sha256', host.csrfKey).update(`account-social:${session.uid}`).digest('base64url');
      if (req.method === 'GET') return listPage(host, providers, user, csrf, ui, 200);
      const form = readForm(req);
      const given = Buffer.from(form?.get('csrf_token') ?? '');
      if (!form || given.length !== csrf.length || !timingSafeEqual(given, Buffer.from(csrf))) return message(403, t('page.form_expired.title'), t('page.form_expired.message'));
      if (!(await host.guard.allowIp(host.tenant, req.ip))) return message(429, t('page.too_many.title'), t('page.too_many.message'));
      const provider = (form.get('provider') ?? '').slice(0, 64);
      const subject = (form.get('subject') ?? '').slice(0, 512);
      // Only the signed-in user's own links can be named: another user's (provider, subject) is not_found.
      const outcome = await unlinkIdentity(host.ctx, host.tenant, user, provider, subject, { ip_address: req.ip, user_agent: req.headers['user-agent'] ?? null });
      const name = providers.find((p) => p.name === provider)?.displayName ?? provider;
      if (outcome === 'unlinked') return listPage(host, providers, user, csrf, ui, 200, { notice: t('social.account.unlinked', { provider: name }) });
      return listPage(host, providers, user, csrf, ui, outcome === 'last_method' ? 409 : 404, { error: t(outcome === 'last_method' ? 'social.account.last_method' : 'social.account.not_found') });
    }),
    setCookie,
  );
}

async function listPage(host: SignInHost, providers: readonly SocialProvider[], user: UserRecord, csrf: string, ui: PageUi, status: number, extra: { notice?: string; error?: string } = {}): Promise<HttpResponse> {
  const links = await host.ctx.storage.socialIdentities.listByUser(host.tenant, user.id);
  const rows = links.map((l) => ({ provider: l.provider, subject: l.subject, email: l.email, name: providers.find((p) => p.name === l.provider)?.displayName ?? l.provider }));
  return page(status, linkedAccountsPage({ ui, action: `${host.target.mountPath}/account/social/unlink`, csrf, rows, ...extra }));
}
