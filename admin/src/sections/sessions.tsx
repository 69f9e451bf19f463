/** Sessions: list with filters, revoke one, bulk revoke by account or client. */
import { useState } from 'preact/hooks';
import { ApiError, type Page } from '../api';
import { t } from '../i18n';
import { ConfirmButton } from '../components/confirm-button';
import { ErrorBox } from '../components/error-box';
import { Field, Select } from '../components/fields';
import { FilterForm } from '../components/filter-form';
import { Pager } from '../components/list';
import { Empty, Loader } from '../components/loader';
import { fmtDate } from '../format';
import { useAction, useAsync, useServices } from '../services';

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
  const act = useAction();
  return (
    <table>
      <caption class="sr-only">{t('nav.sessions')}</caption>
      <thead>
        <tr>
          <th scope="col">{t('session.id')}</th>
          <th scope="col">{t('session.account')}</th>
          <th scope="col">{t('session.clients')}</th>
          <th scope="col">{t('created')}</th>
          <th scope="col">{t('session.expires')}</th>
          <th scope="col">{t('actions')}</th>
        </tr>
      </thead>
      <tbody>
        {sessions.map((s) => (
          <tr key={s.jti}>
            <td class="mono">{s.jti.slice(0, 12)}…</td>
            <td class="mono">{s.account_id}</td>
            <td>{s.client_ids.join(', ') || '—'}</td>
            <td>{fmtDate(s.created_at)}</td>
            <td>{fmtDate(s.expires_at)}</td>
            <td>
              {s.active ? (
                <ConfirmButton danger label={t('session.revoke')} question={t('session.revoke.q')} onConfirm={async () => void ((await act(() => api.json('DELETE', `/api/v1/sessions/${encodeURIComponent(s.jti)}`), t('done.revoked'))) && onChanged())} />
              ) : (
                <span class="badge bad">{t('inactive')}</span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function BulkRevoke({ onDone }: { onDone(): void }) {
  const { api, notify } = useServices();
  const [username, setUsername] = useState('');
  const [clientId, setClientId] = useState('');
  const [error, setError] = useState<unknown>(null);
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  return (
    <form class="form inline" noValidate onSubmit={(e) => e.preventDefault()}>
      {error && !(error instanceof ApiError && error.errors.length) ? <ErrorBox error={error} /> : null}
      <Field label={t('session.account')} name="username" value={username} onInput={setUsername} error={fe('username')} />
      <Field label="client_id" name="client_id" value={clientId} onInput={setClientId} error={fe('client_id')} />
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
            <Select label={t('status')} name="active" value={v.active!} options={[['', t('any')], ['true', t('active')], ['false', t('inactive')]]} onChange={(x) => set('active', x)} />
          </>
        )}
      </FilterForm>
      <Loader state={state}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty>{t('sessions.empty')}</Empty>
          ) : (
            <>
              <SessionTable sessions={page.data} onChanged={state.reload} />
              <Pager page={page} query={query} path="/sessions" />
            </>
          )
        }
      </Loader>
      <section aria-labelledby="bulk-h">
        <h2 id="bulk-h">{t('session.bulk')}</h2>
        <BulkRevoke onDone={state.reload} />
      </section>
    </>
  );
}
