/**
 * The account page is a list of sections (profile, e-mail, password, two-step verification,
 * sessions, security alerts, and whatever features add: passkeys, linked social accounts). Each
 * renders its part of the page and owns the form actions named `<section id>.<name>`; a feature
 * adds itself with registerAccountSection() instead of editing the page.
 */
import type { HttpRequest, HttpResponse } from '../../http/types.js';
import type { Html } from '../escape.js';
import type { PageUi } from '../page-ui.js';
import type { AccountHost } from './host.js';
import type { WindowLimiter } from './limiter.js';
import type { AccountSession } from './session.js';

export interface AccountVisit {
  host: AccountHost;
  req: HttpRequest;
  session: AccountSession;
  ui: PageUi;
  /** CSRF token of the page's forms (bound to the sign-in session). */
  csrf: string;
  /** The self-service forms' per-address limits (the e-mail change's confirmation mails). */
  limiter: WindowLimiter;
}

/** What an action leads to: the account page again with a message, or a page of its own. */
export type ActionOutcome = { notice: string } | { error: string; status?: number } | { page: HttpResponse };

export interface AccountSection {
  id: string;
  /** Its part of the page, or nothing (a feature that is off). */
  render(v: AccountVisit): Promise<Html | undefined> | Html | undefined;
  actions: Record<string, (v: AccountVisit, form: URLSearchParams) => Promise<ActionOutcome>>;
  /** A same-origin script the section's part needs (the passkey ceremony); the page then allows script-src 'self'. */
  script?(v: AccountVisit): string | undefined;
}

const sections: AccountSection[] = [];

export function registerAccountSection(section: AccountSection, before?: string): void {
  const at = before ? sections.findIndex((s) => s.id === before) : -1;
  if (at >= 0) sections.splice(at, 0, section);
  else sections.push(section);
}

export function accountSections(): readonly AccountSection[] {
  return sections;
}
