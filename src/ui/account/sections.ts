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
 * fields in error (`fields`: their ids, the first one gets the focus). `values`: what the user
 * typed in the form's text fields, by field id, put back so it can be corrected instead of typed
 * again (never a password). `shown` is set by the section that showed it; otherwise the page shows
 * it at the top.
 */
export interface ActionFailure {
  section: string;
  error: string;
  fields: readonly string[];
  values: Readonly<Record<string, string>>;
  shown?: boolean;
}

/**
 * A refused action: its message, the ids of the fields in error, if any (WCAG 3.3.1: the message
 * is tied to them), and the values given in the form's text fields, by id, to put back in them
 * (WCAG 3.3.1: the user corrects the input rather than typing it again; never a password).
 */
export type ActionRefusal = { error: string; status?: number; fields?: readonly string[]; values?: Readonly<Record<string, string>> };

/** What an action leads to: the account page again with a notice or a refusal, or a page of its own. */
export type ActionOutcome = { notice: string } | ActionRefusal | { page: HttpResponse };

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
