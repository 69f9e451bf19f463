/** Tenants (in `_platforms`): list by status, create, suspend/activate, delete, config and users. */
import { useState } from 'preact/hooks';
import { ApiError, type Page } from '../api';
import { t } from '../i18n';
import { href, navigate, setQuery } from '../router';
import { ConfirmButton } from '../components/confirm-button';
import { ErrorBox } from '../components/error-box';
import { Field, Select } from '../components/fields';
import { FilterForm } from '../components/filter-form';
import { Pager } from '../components/list';
import { Empty, Loader } from '../components/loader';
import { fmtDate } from '../format';
import { useAction, useAsync, useServices } from '../services';
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

function CreateTenant({ onCreated }: { onCreated(t: Tenant): void }) {
  const { api } = useServices();
  const [f, setF] = useState({ slug: '', display_name: '', domain: '' });
  const [error, setError] = useState<unknown>(null);
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  return (
    <form
      class="form"
      noValidate
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        const body: Record<string, string> = { slug: f.slug.trim(), display_name: f.display_name.trim() };
        if (f.domain.trim()) body.domain = f.domain.trim();
        try {
          const res = await api.json<{ data: Tenant }>('POST', '/api/v1/tenants', { body });
          onCreated(res.data);
        } catch (err) {
          setError(err);
        }
      }}
    >
      {error ? <ErrorBox error={error} /> : null}
      <Field label={t('tenant.slug')} name="slug" required value={f.slug} onInput={(v) => setF({ ...f, slug: v })} error={fe('slug')} hint={t('tenant.slug_hint')} />
      <Field label={t('tenant.display_name')} name="display_name" required value={f.display_name} onInput={(v) => setF({ ...f, display_name: v })} error={fe('display_name')} />
      <Field label={t('tenant.domain')} name="domain" value={f.domain} onInput={(v) => setF({ ...f, domain: v })} error={fe('domain')} />
      <div class="actions">
        <button type="submit" class="primary">
          {t('tenant.create')}
        </button>
      </div>
    </form>
  );
}

export function TenantsSection({ query }: { query: URLSearchParams }) {
  const { api, notify } = useServices();
  const state = useAsync(() => api.get<Page<Tenant>>('/api/v1/tenants', { status: query.get('status'), after: query.get('after'), limit: 20 }), query.toString());
  return (
    <>
      <h1>{t('nav.tenants')}</h1>
      <FilterForm query={query} fields={['status']}>
        {(v, set) => <Select label={t('status')} name="status" value={v.status!} options={[['', t('any')], ['active', 'active'], ['suspended', 'suspended']]} onChange={(x) => set('status', x)} />}
      </FilterForm>
      <Loader state={state}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty>{t('tenants.empty')}</Empty>
          ) : (
            <>
              <table>
                <caption class="sr-only">{t('nav.tenants')}</caption>
                <thead>
                  <tr>
                    <th scope="col">{t('tenant.slug')}</th>
                    <th scope="col">{t('tenant.display_name')}</th>
                    <th scope="col">{t('status')}</th>
                    <th scope="col">{t('created')}</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((x) => (
                    <tr key={x.slug}>
                      <td>
                        <a href={href(`/tenants/${encodeURIComponent(x.slug)}`)}>{x.slug}</a>
                      </td>
                      <td>{x.display_name}</td>
                      <td>
                        <span class={`badge ${x.status === 'active' ? 'ok' : 'bad'}`}>{x.status}</span>
                      </td>
                      <td>{fmtDate(x.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager page={page} query={query} path="/tenants" />
            </>
          )
        }
      </Loader>
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
  const { api } = useServices();
  const act = useAction();
  const state = useAsync(() => api.get<{ data: Tenant }>(`/api/v1/tenants/${encodeURIComponent(slug)}`), slug);
  const base = `/tenants/${encodeURIComponent(slug)}`;
  const setStatus = (status: string) => act(() => api.json('PATCH', `/api/v1/tenants/${encodeURIComponent(slug)}`, { body: { status } }), status === 'active' ? t('done.activated') : t('done.suspended'));
  return (
    <Loader state={state}>
      {({ data: x }) => (
        <>
          <p>
            <a href={href('/tenants')}>← {t('nav.tenants')}</a>
          </p>
          <div class="title-row">
            <h1>{x.display_name}</h1>
            <span class={`badge ${x.status === 'active' ? 'ok' : 'bad'}`}>{x.status}</span>
          </div>
          <div class="toolbar">
            {x.status === 'active' ? (
              <ConfirmButton danger label={t('tenant.suspend')} question={t('tenant.suspend.q', { name: x.slug })} onConfirm={async () => void ((await setStatus('suspended')) && state.reload())} />
            ) : (
              <button type="button" onClick={async () => (await setStatus('active')) && state.reload()}>
                {t('activate')}
              </button>
            )}
            <ConfirmButton danger label={t('delete')} question={t('tenant.delete.q', { name: x.slug })} onConfirm={async () => void ((await act(() => api.json('DELETE', `/api/v1/tenants/${encodeURIComponent(slug)}`), t('done.deleted'))) && navigate(href('/tenants')))} />
          </div>
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
          ) : (
            <dl class="props">
              <dt>{t('tenant.slug')}</dt>
              <dd class="mono">{x.slug}</dd>
              <dt>{t('tenant.domain')}</dt>
              <dd>{x.domain ?? '—'}</dd>
              <dt>{t('created')}</dt>
              <dd>{fmtDate(x.created_at)}</dd>
              <dt>{t('updated')}</dt>
              <dd>{fmtDate(x.updated_at)}</dd>
            </dl>
          )}
        </>
      )}
    </Loader>
  );
}
