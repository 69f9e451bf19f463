/** Signing keys: list with status, rotate, retire expired, retire one. */
import { ActionButton } from '../components/action-button';
import { Badge } from '../components/badge';
import { DataTable } from '../components/data-table';
import { Select } from '../components/fields';
import { FilterForm } from '../components/filter-form';
import { ListLoader } from '../components/list';
import { fmtDate } from '../format';
import { t } from '../i18n';
import { useAsync, useServices } from '../services';

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
  const state = useAsync(() => api.get<{ data: Key[] }>('/api/v1/jwks', { status: query.get('status') }), query.toString());
  return (
    <>
      <h1>{t('nav.keys')}</h1>
      <div class="toolbar">
        <ActionButton label={t('keys.rotate')} question={t('keys.rotate.q')} run={() => api.json('POST', '/api/v1/jwks/rotate')} done={t('done.rotated')} then={state.reload} />
        <ActionButton label={t('keys.retire_expired')} question={t('keys.retire_expired.q')} run={() => api.json('POST', '/api/v1/jwks/retire-expired')} done={t('done.retired')} then={state.reload} />
      </div>
      <FilterForm query={query} fields={['status']}>
        {(v, set) => <Select label={t('status')} name="status" value={v.status!} options={[['', t('any')], ['active', 'active'], ['expiring', 'expiring'], ['retired', 'retired']]} onChange={(x) => set('status', x)} />}
      </FilterForm>
      <ListLoader state={state} empty={t('keys.empty')}>
        {(keys) => (
          <DataTable caption={t('nav.keys')} head={['kid', 'alg', t('status'), t('keys.promoted'), t('created'), t('keys.rotated'), t('actions')]}>
            {keys.map((k) => (
              <tr key={k.kid}>
                <td class="mono">{k.kid}</td>
                <td>{k.alg}</td>
                <td>
                  <Badge tone={k.status === 'active' ? 'ok' : k.status === 'retired' ? 'bad' : 'warn'}>{k.status}</Badge>
                </td>
                <td>{k.promoted ? t('yes') : t('no')}</td>
                <td>{fmtDate(k.createdAt)}</td>
                <td>{fmtDate(k.rotatedAt)}</td>
                <td>
                  {k.status !== 'retired' ? (
                    <ActionButton danger label={t('keys.retire')} question={t('keys.retire.q', { name: k.kid })} run={() => api.json('DELETE', `/api/v1/jwks/${encodeURIComponent(k.kid)}`)} done={t('done.retire_marked')} then={state.reload} />
                  ) : null}
                </td>
              </tr>
            ))}
          </DataTable>
        )}
      </ListLoader>
    </>
  );
}
