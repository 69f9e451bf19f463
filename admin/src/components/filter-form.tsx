/** A filter form whose values live in the query string (Apply writes them, Clear removes them; paging restarts). */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { t } from '../i18n';
import { setQuery } from '../router';
import { Select } from './fields';

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

/** The "Status: any / active / inactive" filter of the lists that have an `active` flag. */
export function ActiveSelect({ value, onChange }: { value: string; onChange(v: string): void }) {
  return <Select label={t('status')} name="active" value={value} options={[['', t('any')], ['true', t('active')], ['false', t('inactive')]]} onChange={onChange} />;
}
