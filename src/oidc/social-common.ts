/**
 * What social sign-in (social-signin.ts) and linking from the account page
 * (social-account-link.ts) share: the tenant's social context, the callback URL, the
 * browser-binding cookie, Apple's one-time user field and the page context of a callback's result
 * page. A module of its own so neither flow
 * imports the other's internals (and the account pages can name the context type without an
 * import cycle through the sign-in interaction).
 */
import type { HttpRequest } from '../http/types.js';
import type { SocialSettings } from '../social/providers.js';
import type { StateCodec } from '../social/state.js';
import type { EffectiveConfig } from '../tenancy/config/merge.js';
import type { RelayState } from '../tenancy/ops.js';
import { buildPageUi, type PageUi, type UiSettings } from '../ui/page-ui.js';
import type { ReplayStore } from './replay-store.js';

/** Everything social login needs of one tenant actor (rebuilt when the tenant's config changes). */
export interface SocialContext {
  readonly settings: SocialSettings;
  readonly config: EffectiveConfig;
  readonly codec: StateCodec;
  readonly replay: ReplayStore;
  /** The platform's relay envelope (tenancy/ops.ts); used when `relayIssuer` is set. */
  readonly relay: RelayState;
  /** The tenant's issuer. */
  readonly issuer: string;
  /** `_ops`'s issuer when callbacks go through the relay (multi-tenant mode, relay on). */
  readonly relayIssuer?: string;
}

export const BINDING_COOKIE = 'svc_social';
/** Longest callback parameter we carry over from a form post. */
export const MAX_PARAM = 4096;

export function callbackUrl(sc: SocialContext, provider: string): string {
  return `${sc.relayIssuer ?? sc.issuer}/social/${provider}/callback`;
}

/** The cookie binding a flow to the browser that started it (scoped to the callback path). */
export function socialBindingCookie(target: { mountPath: string; origin: URL }, value: string, maxAge: number): string {
  const secure = target.origin.protocol === 'https:' ? '; Secure' : '';
  return `${BINDING_COOKIE}=${value}; Path=${target.mountPath}/social/; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure}`;
}

/** Apple's one-time `user` field (JSON with the name, first sign-in only); anything else is ignored. */
export function appleUser(raw: string | null): { name?: { firstName?: string; lastName?: string } } | undefined {
  if (!raw) return undefined;
  try {
    const u: unknown = JSON.parse(raw);
    return u && typeof u === 'object' ? (u as { name?: { firstName?: string; lastName?: string } }) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The page context of a page the callback answers with (docs/decisions.md "Callback result
 * pages"). The callback URL answers once (its state is single use; without state and code it is
 * an invalid answer, and a failed sign-in in the audit log), so the language switcher never points
 * at it: its links lead where the page's way back leads (`back`: the sign-in interaction, or the
 * account page for a link), with `lang` set, which that page reads and remembers. A page without
 * a way back has no switcher. `uiLocales`: the sign-in's own `ui_locales`, once the state named it.
 */
export function resultPageUi(settings: UiSettings, req: Pick<HttpRequest, 'headers'>, back: string | undefined, uiLocales?: unknown): PageUi {
  const { ui } = buildPageUi(settings, { path: back ?? '/', headers: req.headers }, uiLocales);
  return back === undefined ? { ...ui, languages: [] } : ui;
}
