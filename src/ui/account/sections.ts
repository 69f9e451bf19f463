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
  /** The action that failed on this request, shown in its own section (form-errors.ts). */
  failure?: ActionFailure;
}

/**
 * A refused action's message, for its section to show next to the form that failed, tied to the
 * fields in error (`fields`: their ids, the first one gets the focus). `shown` is set by the
 * section that showed it; otherwise the page shows it at the top.
 */
export interface ActionFailure {
  section: string;
  error: string;
  fields: readonly string[];
  shown?: boolean;
}

/**
 * What an action leads to: the account page again with a message, or a page of its own. An error
 * names the ids of the fields in error, if any (WCAG 3.3.1: the message is tied to them).
 */
export type ActionOutcome = { notice: string } | { error: string; status?: number; fields?: readonly string[] } | { page: HttpResponse };

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
