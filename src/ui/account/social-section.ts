/**
 * Linked accounts on the account page (issue 15, moved here from {oidc}/account/social): the
 * user's linked upstream accounts, each with Unlink (never the last way to sign in), and a "Link
 * <provider>" link for each enabled provider not linked yet. Linking goes through
 * GET /account/social/link (a top-level navigation: the page's CSP form-action could not allow a
 * form's redirect to the upstream), guarded by a token bound to the sign-in session and the
 * provider, and by a recent sign-in (as adding a passkey); the upstream part is
 * src/oidc/social-account-link.ts.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { HttpRequest, HttpResponse } from '../../http/types.js';
import { startAccountLink } from '../../oidc/social-account-link.js';
import { unlinkIdentity } from '../../social/accounts.js';
import type { SocialProvider } from '../../social/providers.js';
import { html } from '../escape.js';
import { messagePage } from '../pages.js';
import { buildPageUi } from '../page-ui.js';
import type { AccountHost } from './host.js';
import { sectionError } from './form-errors.js';
import { htmlPage } from './respond.js';
import { registerAccountSection } from './sections.js';
import { ACCOUNT_PATH, currentSession, recentSignIn } from './session.js';

export const LINK_PATH = '/account/social/link';

const providersOf = (host: AccountHost): readonly SocialProvider[] => host.social()?.settings.providers ?? [];
const nameOf = (host: AccountHost, provider: string) => providersOf(host).find((p) => p.name === provider)?.displayName ?? provider;

/** The token of one provider's Link: bound to the sign-in session, useless for another provider or session. */
function linkToken(host: AccountHost, sessionUid: string, provider: string): string {
  return createHmac('sha256', host.csrfKey).update(`account-link:${sessionUid}:${provider}`).digest('base64url');
}

registerAccountSection(
  {
    id: 'social',
    async render(v) {
      const { host, ui } = v;
      const { t } = ui;
      const providers = providersOf(host);
      const links = await host.ctx.storage.socialIdentities.listByUser(host.tenant, v.session.user.id);
      if (!providers.length && !links.length) return undefined;
      const q = v.req.method === 'GET' ? new URLSearchParams(v.req.rawQuery) : new URLSearchParams();
      const shown = q.get('social');
      const named = links.some((l) => l.provider === q.get('provider')) ? nameOf(host, q.get('provider')!) : undefined;
      const notice = named && shown === 'linked' ? t('social.account.linked', { provider: named }) : named && shown === 'already' ? t('social.account.already', { provider: named }) : undefined;
      const rows = links.map(
        (l) => html`<li><strong>${nameOf(host, l.provider)}</strong>${l.email ? html` (${l.email})` : html``}
<form method="post" action="${ACCOUNT_PATH}">
<input type="hidden" name="csrf_token" value="${v.csrf}">
<input type="hidden" name="action" value="social.unlink">
<input type="hidden" name="provider" value="${l.provider}">
<input type="hidden" name="subject" value="${l.subject}">
<div class="actions"><button type="submit">${t('social.account.unlink', { provider: nameOf(host, l.provider) })}</button></div>
</form></li>`,
      );
      const linkable = providers.filter((p) => !links.some((l) => l.provider === p.name));
      const offers = linkable.map(
        (p) => html`<li><a class="button" href="${LINK_PATH}?${new URLSearchParams({ provider: p.name, csrf_token: linkToken(host, v.session.sessionUid, p.name) }).toString()}">${t('social.account.link', { provider: p.displayName })}</a></li>`,
      );
      return html`<section aria-labelledby="social-heading"><h2 id="social-heading">${t('social.account.title')}</h2>
${sectionError(v, 'social')}
<p>${t('social.account.intro')}</p>
${notice ? html`<p role="status">${notice}</p>` : html``}
${links.length ? html`<ul class="linked-accounts">${rows}</ul>` : html`<p>${t('social.account.none')}</p>`}
${offers.length ? html`<ul class="social-links">${offers}</ul>` : html``}
</section>`;
    },
    actions: {
      async unlink(v, f) {
        const { host } = v;
        const provider = (f.get('provider') ?? '').slice(0, 64);
        const subject = (f.get('subject') ?? '').slice(0, 512);
        // As for a passkey: a session signed in long ago may not strip the owner's ways in either.
        if (!recentSignIn(v.session)) return { error: v.ui.t('account.recent.message'), status: 403 };
        // Only the signed-in user's own links can be named: another user's (provider, subject) is not_found.
        const outcome = await unlinkIdentity(host.ctx, host.tenant, v.session.user, provider, subject, { ip_address: v.req.ip, user_agent: v.req.headers['user-agent'] ?? null });
        if (outcome === 'unlinked') return { notice: v.ui.t('social.account.unlinked', { provider: nameOf(host, provider) }) };
        return outcome === 'last_method' ? { error: v.ui.t('social.account.last_method'), status: 409 } : { error: v.ui.t('social.account.not_found'), status: 404 };
      },
    },
  },
  'sessions',
);

/** GET /account/social/link: starts the upstream flow that links the provider to the signed-in user. */
export async function handleSocialLink(host: AccountHost, req: HttpRequest): Promise<HttpResponse> {
  const { ui } = buildPageUi(host.ui, { path: LINK_PATH, headers: req.headers });
  const { t } = ui;
  const message = (status: number, title: string, text: string) => htmlPage(status, messagePage({ ui, title, message: text, error: true }));
  if (req.method !== 'GET') return { status: 405, headers: { allow: 'GET', 'cache-control': 'no-store' } };
  const session = await currentSession(host, req);
  if (!session) return message(401, t('account.sign_in_first.title'), t('account.sign_in_first.message'));
  const q = new URLSearchParams(req.rawQuery);
  const name = (q.get('provider') ?? '').slice(0, 64);
  const given = Buffer.from(q.get('csrf_token') ?? '');
  const expected = Buffer.from(linkToken(host, session.sessionUid, name));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    host.ctx.log.info({ req_id: req.id, tenant: host.tenant }, 'social link refused: missing or invalid token');
    return message(403, t('page.form_expired.title'), t('page.form_expired.message'));
  }
  // A linked upstream account signs in as the user, so linking one adds a way in, like a passkey:
  // a session signed in long ago (a stolen cookie) may not plant one of its own.
  if (!recentSignIn(session)) return message(403, t('passkey.recent.title'), t('account.recent.message'));
  if (!(await host.guard.allowIp(host.tenant, req.ip))) return message(429, t('page.too_many.title'), t('page.too_many.message'));
  const sc = host.social();
  const provider = sc?.settings.providers.find((p) => p.name === name);
  if (!sc || !provider) return message(404, t('social.unavailable.title'), t('social.unavailable.message'));
  const links = await host.ctx.storage.socialIdentities.listByUser(host.tenant, session.user.id);
  if (links.some((l) => l.provider === provider.name)) return { status: 303, headers: { location: `${ACCOUNT_PATH}?social=already&provider=${encodeURIComponent(provider.name)}`, 'cache-control': 'no-store' } };
  const started = await startAccountLink(host.ctx, { mountPath: host.mountPath, origin: host.origin }, sc, provider, { session: session.sessionUid, user: session.user.id });
  if (!started) return message(502, t('social.down.title', { provider: provider.displayName }), t('social.down.message', { provider: provider.displayName }));
  return started;
}
