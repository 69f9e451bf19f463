/** Registration tokens (initial access tokens of dynamic registration): list, create (shown once), revoke. */
import { useState } from 'preact/hooks';
import { ApiError, type Page } from '../api';
import { t } from '../i18n';
import { ConfirmButton } from '../components/confirm-button';
import { ErrorBox } from '../components/error-box';
import { Field } from '../components/fields';
import { Pager } from '../components/list';
import { Empty, Loader } from '../components/loader';
import { SecretOnce } from '../components/secret-once';
import { fmtDate } from '../format';
import { useAction, useAsync, useServices } from '../services';

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
  const [f, setF] = useState({ expires_in: '86400', max_usage_count: '1', policies: 'general-policy', note: '' });
  const [error, setError] = useState<unknown>(null);
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  return (
    <form
      class="form"
      noValidate
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        const body: Record<string, unknown> = {
          expires_in: Number(f.expires_in),
          max_usage_count: Number(f.max_usage_count),
          policies: f.policies.split(/[,\s]+/).filter(Boolean),
        };
        if (f.note.trim()) body.note = f.note.trim();
        try {
          const res = await api.json<{ data: RegToken }>('POST', '/api/v1/registration-tokens', { body });
          onCreated(res.data.token ?? '');
        } catch (err) {
          setError(err);
        }
      }}
    >
      {error ? <ErrorBox error={error} /> : null}
      <Field label={t('regtoken.expires_in')} name="expires_in" type="number" hint="300 – 2592000" value={f.expires_in} onInput={(v) => setF({ ...f, expires_in: v })} error={fe('expires_in')} />
      <Field label={t('regtoken.max_usage')} name="max_usage_count" type="number" hint="1 – 1000" value={f.max_usage_count} onInput={(v) => setF({ ...f, max_usage_count: v })} error={fe('max_usage_count')} />
      <Field label={t('regtoken.policies')} name="policies" hint={t('hint.commas')} value={f.policies} onInput={(v) => setF({ ...f, policies: v })} error={fe('policies')} />
      <Field label={t('regtoken.note')} name="note" value={f.note} onInput={(v) => setF({ ...f, note: v })} error={fe('note')} />
      <div class="actions">
        <button type="submit" class="primary">
          {t('create')}
        </button>
      </div>
    </form>
  );
}

export function RegistrationTokensSection({ query }: { query: URLSearchParams }) {
  const { api } = useServices();
  const act = useAction();
  const state = useAsync(() => api.get<Page<RegToken>>('/api/v1/registration-tokens', { after: query.get('after'), limit: 20, include_count: true }), query.toString());
  const [created, setCreated] = useState<string | null>(null);
  return (
    <>
      <h1>{t('nav.regtokens')}</h1>
      {created ? <SecretOnce label={t('regtoken.value')} value={created} /> : null}
      <Loader state={state}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty>{t('regtokens.empty')}</Empty>
          ) : (
            <>
              <table>
                <caption class="sr-only">{t('nav.regtokens')}</caption>
                <thead>
                  <tr>
                    <th scope="col">jti</th>
                    <th scope="col">{t('regtoken.note')}</th>
                    <th scope="col">{t('regtoken.usage')}</th>
                    <th scope="col">{t('regtoken.policies')}</th>
                    <th scope="col">{t('session.expires')}</th>
                    <th scope="col">{t('actions')}</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((r) => (
                    <tr key={r.jti}>
                      <td class="mono">{r.jti}</td>
                      <td>{r.note || '—'}</td>
                      <td>
                        {r.current_usage_count} / {r.max_usage_count}
                      </td>
                      <td>{r.policies.join(', ')}</td>
                      <td>{fmtDate(r.expires_at)}</td>
                      <td>
                        <ConfirmButton danger label={t('revoke')} question={t('regtoken.revoke.q')} onConfirm={async () => void ((await act(() => api.json('DELETE', `/api/v1/registration-tokens/${encodeURIComponent(r.jti)}`), t('done.revoked'))) && state.reload())} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager page={page} query={query} path="/registration-tokens" />
            </>
          )
        }
      </Loader>
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
