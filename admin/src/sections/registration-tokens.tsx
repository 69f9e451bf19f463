/** Registration tokens (initial access tokens of dynamic registration): list, create (shown once), revoke. */
import { useState } from 'preact/hooks';
import type { Page } from '../api';
import { ActionButton } from '../components/action-button';
import { ApiForm } from '../components/api-form';
import { DataTable } from '../components/data-table';
import { Field } from '../components/fields';
import { useFormState } from '../components/form-state';
import { PagedList } from '../components/list';
import { SecretOnce } from '../components/secret-once';
import { fmtDate } from '../format';
import { t } from '../i18n';
import { useAsync, useServices } from '../services';

interface RegToken {
  jti: string;
  token?: string;
  expires_at: string;
  max_usage_count: number;
  current_usage_count: number;
  policies: string[];
  note: string | null;
  created_at: string;
}

function CreateToken({ onCreated }: { onCreated(token: string): void }) {
  const { api } = useServices();
  const { values: f, text } = useFormState({ expires_in: '86400', max_usage_count: '1', policies: 'general-policy', note: '' });
  return (
    <ApiForm
      submitLabel={t('create')}
      onSubmit={async () => {
        const body: Record<string, unknown> = {
          expires_in: Number(f.expires_in),
          max_usage_count: Number(f.max_usage_count),
          policies: f.policies.split(/[,\s]+/).filter(Boolean),
        };
        if (f.note.trim()) body.note = f.note.trim();
        const res = await api.json<{ data: RegToken }>('POST', '/api/v1/registration-tokens', { body });
        onCreated(res.data.token ?? '');
      }}
    >
      {(fe) => (
        <>
          <Field label={t('regtoken.expires_in')} type="number" hint="300 – 2592000" {...text('expires_in', fe)} />
          <Field label={t('regtoken.max_usage')} type="number" hint="1 – 1000" {...text('max_usage_count', fe)} />
          <Field label={t('regtoken.policies')} hint={t('hint.commas')} {...text('policies', fe)} />
          <Field label={t('regtoken.note')} {...text('note', fe)} />
        </>
      )}
    </ApiForm>
  );
}

export function RegistrationTokensSection({ query }: { query: URLSearchParams }) {
  const { api } = useServices();
  const state = useAsync(() => api.get<Page<RegToken>>('/api/v1/registration-tokens', { after: query.get('after'), limit: 20, include_count: true }), query.toString());
  const [created, setCreated] = useState<string | null>(null);
  return (
    <>
      <h1>{t('nav.regtokens')}</h1>
      {created ? <SecretOnce label={t('regtoken.value')} value={created} /> : null}
      <PagedList state={state} empty={t('regtokens.empty')} query={query} path="/registration-tokens">
        {(tokens) => (
          <DataTable caption={t('nav.regtokens')} head={['jti', t('regtoken.note'), t('regtoken.usage'), t('regtoken.policies'), t('session.expires'), t('actions')]}>
            {tokens.map((r) => (
              <tr key={r.jti}>
                <td class="mono">{r.jti}</td>
                <td>{r.note || '—'}</td>
                <td>
                  {r.current_usage_count} / {r.max_usage_count}
                </td>
                <td>{r.policies.join(', ')}</td>
                <td>{fmtDate(r.expires_at)}</td>
                <td>
                  <ActionButton danger label={t('revoke')} question={t('regtoken.revoke.q')} run={() => api.json('DELETE', `/api/v1/registration-tokens/${encodeURIComponent(r.jti)}`)} done={t('done.revoked')} then={state.reload} />
                </td>
              </tr>
            ))}
          </DataTable>
        )}
      </PagedList>
      <section aria-labelledby="rt-new">
        <h2 id="rt-new">{t('regtoken.new')}</h2>
        <CreateToken
          onCreated={(token) => {
            setCreated(token);
            state.reload();
          }}
        />
      </section>
    </>
  );
}
