/** Audit log: the filters of spec 4.7 in the URL, detail view, CSV export of the current filter. */
import { useState } from 'preact/hooks';
import type { Page } from '../api';
import { t } from '../i18n';
import { href } from '../router';
import { errorText } from '../components/error-box';
import { Field, Select } from '../components/fields';
import { FilterForm } from '../components/filter-form';
import { Pager } from '../components/list';
import { Empty, Loader } from '../components/loader';
import { fmtDate } from '../format';
import { useAsync, useServices } from '../services';

export interface AuditEntry {
  id: string;
  type: string;
  status: string;
  username: string | null;
  user_id: string | null;
  client_id: string | null;
  ip_address: string | null;
  user_agent: string | null;
  tenant_id: string;
  details: Record<string, unknown>;
  timestamp: string;
}

const FILTERS = ['type', 'status', 'username', 'client_id', 'ip_address', 'from', 'to', 'tenant'];

export function AuditTable({ entries }: { entries: AuditEntry[] }) {
  return (
    <table>
      <caption class="sr-only">{t('nav.audit')}</caption>
      <thead>
        <tr>
          <th scope="col">{t('audit.time')}</th>
          <th scope="col">{t('audit.type')}</th>
          <th scope="col">{t('status')}</th>
          <th scope="col">{t('audit.actor')}</th>
          <th scope="col">client_id</th>
          <th scope="col">IP</th>
        </tr>
      </thead>
      <tbody>
        {entries.map((e) => (
          <tr key={e.id}>
            <td>
              <a href={href(`/audit/${encodeURIComponent(e.id)}`)}>{fmtDate(e.timestamp)}</a>
            </td>
            <td>{e.type}</td>
            <td>
              <span class={`badge ${e.status === 'success' ? 'ok' : e.status === 'failed' ? 'bad' : 'warn'}`}>{e.status}</span>
            </td>
            <td>{e.username ?? '—'}</td>
            <td class="mono">{e.client_id ?? '—'}</td>
            <td class="mono">{e.ip_address ?? '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The filter of the URL as API query parameters. */
function filterOf(query: URLSearchParams): Record<string, string | undefined> {
  return Object.fromEntries(FILTERS.map((k) => [k, query.get(k) ?? undefined]));
}

export function AuditSection({ query }: { query: URLSearchParams }) {
  const { api, notify, config } = useServices();
  const state = useAsync(() => api.get<Page<AuditEntry>>('/api/v1/audit', { ...filterOf(query), after: query.get('after'), limit: 25, include_count: true }), query.toString());
  const types = useAsync(() => api.get<{ data: string[] }>('/api/v1/audit/types'), 'types');
  const [exporting, setExporting] = useState(false);

  /** The server streams the CSV; the browser saves it under the server's file name. */
  async function exportCsv() {
    setExporting(true);
    try {
      const res = await api.raw('GET', '/api/v1/audit/export', { query: filterOf(query) });
      const blob = await res.blob();
      const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? 'audit.csv';
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = name;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      notify(t('audit.exported'), 'ok');
    } catch (err) {
      notify(errorText(err), 'error');
    } finally {
      setExporting(false);
    }
  }

  return (
    <>
      <div class="title-row">
        <h1>{t('nav.audit')}</h1>
        <button type="button" class="primary" onClick={exportCsv} disabled={exporting} aria-busy={exporting}>
          {exporting ? t('audit.exporting') : t('audit.export')}
        </button>
      </div>
      <FilterForm query={query} fields={FILTERS}>
        {(v, set) => (
          <>
            <Select label={t('audit.type')} name="type" value={v.type!} options={[['', t('any')], ...(types.data?.data ?? []).map((x): [string, string] => [x, x])]} onChange={(x) => set('type', x)} />
            <Select label={t('status')} name="status" value={v.status!} options={[['', t('any')], ['success', 'success'], ['failed', 'failed'], ['info', 'info'], ['warning', 'warning']]} onChange={(x) => set('status', x)} />
            <Field label={t('audit.actor')} name="username" value={v.username!} onInput={(x) => set('username', x)} />
            <Field label="client_id" name="client_id" value={v.client_id!} onInput={(x) => set('client_id', x)} />
            <Field label={t('audit.ip')} name="ip_address" value={v.ip_address!} onInput={(x) => set('ip_address', x)} />
            {config.platform ? <Field label={t('audit.tenant')} name="tenant" value={v.tenant!} onInput={(x) => set('tenant', x)} /> : null}
            <Field label={t('audit.from')} name="from" type="date" value={v.from!} onInput={(x) => set('from', x)} />
            <Field label={t('audit.to')} name="to" type="date" value={v.to!} onInput={(x) => set('to', x)} />
          </>
        )}
      </FilterForm>
      <Loader state={state}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty>{t('audit.empty')}</Empty>
          ) : (
            <>
              <AuditTable entries={page.data} />
              <Pager page={page} query={query} path="/audit" />
            </>
          )
        }
      </Loader>
    </>
  );
}

export function AuditDetail({ id }: { id: string }) {
  const { api } = useServices();
  const state = useAsync(() => api.get<{ data: AuditEntry }>(`/api/v1/audit/${encodeURIComponent(id)}`), id);
  return (
    <>
      <p>
        <a href={href('/audit')}>← {t('nav.audit')}</a>
      </p>
      <Loader state={state}>
        {({ data: e }) => (
          <>
            <h1>
              {e.type} <span class={`badge ${e.status === 'success' ? 'ok' : e.status === 'failed' ? 'bad' : 'warn'}`}>{e.status}</span>
            </h1>
            <dl class="props">
              <dt>id</dt>
              <dd class="mono">{e.id}</dd>
              <dt>{t('audit.time')}</dt>
              <dd>{fmtDate(e.timestamp)}</dd>
              <dt>{t('audit.actor')}</dt>
              <dd>{e.username ?? '—'}</dd>
              <dt>user_id</dt>
              <dd class="mono">{e.user_id ?? '—'}</dd>
              <dt>client_id</dt>
              <dd class="mono">{e.client_id ?? '—'}</dd>
              <dt>IP</dt>
              <dd class="mono">{e.ip_address ?? '—'}</dd>
              <dt>User-Agent</dt>
              <dd>{e.user_agent ?? '—'}</dd>
              <dt>{t('audit.tenant')}</dt>
              <dd>{e.tenant_id}</dd>
            </dl>
            <h2>{t('audit.details')}</h2>
            <pre class="json" tabIndex={0}>{JSON.stringify(e.details, null, 2)}</pre>
          </>
        )}
      </Loader>
      {state.error ? <Empty>{t('audit.notfound')}</Empty> : null}
    </>
  );
}
