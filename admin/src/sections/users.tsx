/** Users: list with search and filters, create, edit, lock, password and MFA reset, sessions, activity. */
import { useState } from 'preact/hooks';
import { ApiError, type Page } from '../api';
import { ActionButton } from '../components/action-button';
import { ApiForm } from '../components/api-form';
import { Badge } from '../components/badge';
import { DataTable } from '../components/data-table';
import { EditToggle } from '../components/edit-toggle';
import { Checkbox, Field, Select } from '../components/fields';
import { FilterForm } from '../components/filter-form';
import { useFormState } from '../components/form-state';
import { ListLoader, PagedList } from '../components/list';
import { Loader } from '../components/loader';
import { PropList } from '../components/props';
import { TitleRow } from '../components/title-row';
import { fmtDate } from '../format';
import { t } from '../i18n';
import { href, navigate } from '../router';
import { useAsync, useServices, type Async } from '../services';
import { AuditTable, type AuditEntry } from './audit';
import { SessionTable, type Session } from './sessions';

export interface User {
  id: string;
  email: string;
  username?: string | null;
  given_name?: string | null;
  family_name?: string | null;
  name?: string | null;
  nickname?: string | null;
  role: string;
  account_enabled: boolean;
  email_verified: boolean;
  locked: boolean;
  auth_provider: string;
  mfa: { enabled: boolean; methods: string[] };
  created_at: string;
  updated_at: string;
  last_login_at: string | null;
}

function roles(platform: boolean): Array<[string, string]> {
  const base: Array<[string, string]> = [
    ['user', 'user'],
    ['admin', 'admin'],
  ];
  return platform ? [...base, ['platform_admin', 'platform_admin'], ['superadmin', 'superadmin']] : base;
}

/** A table of users; `link` is where each user's page lives (the tenant's or a platform view). */
export function UserTable({ users, link }: { users: User[]; link?: (u: User) => string }) {
  return (
    <DataTable caption={t('nav.users')} head={[t('user.email'), t('user.name'), t('user.role'), t('status'), t('user.last_login')]}>
      {users.map((u) => (
        <tr key={u.id}>
          <td>{link ? <a href={link(u)}>{u.email}</a> : u.email}</td>
          <td>{u.name || u.username || '—'}</td>
          <td>{u.role}</td>
          <td>
            {u.locked ? <Badge tone="bad">{t('user.locked')}</Badge> : null} {u.account_enabled ? null : <Badge tone="bad">{t('user.disabled')}</Badge>}
            {!u.locked && u.account_enabled ? <Badge tone="ok">{t('active')}</Badge> : null}
          </td>
          <td>{fmtDate(u.last_login_at)}</td>
        </tr>
      ))}
    </DataTable>
  );
}

function UserFilters({ query }: { query: URLSearchParams }) {
  return (
    <FilterForm query={query} fields={['q', 'role', 'account_enabled', 'auth_provider']}>
      {(v, set) => (
        <>
          <Field label={t('search')} name="q" type="search" value={v.q!} onInput={(x) => set('q', x)} />
          <Field label={t('user.role')} name="role" value={v.role!} onInput={(x) => set('role', x)} />
          <Select label={t('user.enabled')} name="account_enabled" value={v.account_enabled!} options={[['', t('any')], ['true', t('yes')], ['false', t('no')]]} onChange={(x) => set('account_enabled', x)} />
          <Field label={t('user.provider')} name="auth_provider" value={v.auth_provider!} onInput={(x) => set('auth_provider', x)} />
        </>
      )}
    </FilterForm>
  );
}

/** The API query of the user filters in the URL. */
export function userQuery(query: URLSearchParams) {
  return { q: query.get('q'), role: query.get('role'), account_enabled: query.get('account_enabled'), auth_provider: query.get('auth_provider'), after: query.get('after'), limit: 20, include_count: true };
}

/** Filters, then one page of users: the tenant's own list, or a tenant's seen from `_platforms`. */
export function FilteredUsers({ state, query, path, link }: { state: Async<Page<User>>; query: URLSearchParams; path: string; link?: (u: User) => string }) {
  return (
    <>
      <UserFilters query={query} />
      <PagedList state={state} empty={t('users.empty')} query={query} path={path}>
        {(users) => <UserTable users={users} link={link} />}
      </PagedList>
    </>
  );
}

export function UsersSection({ query }: { query: URLSearchParams }) {
  const { api } = useServices();
  const state = useAsync(() => api.get<Page<User>>('/api/v1/users', userQuery(query)), query.toString());
  return (
    <>
      <TitleRow title={t('nav.users')}>
        <a class="button primary" href={href('/users/new')}>
          {t('user.new')}
        </a>
      </TitleRow>
      <FilteredUsers state={state} query={query} path="/users" link={(u) => href(`/users/${encodeURIComponent(u.id)}`)} />
    </>
  );
}

interface UserForm {
  email: string;
  password: string;
  username: string;
  given_name: string;
  family_name: string;
  name: string;
  nickname: string;
  role: string;
  account_enabled: boolean;
}

function UserFormView({ initial, create, onSubmit }: { initial?: User; create?: boolean; onSubmit(body: Record<string, unknown>): Promise<void> }) {
  const { config } = useServices();
  const { values: f, set, text } = useFormState<UserForm>({
    email: initial?.email ?? '',
    password: '',
    username: initial?.username ?? '',
    given_name: initial?.given_name ?? '',
    family_name: initial?.family_name ?? '',
    name: initial?.name ?? '',
    nickname: initial?.nickname ?? '',
    role: initial?.role ?? 'user',
    account_enabled: initial?.account_enabled ?? true,
  });
  return (
    <ApiForm
      submitLabel={create ? t('create') : t('save')}
      busyLabel={t('saving')}
      onSubmit={() => {
        const body: Record<string, unknown> = { email: f.email, role: f.role, account_enabled: f.account_enabled };
        if (create) body.password = f.password;
        for (const k of ['username', 'given_name', 'family_name', 'name', 'nickname'] as const) {
          if (f[k].trim()) body[k] = f[k].trim();
          // An emptied field is cleared (the API takes null for that); left out, the old value stayed.
          else if (!create && initial?.[k]) body[k] = null;
        }
        return onSubmit(body);
      }}
    >
      {(fe) => (
        <>
          <Field label={t('user.email')} type="email" required {...text('email', fe)} />
          {create ? <Field label={t('user.password')} type="password" autocomplete="new-password" required {...text('password', fe)} /> : null}
          <Field label={t('user.username')} {...text('username', fe)} />
          <Field label={t('user.given_name')} {...text('given_name', fe)} />
          <Field label={t('user.family_name')} {...text('family_name', fe)} />
          <Field label={t('user.name')} {...text('name', fe)} />
          <Field label={t('user.nickname')} {...text('nickname', fe)} />
          <Select label={t('user.role')} name="role" value={f.role} options={roles(config.platform)} onChange={(v) => set('role', v)} error={fe('role')} />
          <Checkbox label={t('user.enabled')} name="account_enabled" checked={f.account_enabled} onChange={(v) => set('account_enabled', v)} error={fe('account_enabled')} />
        </>
      )}
    </ApiForm>
  );
}

export function UserNew() {
  const { api, notify } = useServices();
  return (
    <>
      <h1>{t('user.new')}</h1>
      <UserFormView
        create
        onSubmit={async (body) => {
          const res = await api.json<{ data: User }>('POST', '/api/v1/users', { body });
          notify(t('done.created'), 'ok');
          navigate(href(`/users/${encodeURIComponent(res.data.id)}`));
        }}
      />
    </>
  );
}

function PasswordReset({ path }: { path: string }) {
  const { api, notify } = useServices();
  const [pw, setPw] = useState('');
  const [error, setError] = useState<unknown>(null);
  return (
    <form
      class="form inline"
      noValidate
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        try {
          await api.json('POST', `${path}/password-reset`, { body: { new_password: pw } });
          setPw('');
          notify(t('done.password'), 'ok');
        } catch (err) {
          setError(err);
        }
      }}
    >
      <Field label={t('user.new_password')} name="new_password" type="password" autocomplete="new-password" value={pw} onInput={setPw} error={error instanceof ApiError ? (error.forField('new_password') ?? error.message) : error ? String(error) : undefined} />
      <div class="actions">
        <button type="submit">{t('user.reset_password')}</button>
      </div>
    </form>
  );
}

export function UserDetail({ id }: { id: string }) {
  const { api, notify } = useServices();
  const path = `/api/v1/users/${encodeURIComponent(id)}`;
  const state = useAsync(() => api.get<{ data: User }>(path), id);
  const sessions = useAsync(() => api.get<{ data: Session[] }>(`${path}/sessions`), id);
  const activity = useAsync(() => api.get<Page<AuditEntry>>(`${path}/activities`, { limit: 20 }), id);
  const [editing, setEditing] = useState(false);
  return (
    <Loader state={state}>
      {({ data: u }) => (
        <>
          <TitleRow title={u.email}>{u.locked ? <Badge tone="bad">{t('user.locked')}</Badge> : null}</TitleRow>
          <div class="toolbar">
            <EditToggle editing={editing} onToggle={setEditing} />
            {u.locked ? (
              <ActionButton label={t('user.unlock')} run={() => api.json('DELETE', `${path}/lock`)} done={t('done.unlocked')} then={state.reload} />
            ) : (
              <ActionButton label={t('user.lock')} question={t('user.lock.q', { name: u.email })} run={() => api.json('POST', `${path}/lock`)} done={t('done.locked')} then={state.reload} />
            )}
            <ActionButton label={t('user.reset_mfa')} question={t('user.reset_mfa.q', { name: u.email })} run={() => api.json('POST', `${path}/mfa/reset`)} done={t('done.mfa')} then={state.reload} />
            <ActionButton danger label={t('delete')} question={t('user.delete.q', { name: u.email })} run={() => api.json('DELETE', path)} done={t('done.deleted')} then={() => navigate(href('/users'))} />
          </div>
          {editing ? (
            <UserFormView
              initial={u}
              onSubmit={async (body) => {
                await api.json('PATCH', path, { body });
                notify(t('done.saved'), 'ok');
                setEditing(false);
                state.reload();
              }}
            />
          ) : (
            <PropList
              items={[
                ['id', u.id, 'mono'],
                [t('user.name'), u.name || '—'],
                [t('user.username'), u.username || '—'],
                [t('user.role'), u.role],
                [t('user.enabled'), u.account_enabled ? t('yes') : t('no')],
                [t('user.verified'), u.email_verified ? t('yes') : t('no')],
                [t('user.provider'), u.auth_provider],
                ['MFA', u.mfa.enabled ? u.mfa.methods.join(', ') || t('yes') : t('no')],
                [t('user.last_login'), fmtDate(u.last_login_at)],
              ]}
            />
          )}
          <section aria-labelledby="pw-h">
            <h2 id="pw-h">{t('user.reset_password')}</h2>
            <PasswordReset path={path} />
          </section>
          <section aria-labelledby="us-h">
            <h2 id="us-h">{t('nav.sessions')}</h2>
            <ListLoader state={sessions} empty={t('sessions.empty')}>
              {(rows) => <SessionTable sessions={rows} onChanged={sessions.reload} />}
            </ListLoader>
          </section>
          <section aria-labelledby="ua-h">
            <h2 id="ua-h">{t('user.activity')}</h2>
            <ListLoader state={activity} empty={t('audit.empty')}>
              {(rows) => <AuditTable entries={rows} />}
            </ListLoader>
          </section>
        </>
      )}
    </Loader>
  );
}
