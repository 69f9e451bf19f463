/**
 * A refused account-page action's message where it happened (WCAG 3.3.1, 1.3.1): inside the
 * section whose form failed, with role=alert, and the fields in error marked aria-invalid,
 * described by the message, the first one focused. Seven forms share the page: a message at its
 * top, with the focus left on the body, told a screen-reader user neither where nor what.
 * The text the user typed in the refused form is put back in its fields (never a password): a
 * page drawn from the stored values made them type it all again.
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

/**
 * What the user typed in `field` of this section's refused form, to put back in it; undefined
 * when no form of the section was refused or the action did not give the field back. Escaped
 * where it is drawn, like any value (`html`): never markup. Never asked for a password field.
 */
export function givenValue(v: AccountVisit, section: string, field: string): string | undefined {
  const values = v.failure?.section === section ? v.failure.values : undefined;
  return values && Object.hasOwn(values, field) ? values[field] : undefined;
}

/** ` value="…"` of a field that starts empty (nothing stored), holding what the user typed when its form was refused. */
export function givenValueAttr(v: AccountVisit, section: string, field: string): Html {
  const given = givenValue(v, section, field);
  return given ? html` value="${given}"` : html``;
}
