/** Small accessible building blocks shared by the sections. */
import type { ComponentChildren } from 'preact';
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type Api, type Page } from './api';
import type { Auth } from './auth';
import type { ConsoleConfig } from './config';
import { t } from './i18n';
import { href, setQuery } from './router';

export interface AppServices {
  api: Api;
  auth: Auth;
  config: ConsoleConfig;
  notify(message: string, kind?: 'ok' | 'error'): void;
}

export const Services = createContext<AppServices>(null as unknown as AppServices);
export const useServices = () => useContext(Services);

export interface Async<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload(): void;
}

/** Runs `load` when `key` changes (and on reload()); the last answer wins. */
export function useAsync<T>(load: () => Promise<T>, key: string): Async<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  const latest = useRef(0);
  useEffect(() => {
    const run = ++latest.current;
    setState((s) => ({ ...s, loading: true, error: undefined }));
    load().then(
      (data) => run === latest.current && setState({ data, loading: false }),
      (error: unknown) => run === latest.current && setState({ error, loading: false }),
    );
  }, [key, tick]);
  return { ...state, error: state.error, data: state.data, reload: useCallback(() => setTick((n) => n + 1), []) };
}

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

export function Loading() {
  return (
    <p class="loading" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" /> {t('loading')}
    </p>
  );
}

export function ErrorBox({ error }: { error: unknown }) {
  return (
    <div class="error-box" role="alert">
      <strong>{t('error.title')}</strong> {errorText(error)}
    </div>
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

let idSeq = 0;
const useId = () => useRef(`f${++idSeq}`).current;

interface FieldProps {
  label: string;
  name: string;
  value: string;
  onInput(value: string): void;
  type?: string;
  error?: string;
  hint?: string;
  required?: boolean;
  autocomplete?: string;
  placeholder?: string;
  multiline?: boolean;
  readOnly?: boolean;
}

export function Field(p: FieldProps) {
  const id = useId();
  const described = [p.hint ? `${id}-hint` : '', p.error ? `${id}-err` : ''].filter(Boolean).join(' ') || undefined;
  const common = {
    id,
    name: p.name,
    value: p.value,
    required: p.required,
    readOnly: p.readOnly,
    placeholder: p.placeholder,
    'aria-invalid': p.error ? ('true' as const) : undefined,
    'aria-describedby': described,
    onInput: (e: Event) => p.onInput((e.currentTarget as HTMLInputElement | HTMLTextAreaElement).value),
  };
  return (
    <div class={`field${p.error ? ' invalid' : ''}`}>
      <label for={id}>
        {p.label}
        {p.required ? <span aria-hidden="true"> *</span> : null}
      </label>
      {p.multiline ? <textarea rows={3} {...common} /> : <input type={(p.type ?? 'text') as 'text'} autocomplete={p.autocomplete ?? 'off'} {...common} />}
      {p.hint ? (
        <small id={`${id}-hint`} class="hint">
          {p.hint}
        </small>
      ) : null}
      {p.error ? (
        <small id={`${id}-err`} class="field-error">
          {p.error}
        </small>
      ) : null}
    </div>
  );
}

export function Select(p: { label: string; name: string; value: string; options: Array<[string, string]>; onChange(v: string): void; error?: string }) {
  const id = useId();
  return (
    <div class={`field${p.error ? ' invalid' : ''}`}>
      <label for={id}>{p.label}</label>
      <select id={id} name={p.name} value={p.value} aria-invalid={p.error ? 'true' : undefined} aria-describedby={p.error ? `${id}-err` : undefined} onChange={(e) => p.onChange(e.currentTarget.value)}>
        {p.options.map(([v, l]) => (
          <option value={v} key={v}>
            {l}
          </option>
        ))}
      </select>
      {p.error ? (
        <small id={`${id}-err`} class="field-error">
          {p.error}
        </small>
      ) : null}
    </div>
  );
}

export function Checkbox(p: { label: string; name: string; checked: boolean; onChange(v: boolean): void; error?: string }) {
  const id = useId();
  return (
    <div class={`field check${p.error ? ' invalid' : ''}`}>
      <input type="checkbox" id={id} name={p.name} checked={p.checked} onChange={(e) => p.onChange(e.currentTarget.checked)} />
      <label for={id}>{p.label}</label>
      {p.error ? <small class="field-error">{p.error}</small> : null}
    </div>
  );
}

/** A button that asks first, in a modal <dialog> (focus moves into it; Escape cancels). */
export function ConfirmButton(p: { label: string; question: string; confirmLabel?: string; danger?: boolean; onConfirm(): Promise<void> | void; disabled?: boolean }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const titleId = useId();
  return (
    <>
      <button type="button" class={p.danger ? 'danger' : ''} disabled={p.disabled || busy} onClick={() => dialog.current?.showModal()}>
        {p.label}
      </button>
      <dialog ref={dialog} aria-labelledby={titleId}>
        <h2 id={titleId}>{p.question}</h2>
        <div class="actions">
          <button type="button" onClick={() => dialog.current?.close()}>
            {t('cancel')}
          </button>
          <button
            type="button"
            class={p.danger ? 'danger' : 'primary'}
            disabled={busy}
            onClick={async () => {
              setBusy(true);
              try {
                await p.onConfirm();
              } finally {
                setBusy(false);
                dialog.current?.close();
              }
            }}
          >
            {p.confirmLabel ?? p.label}
          </button>
        </div>
      </dialog>
    </>
  );
}

/** A secret shown once, with a copy button. */
export function SecretOnce({ label, value }: { label: string; value: string }) {
  const [copied, setCopied] = useState(false);
  const id = useId();
  return (
    <div class="secret" role="region" aria-label={label}>
      <label for={id}>{label}</label>
      <div class="secret-row">
        <input id={id} readOnly value={value} class="mono" onFocus={(e) => e.currentTarget.select()} />
        <button
          type="button"
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(value);
              setCopied(true);
            } catch {
              document.getElementById(id)?.focus();
            }
          }}
        >
          {copied ? t('copied') : t('copy')}
        </button>
      </div>
      <p class="hint">{t('secret.once')}</p>
    </div>
  );
}

/** Next page / first page links that keep every filter in the URL. */
export function Pager({ page, query, path }: { page: Page<unknown>; query: URLSearchParams; path: string }) {
  const base = Object.fromEntries([...query.entries()].filter(([k]) => k !== 'after'));
  return (
    <nav class="pager" aria-label={t('pagination')}>
      {page.pagination.total_count !== undefined ? <span>{t('total', { n: page.pagination.total_count })}</span> : null}
      {query.get('after') ? <a href={href(path, base)}>{t('first.page')}</a> : null}
      {page.pagination.has_more && page.pagination.next_cursor ? <a href={href(path, { ...base, after: page.pagination.next_cursor })}>{t('next.page')}</a> : null}
    </nav>
  );
}

/** A filter form whose values live in the query string. */
export function FilterForm({ query, fields, children }: { query: URLSearchParams; fields: string[]; children: (values: Record<string, string>, set: (k: string, v: string) => void) => ComponentChildren }) {
  const [values, setValues] = useState<Record<string, string>>(() => Object.fromEntries(fields.map((f) => [f, query.get(f) ?? ''])));
  useEffect(() => setValues(Object.fromEntries(fields.map((f) => [f, query.get(f) ?? '']))), [query.toString()]);
  return (
    <form
      class="filters"
      role="search"
      onSubmit={(e) => {
        e.preventDefault();
        setQuery({ ...values, after: undefined });
      }}
    >
      {children(values, (k, v) => setValues((s) => ({ ...s, [k]: v })))}
      <div class="actions">
        <button type="submit" class="primary">
          {t('apply')}
        </button>
        <button type="button" onClick={() => setQuery({ ...Object.fromEntries(fields.map((f) => [f, undefined])), after: undefined })}>
          {t('clear')}
        </button>
      </div>
    </form>
  );
}

export function fmtDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/** Runs an action, then reports success or the problem in words. */
export function useAction() {
  const { notify } = useServices();
  return async (work: () => Promise<unknown>, done: string): Promise<boolean> => {
    try {
      await work();
      notify(done, 'ok');
      return true;
    } catch (err) {
      notify(errorText(err), 'error');
      return false;
    }
  };
}
