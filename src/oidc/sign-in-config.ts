/**
 * The parts of each tenant's oidc-provider configuration that concern end users: accounts,
 * interaction URL, device flow pages, logout pages, error page, pairwise subjects.
 */
import { interactionPolicy, type Client, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import type { AppContext } from '../context.js';
import type { TenantId } from '../storage/types.js';
import { formTargetOf, pageHeaders } from '../ui/html.js';
import { buildPageUi, withCookie, type PageUi, type UiSettings } from '../ui/page-ui.js';
import { clientDisplayName } from '../ui/client-name.js';
import { deviceConfirmPage, deviceInputPage, logoutPage, messagePage } from '../ui/pages.js';
import { findAccountFor } from './accounts.js';
import { pairwiseSubject } from './pairwise.js';
import { sessionMeetsMfaPolicy, type MfaSettings } from './passkey-steps.js';
import { errorPageHtml, protocolMessage } from '../ui/error-page.js';
import { carriedUiLocales, dropCarriedLanguage, forgetHintClient, hintMatchesSession, validatedPostLogoutUri } from './logout-pages.js';

export interface SignInConfigHost {
  tenant: TenantId;
  /** The tenant's effective MFA settings (security.mfa after overrides and floors). */
  mfa: Pick<MfaSettings, 'required'>;
  ctx: AppContext;
  mountPath: string;
  ui: UiSettings;
  pairwiseKey: Buffer;
}

function attr(form: string, pattern: RegExp): string {
  return pattern.exec(form)?.[1] ?? '';
}

function render(ctx: KoaContextWithOIDC, body: string, status?: number, formTargets: string[] = []): void {
  for (const [k, v] of Object.entries(pageHeaders(formTargets))) ctx.set(k, v);
  if (status) ctx.status = status;
  ctx.body = body;
}

/**
 * oidc-provider's default prompts, with one check first in `login`: a session whose account may no
 * longer sign in (disabled, locked, deleted: findAccount answers undefined) means signing in again,
 * as no session does (`login_required` under prompt=none, the sign-in page otherwise). Without it
 * oidc-provider's login checks pass on the session's accountId alone, and its consent checks then
 * fail on the missing account with a server_error.
 * A second check asks for a sign-in again when the MFA policy requires a second factor and the
 * session did not prove one (sessionMeetsMfaPolicy): the sign-in then asks for it, or enrols it.
 */
function interactionPrompts(mfa: Pick<MfaSettings, 'required'>): interactionPolicy.DefaultPolicy {
  const { Check } = interactionPolicy;
  const prompts = interactionPolicy.base();
  const unavailable = new Check('account_unavailable', 'End-User authentication is required', 'login_required', (ctx) =>
    ctx.oidc.session?.accountId && !ctx.oidc.account ? Check.REQUEST_PROMPT : Check.NO_NEED_TO_PROMPT,
  );
  const secondFactor = new Check('mfa_required', 'End-User authentication with a second factor is required', 'login_required', (ctx) =>
    ctx.oidc.session?.accountId && !sessionMeetsMfaPolicy(mfa, ctx.oidc.session.amr) ? Check.REQUEST_PROMPT : Check.NO_NEED_TO_PROMPT,
  );
  prompts.get('login')!.checks.add(unavailable, 0);
  prompts.get('login')!.checks.add(secondFactor, 1);
  return prompts;
}

/**
 * The page context of a page oidc-provider renders (device, logout, errors); the language cookie set
 * on ctx. `carried`: a language carried from an earlier request of the flow (logout-pages.ts), in
 * place of the request's ui_locales.
 */
function pageUiOf(host: SignInConfigHost, ctx: KoaContextWithOIDC, carried?: string): PageUi {
  const query = new URLSearchParams(ctx.method === 'GET' ? ctx.querystring : '');
  const uiLocales = carried ?? (ctx.oidc?.params as { ui_locales?: unknown } | undefined)?.ui_locales;
  const { ui, setCookie } = buildPageUi(
    host.ui,
    { path: host.mountPath + ctx.path, query: query.toString(), headers: { cookie: ctx.get('cookie'), 'accept-language': ctx.get('accept-language') } },
    uiLocales,
  );
  const headers = withCookie({ headers: {} as Record<string, string | string[]> }, setCookie).headers;
  if (headers?.['set-cookie']) ctx.append('set-cookie', headers['set-cookie']);
  return ui;
}

/**
 * `verification_uri_complete` (`{oidc}/device?user_code=...`): oidc-provider answers with its own
 * auto-submitting form (English, no `lang`, an inline script). The device page is shown instead,
 * with the code filled in, for the user to compare with the device and continue (RFC 8628 5.4: the
 * code is confirmed, not submitted behind the user's back). Runs after oidc-provider's answer.
 */
export function prefilledDeviceCode(host: SignInConfigHost) {
  return async function prefill(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
    await next();
    const oidc = ctx.oidc as KoaContextWithOIDC['oidc'] | undefined;
    const userCode = (oidc?.params as { user_code?: unknown } | undefined)?.user_code;
    if (ctx.method !== 'GET' || oidc?.route !== 'code_verification' || ctx.status !== 200 || typeof userCode !== 'string' || typeof ctx.body !== 'string') return;
    const form = ctx.body;
    render(ctx, deviceInputPage({ ui: pageUiOf(host, ctx), action: attr(form, /action="([^"]+)"/), xsrf: attr(form, /name="xsrf" value="([^"]+)"/), userCode }));
  };
}

export function signInConfiguration(host: SignInConfigHost): Partial<Configuration> {
  const uiOf = (ctx: KoaContextWithOIDC, carried?: string): PageUi => pageUiOf(host, ctx, carried);
  const pairwiseIdentifier = (accountId: string, client: Client) => pairwiseSubject(host.pairwiseKey, String(client.sectorIdentifier ?? client.clientId), accountId);
  // The `sub` of the client's ID tokens, as oidc-provider computes it.
  const subjectOf = (accountId: string, client: Client) => (client.subjectType === 'pairwise' ? pairwiseIdentifier(accountId, client) : accountId);
  return {
    findAccount: findAccountFor(host.ctx.storage, host.tenant),
    interactions: {
      url: (_ctx, interaction) => `${host.mountPath}/interaction/${interaction.uid}`,
      policy: interactionPrompts(host.mfa),
    },
    subjectTypes: ['public', 'pairwise'],
    pairwiseIdentifier: (_ctx, accountId, client) => pairwiseIdentifier(accountId, client),
    renderError: (ctx, out) => {
      // A plain explanation in the page's language and the request id; oidc-provider's English
      // protocol text (error, error_description) stays in the log, not on the page.
      const ui = uiOf(ctx, carriedUiLocales(ctx));
      const requestId = ctx.get('x-request-id') || undefined;
      // The end-session request and its confirmation are refused before anything is signed out.
      const route = (ctx.oidc as KoaContextWithOIDC['oidc'] | undefined)?.route;
      const flow = route === 'end_session' || route === 'end_session_confirm' ? 'sign_out' : 'sign_in';
      render(ctx, errorPageHtml(ui, protocolMessage(out.error, out.error_description, flow), requestId));
    },
    features: {
      deviceFlow: {
        enabled: true,
        charset: 'base-20',
        mask: '****-****',
        userCodeInputSource: (ctx, form, _out, err) => {
          const ui = uiOf(ctx);
          const error = !err
            ? undefined
            : (err as { userCode?: unknown }).userCode || err.name === 'NoCodeError'
              ? ui.t('device.invalid_code')
              : err.name === 'AbortedError'
                ? ui.t('device.cancelled')
                : ui.t('device.failed');
          render(
            ctx,
            deviceInputPage({ ui, action: attr(form, /action="([^"]+)"/), xsrf: attr(form, /name="xsrf" value="([^"]+)"/), error }),
            err ? 400 : 200,
          );
        },
        userCodeConfirmSource: (ctx, form, client, _deviceInfo, userCode) => {
          const ui = uiOf(ctx);
          render(
            ctx,
            deviceConfirmPage({ ui, action: attr(form, /action="([^"]+)"/), xsrf: attr(form, /name="xsrf" value="([^"]+)"/), userCode, clientName: clientDisplayName(ui.t, client.clientId, client.clientName) }),
          );
        },
        successSource: (ctx) => {
          const ui = uiOf(ctx);
          render(ctx, messagePage({ ui, title: ui.t('device.done.title'), message: ui.t('device.done.message') }));
        },
      },
      rpInitiatedLogout: {
        enabled: true,
        // Drawn only for a signed-in session (without one, oidc-provider's own form: logout-pages.ts).
        logoutSource: (ctx, form) => {
          const ui = uiOf(ctx);
          // A hint for another user or session names no client, leads nowhere but here (logout-pages.ts).
          const trusted = hintMatchesSession(ctx, subjectOf);
          if (!trusted) forgetHintClient(ctx, host.ctx.log, host.tenant);
          const client = trusted ? ctx.oidc.client : undefined;
          const targets = trusted ? formTargetOf(validatedPostLogoutUri(ctx)) : [];
          render(ctx, logoutPage({ ui, form, clientName: client ? clientDisplayName(ui.t, client.clientId, client.clientName) : undefined }), undefined, targets);
        },
        postLogoutSuccessSource: async (ctx) => {
          // In the language ui_locales asked for on the end-session request (a request of its own).
          const ui = uiOf(ctx, carriedUiLocales(ctx));
          dropCarriedLanguage(ctx, host.mountPath);
          // "Stay signed in" lands here too (oidc-provider posts logout=yes only for "Sign out", and
          // redirects both here): the page says what is true now, read from the session cookie.
          const stayed = Boolean((await ctx.oidc.provider.Session.get(ctx)).accountId);
          const [title, message] = stayed ? (['logout.stayed.title', 'logout.stayed.message'] as const) : (['logout.done.title', 'logout.done.message'] as const);
          render(ctx, messagePage({ ui, title: ui.t(title), message: ui.t(message) }));
        },
      },
      backchannelLogout: { enabled: true },
    },
  };
}

/** Merges the sign-in configuration into the base one (features merged key by key). */
export function mergeConfiguration(base: Configuration, extra: Partial<Configuration>): void {
  const { features, ...rest } = extra;
  Object.assign(base, rest);
  base.features = { ...(base.features ?? {}), ...(features ?? {}) } as Configuration['features'];
}
