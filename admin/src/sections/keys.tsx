/** Signing keys: list with status, rotate, retire expired, retire one. */
import { t } from '../i18n';
import { ConfirmButton } from '../components/confirm-button';
import { Select } from '../components/fields';
import { FilterForm } from '../components/filter-form';
import { Empty, Loader } from '../components/loader';
import { fmtDate } from '../format';
import { useAction, useAsync, useServices } from '../services';

interface Key {
  kid: string;
  alg: string;
  use: string;
  status: string;
  promoted: boolean;
  createdAt: string;
  rotatedAt: string | null;
}

export function KeysSection({ query }: { query: URLSearchParams }) {
  const { api } = useServices();
  const act = useAction();
  const state = useAsync(() => api.get<{ data: Key[] }>('/api/v1/jwks', { status: query.get('status') }), query.toString());
  return (
    <>
      <h1>{t('nav.keys')}</h1>
      <div class="toolbar">
        <ConfirmButton label={t('keys.rotate')} question={t('keys.rotate.q')} onConfirm={async () => void ((await act(() => api.json('POST', '/api/v1/jwks/rotate'), t('done.rotated'))) && state.reload())} />
        <ConfirmButton label={t('keys.retire_expired')} question={t('keys.retire_expired.q')} onConfirm={async () => void ((await act(() => api.json('POST', '/api/v1/jwks/retire-expired'), t('done.retired'))) && state.reload())} />
      </div>
      <FilterForm query={query} fields={['status']}>
        {(v, set) => <Select label={t('status')} name="status" value={v.status!} options={[['', t('any')], ['active', 'active'], ['expiring', 'expiring'], ['retired', 'retired']]} onChange={(x) => set('status', x)} />}
      </FilterForm>
      <Loader state={state}>
        {({ data }) =>
          data.length === 0 ? (
            <Empty>{t('keys.empty')}</Empty>
          ) : (
            <table>
              <caption class="sr-only">{t('nav.keys')}</caption>
              <thead>
                <tr>
                  <th scope="col">kid</th>
                  <th scope="col">alg</th>
                  <th scope="col">{t('status')}</th>
                  <th scope="col">{t('keys.promoted')}</th>
                  <th scope="col">{t('created')}</th>
                  <th scope="col">{t('keys.rotated')}</th>
                  <th scope="col">{t('actions')}</th>
                </tr>
              </thead>
              <tbody>
                {data.map((k) => (
                  <tr key={k.kid}>
                    <td class="mono">{k.kid}</td>
                    <td>{k.alg}</td>
                    <td>
                      <span class={`badge ${k.status === 'active' ? 'ok' : k.status === 'retired' ? 'bad' : 'warn'}`}>{k.status}</span>
                    </td>
                    <td>{k.promoted ? t('yes') : t('no')}</td>
                    <td>{fmtDate(k.createdAt)}</td>
                    <td>{fmtDate(k.rotatedAt)}</td>
                    <td>
                      {k.status !== 'retired' ? (
                        <ConfirmButton danger label={t('keys.retire')} question={t('keys.retire.q', { name: k.kid })} onConfirm={async () => void ((await act(() => api.json('DELETE', `/api/v1/jwks/${encodeURIComponent(k.kid)}`), t('done.retire_marked'))) && state.reload())} />
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loader>
    </>
  );
}
