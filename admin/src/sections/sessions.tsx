/** Sessions: list with filters, revoke one, bulk revoke by account or client. */
import { useState } from 'preact/hooks';
import { ApiError, type Page } from '../api';
import { ActionButton } from '../components/action-button';
import { Badge } from '../components/badge';
import { ConfirmButton } from '../components/confirm-button';
import { DataTable } from '../components/data-table';
import { ErrorBox, fieldErrorOf } from '../components/error-box';
import { Field } from '../components/fields';
import { ActiveSelect, FilterForm } from '../components/filter-form';
import { PagedList } from '../components/list';
import { fmtDate } from '../format';
import { t } from '../i18n';
import { useAsync, useServices } from '../services';

export interface Session {
  jti: string;
  account_id: string;
  client_ids: string[];
  created_at: string;
  expires_at: string;
  last_active_at: string | null;
  active: boolean;
}

export function SessionTable({ sessions, onChanged }: { sessions: Session[]; onChanged(): void }) {
  const { api } = useServices();
  return (
    <DataTable caption={t('nav.sessions')} head={[t('session.id'), t('session.account'), t('session.clients'), t('created'), t('session.expires'), t('actions')]}>
      {sessions.map((s) => (
        <tr key={s.jti}>
          <td class="mono">{s.jti.slice(0, 12)}…</td>
          <td class="mono">{s.account_id}</td>
          <td>{s.client_ids.join(', ') || '—'}</td>
          <td>{fmtDate(s.created_at)}</td>
          <td>{fmtDate(s.expires_at)}</td>
          <td>
            {s.active ? (
              <ActionButton danger label={t('session.revoke')} question={t('session.revoke.q')} run={() => api.json('DELETE', `/api/v1/sessions/${encodeURIComponent(s.jti)}`)} done={t('done.revoked')} then={onChanged} />
            ) : (
              <Badge tone="bad">{t('inactive')}</Badge>
            )}
          </td>
        </tr>
      ))}
    </DataTable>
  );
}

/** Not an ApiForm: the request runs from the confirm dialog, and a 422 is shown at its fields only. */
function BulkRevoke({ onDone }: { onDone(): void }) {
  const { api, notify } = useServices();
  const [username, setUsername] = useState('');
  const [clientId, setClientId] = useState('');
  const [error, setError] = useState<unknown>(null);
  return (
    <form class="form inline" noValidate onSubmit={(e) => e.preventDefault()}>
      {error && !(error instanceof ApiError && error.errors.length) ? <ErrorBox error={error} /> : null}
      <Field label={t('session.account')} name="username" value={username} onInput={setUsername} error={fieldErrorOf(error, 'username')} />
      <Field label="client_id" name="client_id" value={clientId} onInput={setClientId} error={fieldErrorOf(error, 'client_id')} />
      <div class="actions">
        <ConfirmButton
          danger
          label={t('session.bulk')}
          question={t('session.bulk.q')}
          onConfirm={async () => {
            setError(null);
            try {
              const res = await api.json<{ data: { revoked_count: number } }>('DELETE', '/api/v1/sessions', { query: { username, client_id: clientId } });
              notify(t('done.bulk', { n: res.data.revoked_count }), 'ok');
              onDone();
            } catch (err) {
              setError(err);
            }
          }}
        />
      </div>
    </form>
  );
}

export function SessionsSection({ query }: { query: URLSearchParams }) {
  const { api } = useServices();
  const state = useAsync(() => api.get<Page<Session>>('/api/v1/sessions', { username: query.get('username'), client_id: query.get('client_id'), active: query.get('active'), after: query.get('after'), limit: 20, include_count: true }), query.toString());
  return (
    <>
      <h1>{t('nav.sessions')}</h1>
      <FilterForm query={query} fields={['username', 'client_id', 'active']}>
        {(v, set) => (
          <>
            <Field label={t('session.account')} name="username" value={v.username!} onInput={(x) => set('username', x)} />
            <Field label="client_id" name="client_id" value={v.client_id!} onInput={(x) => set('client_id', x)} />
            <ActiveSelect value={v.active!} onChange={(x) => set('active', x)} />
          </>
        )}
      </FilterForm>
      <PagedList state={state} empty={t('sessions.empty')} query={query} path="/sessions">
        {(sessions) => <SessionTable sessions={sessions} onChanged={state.reload} />}
      </PagedList>
      <section aria-labelledby="bulk-h">
        <h2 id="bulk-h">{t('session.bulk')}</h2>
        <BulkRevoke onDone={state.reload} />
      </section>
    </>
  );
}
