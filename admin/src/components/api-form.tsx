/**
 * A form that sends one Management API request on submit. While it runs the previous problem is
 * cleared; a failure is kept and shown twice over: the problem+json banner above the fields, and
 * each field's own 422 message at the field (the render prop's `fieldError`). `busyLabel` given,
 * the submit button is disabled and says so while the request runs.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { ErrorBox, fieldErrorOf } from './error-box';

interface ApiFormProps {
  onSubmit(): Promise<void>;
  submitLabel: string;
  busyLabel?: string;
  /** Shown above the banner, e.g. the heading the form is labelled by. */
  heading?: ComponentChildren;
  labelledBy?: string;
  children: (fieldError: (name: string) => string | undefined) => ComponentChildren;
}

export function ApiForm(p: ApiFormProps) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="form"
      noValidate
      aria-labelledby={p.labelledBy}
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(null);
        try {
          await p.onSubmit();
        } catch (err) {
          setError(err);
        } finally {
          setBusy(false);
        }
      }}
    >
      {p.heading}
      {error ? <ErrorBox error={error} /> : null}
      {p.children((name) => fieldErrorOf(error, name))}
      <div class="actions">
        <button type="submit" class="primary" disabled={p.busyLabel !== undefined && busy}>
          {busy && p.busyLabel !== undefined ? p.busyLabel : p.submitLabel}
        </button>
      </div>
    </form>
  );
}
