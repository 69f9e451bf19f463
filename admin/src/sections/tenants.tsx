/** Tenants (in `_platforms`): list with search and status filter, create, edit, suspend/activate, delete, config and users. */
import { useState } from 'preact/hooks';
import { ApiError, type Page } from '../api';
import { ActionButton } from '../components/action-button';
import { ApiForm } from '../components/api-form';
import { Badge } from '../components/badge';
import { DataTable } from '../components/data-table';
import { EditToggle } from '../components/edit-toggle';
import { Field, Select } from '../components/fields';
import { FilterForm } from '../components/filter-form';
import { useFormState } from '../components/form-state';
import { PagedList } from '../components/list';
import { Loader } from '../components/loader';
import { PropList } from '../components/props';
import { TitleRow } from '../components/title-row';
import { fmtDate } from '../format';
import { t } from '../i18n';
import { href, navigate, setQuery } from '../router';
import { useAsync, useServices } from '../services';
import { TenantSettings } from './settings';
import { FilteredUsers, userQuery, type User } from './users';

interface Tenant {
  id: string;
  slug: string;
  display_name: string;
  domain: string | null;
  status: string;
  created_at: string;
  updated_at: string;
}

/**
 * The platform's own tenant: the API refuses to suspend or delete it (409, it would lock out the
 * platform's administrators), so the console does not offer either. (`default` and `_ops` are not
 * records: they never have a page here.)
 */
const PLATFORM_TENANT = '_platforms';

const StatusBadge = ({ status }: { status: string }) => <Badge tone={status === 'active' ? 'ok' : 'bad'}>{status}</Badge>;

function CreateTenant({ onCreated }: { onCreated(t: Tenant): void }) {
  const { api } = useServices();
  const { values: f, text } = useFormState({ slug: '', display_name: '', domain: '' });
  return (
    <ApiForm
      submitLabel={t('tenant.create')}
      onSubmit={async () => {
        const body: Record<string, string> = { slug: f.slug.trim(), display_name: f.display_name.trim() };
        if (f.domain.trim()) body.domain = f.domain.trim();
        const res = await api.json<{ data: Tenant }>('POST', '/api/v1/tenants', { body });
        onCreated(res.data);
      }}
    >
      {(fe) => (
        <>
          <Field label={t('tenant.slug')} required hint={t('tenant.slug_hint')} {...text('slug', fe)} />
          <Field label={t('tenant.display_name')} required {...text('display_name', fe)} />
          <Field label={t('tenant.domain')} {...text('domain', fe)} />
        </>
      )}
    </ApiForm>
  );
}

/**
 * PATCH of the display name and domain (an emptied domain is removed: `null`). A 409 of this form
 * can only be its domain being another tenant's, so it is shown at that field as well as above.
 */
function EditTenant({ tenant, onSaved }: { tenant: Tenant; onSaved(): void }) {
  const { api } = useServices();
  const { values: f, text } = useFormState({ display_name: tenant.display_name, domain: tenant.domain ?? '' });
  return (
    <ApiForm
      submitLabel={t('save')}
      busyLabel={t('saving')}
      onSubmit={async () => {
        const body = { display_name: f.display_name.trim(), domain: f.domain.trim() || null };
        try {
          await api.json('PATCH', `/api/v1/tenants/${encodeURIComponent(tenant.slug)}`, { body });
        } catch (err) {
          if (err instanceof ApiError && err.status === 409) throw new ApiError(err.status, err.title, err.detail, err.type, [{ field: 'domain', message: err.detail || err.title }]);
          throw err;
        }
        onSaved();
      }}
    >
      {(fe) => (
        <>
          <Field label={t('tenant.display_name')} required {...text('display_name', fe)} />
          <Field label={t('tenant.domain')} hint={t('tenant.domain_hint')} {...text('domain', fe)} />
        </>
      )}
    </ApiForm>
  );
}

export function TenantsSection({ query }: { query: URLSearchParams }) {
  const { api, notify } = useServices();
  const state = useAsync(() => api.get<Page<Tenant>>('/api/v1/tenants', { q: query.get('q'), status: query.get('status'), after: query.get('after'), limit: 20 }), query.toString());
  return (
    <>
      <h1>{t('nav.tenants')}</h1>
      <FilterForm query={query} fields={['q', 'status']}>
        {(v, set) => (
          <>
            <Field label={t('search')} name="q" type="search" value={v.q!} onInput={(x) => set('q', x)} />
            <Select label={t('status')} name="status" value={v.status!} options={[['', t('any')], ['active', 'active'], ['suspended', 'suspended']]} onChange={(x) => set('status', x)} />
          </>
        )}
      </FilterForm>
      <PagedList state={state} empty={t('tenants.empty')} query={query} path="/tenants">
        {(tenants) => (
          <DataTable caption={t('nav.tenants')} head={[t('tenant.slug'), t('tenant.display_name'), t('status'), t('created')]}>
            {tenants.map((x) => (
              <tr key={x.slug}>
                <td>
                  <a href={href(`/tenants/${encodeURIComponent(x.slug)}`)}>{x.slug}</a>
                </td>
                <td>{x.display_name}</td>
                <td>
                  <StatusBadge status={x.status} />
                </td>
                <td>{fmtDate(x.created_at)}</td>
              </tr>
            ))}
          </DataTable>
        )}
      </PagedList>
      <section aria-labelledby="tn-h">
        <h2 id="tn-h">{t('tenant.create')}</h2>
        <CreateTenant
          onCreated={(x) => {
            notify(t('done.created'), 'ok');
            navigate(href(`/tenants/${encodeURIComponent(x.slug)}`));
          }}
        />
      </section>
    </>
  );
}

function TenantUsers({ slug, query }: { slug: string; query: URLSearchParams }) {
  const { api } = useServices();
  const state = useAsync(() => api.get<Page<User>>(`/platform/tenants/${encodeURIComponent(slug)}/users`, userQuery(query)), `${slug}?${query.toString()}`);
  return <FilteredUsers state={state} query={query} path={`/tenants/${encodeURIComponent(slug)}/users`} />;
}

export function TenantDetail({ slug, tab, query }: { slug: string; tab?: string; query: URLSearchParams }) {
  const { api, notify } = useServices();
  const path = `/api/v1/tenants/${encodeURIComponent(slug)}`;
  const state = useAsync(() => api.get<{ data: Tenant }>(path), slug);
  const [editing, setEditing] = useState(false);
  const base = `/tenants/${encodeURIComponent(slug)}`;
  const setStatus = (status: string) => () => api.json('PATCH', path, { body: { status } });
  return (
    <Loader state={state}>
      {({ data: x }) => (
        <>
          <p>
            <a href={href('/tenants')}>← {t('nav.tenants')}</a>
          </p>
          <TitleRow title={x.display_name}>
            <StatusBadge status={x.status} />
          </TitleRow>
          <div class="toolbar">
            {!tab ? <EditToggle editing={editing} onToggle={setEditing} /> : null}
            {x.slug === PLATFORM_TENANT ? null : x.status === 'active' ? (
              <ActionButton danger label={t('tenant.suspend')} question={t('tenant.suspend.q', { name: x.slug })} run={setStatus('suspended')} done={t('done.suspended')} then={state.reload} />
            ) : (
              <ActionButton label={t('activate')} run={setStatus('active')} done={t('done.activated')} then={state.reload} />
            )}
            {x.slug === PLATFORM_TENANT ? null : (
              <ActionButton danger label={t('delete')} question={t('tenant.delete.q', { name: x.slug })} run={() => api.json('DELETE', path)} done={t('done.deleted')} then={() => navigate(href('/tenants'))} />
            )}
          </div>
          {x.slug === PLATFORM_TENANT ? <p>{t('tenant.reserved')}</p> : null}
          <nav class="tabs" aria-label={t('tenant.views')}>
            <a href={href(base)} aria-current={!tab ? 'page' : undefined}>
              {t('tenant.info')}
            </a>
            <a href={href(`${base}/config`)} aria-current={tab === 'config' ? 'page' : undefined}>
              {t('tenant.config')}
            </a>
            <a href={href(`${base}/users`)} aria-current={tab === 'users' ? 'page' : undefined}>
              {t('nav.users')}
            </a>
          </nav>
          {tab === 'config' ? (
            <TenantSettings slug={slug} section={query.get('section') ?? 'application'} onSection={(s) => setQuery({ section: s }, true)} />
          ) : tab === 'users' ? (
            <TenantUsers slug={slug} query={query} />
          ) : editing ? (
            <EditTenant
              tenant={x}
              onSaved={() => {
                notify(t('done.saved'), 'ok');
                setEditing(false);
                state.reload();
              }}
            />
          ) : (
            <PropList
              items={[
                [t('tenant.slug'), x.slug, 'mono'],
                [t('tenant.domain'), x.domain ?? '—'],
                [t('created'), fmtDate(x.created_at)],
                [t('updated'), fmtDate(x.updated_at)],
              ]}
            />
          )}
        </>
      )}
    </Loader>
  );
}
