/**
 * A refused account-page action's message where it happened (WCAG 3.3.1, 1.3.1): inside the
 * section whose form failed, with role=alert, and the fields in error marked aria-invalid,
 * described by the message, the first one focused. Seven forms share the page: a message at its
 * top, with the focus left on the body, told a screen-reader user neither where nor what.
 */
import { html, type Html } from '../escape.js';
import type { AccountVisit } from './sections.js';

export const errorId = (section: string) => `${section}-error`;

/** The failed action's message text, when it is this section's; the page then leaves it out at the top. */
export function sectionFailure(v: AccountVisit, section: string): string | undefined {
  const failure = v.failure;
  if (!failure || failure.section !== section) return undefined;
  failure.shown = true;
  return failure.error;
}

/** The failed action's message, when it is this section's, as the section shows it (role=alert). */
export function sectionError(v: AccountVisit, section: string): Html {
  const error = sectionFailure(v, section);
  return error === undefined ? html`` : html`<p class="error" role="alert" id="${errorId(section)}">${error}</p>`;
}

/** A field's attributes: its hint (`hint`: the hint's id) and, when it is in error, the message, aria-invalid and (first in error) autofocus. */
export function fieldState(v: AccountVisit, section: string, field: string, hint?: string): Html {
  const failure = v.failure?.section === section ? v.failure : undefined;
  const failed = Boolean(failure?.fields.includes(field));
  const described = [hint, failed ? errorId(section) : undefined].filter((id) => id !== undefined).join(' ');
  return html`${described ? html` aria-describedby="${described}"` : html``}${failed ? html` aria-invalid="true"` : html``}${failed && failure!.fields[0] === field ? html` autofocus` : html``}`;
}
