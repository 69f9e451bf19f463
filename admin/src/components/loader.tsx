/** The three states of loaded data: waiting (a polite status), failed (the error banner), there. */
import type { ComponentChildren } from 'preact';
import { t } from '../i18n';
import type { Async } from '../services';
import { ErrorBox } from './error-box';

export function Loading() {
  return (
    <p class="loading" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" /> {t('loading')}
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

export function Loader<T>({ state, children }: { state: Async<T>; children: (data: T) => ComponentChildren }) {
  if (state.error) return <ErrorBox error={state.error} />;
  if (state.data === undefined) return <Loading />;
  return <>{children(state.data)}</>;
}
