/** A failed request in words: the problem+json banner above a form or list, and the per-field errors of a 422. */
import { ApiError } from '../api';
import { t } from '../i18n';

/** Words for any error: the problem's detail (or title) and the status. */
export function errorText(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.status === 403 && err.type.endsWith(':insufficient-scope')) return t('error.scope');
    if (err.status === 429) return t('error.rate');
    return `${err.detail || err.title} (${err.status})`;
  }
  if (err instanceof Error) return err.message;
  return String(err);
}

/** The errors a problem names for one form field (none when the error is not a problem). */
export function fieldErrorOf(err: unknown, name: string): string | undefined {
  return err instanceof ApiError ? err.forField(name) : undefined;
}

export function ErrorBox({ error }: { error: unknown }) {
  return (
    <div class="error-box" role="alert">
      <strong>{t('error.title')}</strong> {errorText(error)}
    </div>
  );
}
