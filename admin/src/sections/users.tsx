/** Users: list with search and filters, create, edit, lock, password and MFA reset, sessions, activity. */
import { useState } from 'preact/hooks';
import { ApiError, type Page } from '../api';
import { t } from '../i18n';
import { href, navigate } from '../router';
import { Checkbox, ConfirmButton, Empty, ErrorBox, Field, FilterForm, Loader, Pager, Select, fmtDate, useAction, useAsync, useServices } from '../ui';
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

/** A table of users; `base` is where each user's page lives (the tenant's or a platform view). */
export function UserTable({ users, link }: { users: User[]; link?: (u: User) => string }) {
  return (
    <table>
      <caption class="sr-only">{t('nav.users')}</caption>
      <thead>
        <tr>
          <th scope="col">{t('user.email')}</th>
          <th scope="col">{t('user.name')}</th>
          <th scope="col">{t('user.role')}</th>
          <th scope="col">{t('status')}</th>
          <th scope="col">{t('user.last_login')}</th>
        </tr>
      </thead>
      <tbody>
        {users.map((u) => (
          <tr key={u.id}>
            <td>{link ? <a href={link(u)}>{u.email}</a> : u.email}</td>
            <td>{u.name || u.username || '—'}</td>
            <td>{u.role}</td>
            <td>
              {u.locked ? <span class="badge bad">{t('user.locked')}</span> : null} {u.account_enabled ? null : <span class="badge bad">{t('user.disabled')}</span>}
              {!u.locked && u.account_enabled ? <span class="badge ok">{t('active')}</span> : null}
            </td>
            <td>{fmtDate(u.last_login_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function UserFilters({ query }: { query: URLSearchParams }) {
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

export function userQuery(query: URLSearchParams) {
  return { q: query.get('q'), role: query.get('role'), account_enabled: query.get('account_enabled'), auth_provider: query.get('auth_provider'), after: query.get('after'), limit: 20, include_count: true };
}

export function UsersSection({ query }: { query: URLSearchParams }) {
  const { api } = useServices();
  const state = useAsync(() => api.get<Page<User>>('/api/v1/users', userQuery(query)), query.toString());
  return (
    <>
      <div class="title-row">
        <h1>{t('nav.users')}</h1>
        <a class="button primary" href={href('/users/new')}>
          {t('user.new')}
        </a>
      </div>
      <UserFilters query={query} />
      <Loader state={state}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty>{t('users.empty')}</Empty>
          ) : (
            <>
              <UserTable users={page.data} link={(u) => href(`/users/${encodeURIComponent(u.id)}`)} />
              <Pager page={page} query={query} path="/users" />
            </>
          )
        }
      </Loader>
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
  const [f, setF] = useState<UserForm>({
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
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const set = <K extends keyof UserForm>(k: K, v: UserForm[K]) => setF((s) => ({ ...s, [k]: v }));
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  return (
    <form
      class="form"
      noValidate
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(null);
        const body: Record<string, unknown> = { email: f.email, role: f.role, account_enabled: f.account_enabled };
        if (create) body.password = f.password;
        for (const k of ['username', 'given_name', 'family_name', 'name', 'nickname'] as const) if (f[k].trim()) body[k] = f[k].trim();
        try {
          await onSubmit(body);
        } catch (err) {
          setError(err);
        } finally {
          setBusy(false);
        }
      }}
    >
      {error ? <ErrorBox error={error} /> : null}
      <Field label={t('user.email')} name="email" type="email" required value={f.email} onInput={(v) => set('email', v)} error={fe('email')} />
      {create ? <Field label={t('user.password')} name="password" type="password" autocomplete="new-password" required value={f.password} onInput={(v) => set('password', v)} error={fe('password')} /> : null}
      <Field label={t('user.username')} name="username" value={f.username} onInput={(v) => set('username', v)} error={fe('username')} />
      <Field label={t('user.given_name')} name="given_name" value={f.given_name} onInput={(v) => set('given_name', v)} error={fe('given_name')} />
      <Field label={t('user.family_name')} name="family_name" value={f.family_name} onInput={(v) => set('family_name', v)} error={fe('family_name')} />
      <Field label={t('user.name')} name="name" value={f.name} onInput={(v) => set('name', v)} error={fe('name')} />
      <Field label={t('user.nickname')} name="nickname" value={f.nickname} onInput={(v) => set('nickname', v)} error={fe('nickname')} />
      <Select label={t('user.role')} name="role" value={f.role} options={roles(config.platform)} onChange={(v) => set('role', v)} error={fe('role')} />
      <Checkbox label={t('user.enabled')} name="account_enabled" checked={f.account_enabled} onChange={(v) => set('account_enabled', v)} error={fe('account_enabled')} />
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? t('saving') : create ? t('create') : t('save')}
        </button>
      </div>
    </form>
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
  const act = useAction();
  const path = `/api/v1/users/${encodeURIComponent(id)}`;
  const state = useAsync(() => api.get<{ data: User }>(path), id);
  const sessions = useAsync(() => api.get<{ data: Session[] }>(`${path}/sessions`), id);
  const activity = useAsync(() => api.get<Page<AuditEntry>>(`${path}/activities`, { limit: 20 }), id);
  const [editing, setEditing] = useState(false);
  return (
    <Loader state={state}>
      {({ data: u }) => (
        <>
          <div class="title-row">
            <h1>{u.email}</h1>
            {u.locked ? <span class="badge bad">{t('user.locked')}</span> : null}
          </div>
          <div class="toolbar">
            <button type="button" onClick={() => setEditing(!editing)} aria-expanded={editing}>
              {t('edit')}
            </button>
            {u.locked ? (
              <button type="button" onClick={async () => (await act(() => api.json('DELETE', `${path}/lock`), t('done.unlocked'))) && state.reload()}>
                {t('user.unlock')}
              </button>
            ) : (
              <ConfirmButton label={t('user.lock')} question={t('user.lock.q', { name: u.email })} onConfirm={async () => void ((await act(() => api.json('POST', `${path}/lock`), t('done.locked'))) && state.reload())} />
            )}
            <ConfirmButton label={t('user.reset_mfa')} question={t('user.reset_mfa.q', { name: u.email })} onConfirm={async () => void ((await act(() => api.json('POST', `${path}/mfa/reset`), t('done.mfa'))) && state.reload())} />
            <ConfirmButton danger label={t('delete')} question={t('user.delete.q', { name: u.email })} onConfirm={async () => void ((await act(() => api.json('DELETE', path), t('done.deleted'))) && navigate(href('/users')))} />
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
            <dl class="props">
              <dt>id</dt>
              <dd class="mono">{u.id}</dd>
              <dt>{t('user.name')}</dt>
              <dd>{u.name || '—'}</dd>
              <dt>{t('user.username')}</dt>
              <dd>{u.username || '—'}</dd>
              <dt>{t('user.role')}</dt>
              <dd>{u.role}</dd>
              <dt>{t('user.enabled')}</dt>
              <dd>{u.account_enabled ? t('yes') : t('no')}</dd>
              <dt>{t('user.verified')}</dt>
              <dd>{u.email_verified ? t('yes') : t('no')}</dd>
              <dt>{t('user.provider')}</dt>
              <dd>{u.auth_provider}</dd>
              <dt>MFA</dt>
              <dd>{u.mfa.enabled ? u.mfa.methods.join(', ') || t('yes') : t('no')}</dd>
              <dt>{t('user.last_login')}</dt>
              <dd>{fmtDate(u.last_login_at)}</dd>
            </dl>
          )}
          <section aria-labelledby="pw-h">
            <h2 id="pw-h">{t('user.reset_password')}</h2>
            <PasswordReset path={path} />
          </section>
          <section aria-labelledby="us-h">
            <h2 id="us-h">{t('nav.sessions')}</h2>
            <Loader state={sessions}>{({ data }) => (data.length ? <SessionTable sessions={data} onChanged={sessions.reload} /> : <Empty>{t('sessions.empty')}</Empty>)}</Loader>
          </section>
          <section aria-labelledby="ua-h">
            <h2 id="ua-h">{t('user.activity')}</h2>
            <Loader state={activity}>{(page) => (page.data.length ? <AuditTable entries={page.data} /> : <Empty>{t('audit.empty')}</Empty>)}</Loader>
          </section>
        </>
      )}
    </Loader>
  );
}
