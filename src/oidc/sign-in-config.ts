/**
 * The parts of each tenant's oidc-provider configuration that concern end users: accounts,
 * interaction URL, device flow pages, logout pages, error page, pairwise subjects.
 */
import { createHmac } from 'node:crypto';
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import type { AppContext } from '../context.js';
import type { TenantId } from '../storage/types.js';
import { formTargetOf, pageHeaders } from '../ui/html.js';
import { deviceConfirmPage, deviceInputPage, logoutPage, messagePage } from '../ui/pages.js';
import { findAccountFor } from './accounts.js';

export interface SignInConfigHost {
  tenant: TenantId;
  ctx: AppContext;
  mountPath: string;
  stylesheet: string;
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

export function signInConfiguration(host: SignInConfigHost): Partial<Configuration> {
  const { stylesheet } = host;
  return {
    findAccount: findAccountFor(host.ctx.storage, host.tenant),
    interactions: {
      url: (_ctx, interaction) => `${host.mountPath}/interaction/${interaction.uid}`,
    },
    subjectTypes: ['public', 'pairwise'],
    pairwiseIdentifier: (_ctx, accountId, client) =>
      createHmac('sha256', host.pairwiseKey).update(`${client.sectorIdentifier ?? client.clientId}|${accountId}`).digest('base64url'),
    renderError: (ctx, out) => {
      const description = out.error_description ?? 'The request could not be completed.';
      render(ctx, messagePage({ stylesheet, title: 'Something went wrong', message: `${description} (${out.error})`, error: true }));
    },
    features: {
      deviceFlow: {
        enabled: true,
        charset: 'base-20',
        mask: '****-****',
        userCodeInputSource: (ctx, form, _out, err) => {
          const error = !err
            ? undefined
            : (err as { userCode?: unknown }).userCode || err.name === 'NoCodeError'
              ? 'That code is not valid or has expired. Check the code on your device and try again.'
              : err.name === 'AbortedError'
                ? 'The sign-in request was cancelled.'
                : 'The request could not be completed. Try again.';
          render(
            ctx,
            deviceInputPage({ stylesheet, action: attr(form, /action="([^"]+)"/), xsrf: attr(form, /name="xsrf" value="([^"]+)"/), error }),
            err ? 400 : 200,
          );
        },
        userCodeConfirmSource: (ctx, form, client, _deviceInfo, userCode) => {
          render(
            ctx,
            deviceConfirmPage({ stylesheet, action: attr(form, /action="([^"]+)"/), xsrf: attr(form, /name="xsrf" value="([^"]+)"/), userCode, clientName: client.clientName ?? client.clientId }),
          );
        },
        successSource: (ctx) => {
          render(ctx, messagePage({ stylesheet, title: 'Device connected', message: 'You are signed in on your device. You can close this window.' }));
        },
      },
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: (ctx, form) => {
          const target = ctx.oidc.params?.post_logout_redirect_uri;
          render(ctx, logoutPage({ stylesheet, form, host: ctx.host }), undefined, formTargetOf(typeof target === 'string' ? target : undefined));
        },
        postLogoutSuccessSource: (ctx) => {
          render(ctx, messagePage({ stylesheet, title: 'Signed out', message: 'You are signed out. You can close this window.' }));
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
