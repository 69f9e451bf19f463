/** Audit log: the filters of spec 4.7 in the URL, detail view, CSV export of the current filter. */
import { useState } from 'preact/hooks';
import type { Page } from '../api';
import { Badge } from '../components/badge';
import { DataTable } from '../components/data-table';
import { errorText } from '../components/error-box';
import { Field, Select } from '../components/fields';
import { FilterForm } from '../components/filter-form';
import { PagedList } from '../components/list';
import { Empty, Loader } from '../components/loader';
import { PropList } from '../components/props';
import { TitleRow } from '../components/title-row';
import { fmtDate } from '../format';
import { t } from '../i18n';
import { href } from '../router';
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

const StatusBadge = ({ status }: { status: string }) => <Badge tone={status === 'success' ? 'ok' : status === 'failed' ? 'bad' : 'warn'}>{status}</Badge>;

export function AuditTable({ entries }: { entries: AuditEntry[] }) {
  return (
    <DataTable caption={t('nav.audit')} head={[t('audit.time'), t('audit.type'), t('status'), t('audit.actor'), 'client_id', 'IP']}>
      {entries.map((e) => (
        <tr key={e.id}>
          <td>
            <a href={href(`/audit/${encodeURIComponent(e.id)}`)}>{fmtDate(e.timestamp)}</a>
          </td>
          <td>{e.type}</td>
          <td>
            <StatusBadge status={e.status} />
          </td>
          <td>{e.username ?? '—'}</td>
          <td class="mono">{e.client_id ?? '—'}</td>
          <td class="mono">{e.ip_address ?? '—'}</td>
        </tr>
      ))}
    </DataTable>
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
      <TitleRow title={t('nav.audit')}>
        <button type="button" class="primary" onClick={exportCsv} disabled={exporting} aria-busy={exporting}>
          {exporting ? t('audit.exporting') : t('audit.export')}
        </button>
      </TitleRow>
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
      <PagedList state={state} empty={t('audit.empty')} query={query} path="/audit">
        {(entries) => <AuditTable entries={entries} />}
      </PagedList>
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
              {e.type} <StatusBadge status={e.status} />
            </h1>
            <PropList
              items={[
                ['id', e.id, 'mono'],
                [t('audit.time'), fmtDate(e.timestamp)],
                [t('audit.actor'), e.username ?? '—'],
                ['user_id', e.user_id ?? '—', 'mono'],
                ['client_id', e.client_id ?? '—', 'mono'],
                ['IP', e.ip_address ?? '—', 'mono'],
                ['User-Agent', e.user_agent ?? '—'],
                [t('audit.tenant'), e.tenant_id],
              ]}
            />
            <h2>{t('audit.details')}</h2>
            <pre class="json" tabIndex={0}>{JSON.stringify(e.details, null, 2)}</pre>
          </>
        )}
      </Loader>
      {state.error ? <Empty>{t('audit.notfound')}</Empty> : null}
    </>
  );
}
