/** Clients: list (search, filters, paging), create with per-type defaults, edit, actions, stats. */
import { useState } from 'preact/hooks';
import { ApiError, type Page } from '../api';
import { t } from '../i18n';
import { href, navigate } from '../router';
import { ConfirmButton } from '../components/confirm-button';
import { ErrorBox } from '../components/error-box';
import { Checkbox, Field, Select } from '../components/fields';
import { FilterForm } from '../components/filter-form';
import { Pager } from '../components/list';
import { Empty, Loader } from '../components/loader';
import { SecretOnce } from '../components/secret-once';
import { fmtDate } from '../format';
import { useAction, useAsync, useServices } from '../services';

export interface Client {
  client_id: string;
  client_secret?: string;
  client_name: string;
  application_type: string;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  scope: string;
  token_endpoint_auth_method: string;
  client_uri?: string | null;
  logo_uri?: string | null;
  policy_uri?: string | null;
  tos_uri?: string | null;
  contacts: string[];
  description?: string | null;
  tags: string[];
  require_pkce: boolean;
  id_token_signed_response_alg?: string | null;
  subject_type?: string | null;
  default_max_age?: number | null;
  backchannel_logout_uri?: string | null;
  active: boolean;
  created_at: string;
  updated_at: string;
}

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const GRANTS = ['authorization_code', 'refresh_token', 'client_credentials', DEVICE_GRANT];
const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt', 'none'];

type Preset = 'web' | 'spa' | 'native' | 'service' | 'device';

/** Sensible defaults per kind of application (spec 1.1). */
function presetDefaults(p: Preset): Partial<FormState> {
  switch (p) {
    case 'web':
      return { application_type: 'web', grant_types: ['authorization_code', 'refresh_token'], token_endpoint_auth_method: 'client_secret_basic', require_pkce: true, scope: 'openid profile email offline_access' };
    case 'spa':
      return { application_type: 'spa', grant_types: ['authorization_code', 'refresh_token'], token_endpoint_auth_method: 'none', require_pkce: true, scope: 'openid profile email' };
    case 'native':
      return { application_type: 'native', grant_types: ['authorization_code', 'refresh_token'], token_endpoint_auth_method: 'none', require_pkce: true, scope: 'openid profile email offline_access' };
    case 'service':
      return { application_type: 'web', grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic', require_pkce: false, scope: '', redirect_uris: '' };
    case 'device':
      return { application_type: 'native', grant_types: [DEVICE_GRANT, 'refresh_token'], token_endpoint_auth_method: 'client_secret_basic', require_pkce: false, scope: 'openid profile offline_access', redirect_uris: '' };
  }
}

interface FormState {
  client_name: string;
  application_type: string;
  redirect_uris: string;
  post_logout_redirect_uris: string;
  grant_types: string[];
  token_endpoint_auth_method: string;
  scope: string;
  require_pkce: boolean;
  description: string;
  client_uri: string;
  logo_uri: string;
  policy_uri: string;
  tos_uri: string;
  contacts: string;
  tags: string;
  id_token_signed_response_alg: string;
  subject_type: string;
  default_max_age: string;
  backchannel_logout_uri: string;
}

const lines = (s: string) => s.split(/[\n]+/).map((x) => x.trim()).filter(Boolean);
const commas = (s: string) => s.split(/[,\n]+/).map((x) => x.trim()).filter(Boolean);

function fromClient(c?: Client): FormState {
  return {
    client_name: c?.client_name ?? '',
    application_type: c?.application_type ?? 'web',
    redirect_uris: (c?.redirect_uris ?? []).join('\n'),
    post_logout_redirect_uris: (c?.post_logout_redirect_uris ?? []).join('\n'),
    grant_types: c?.grant_types ?? ['authorization_code', 'refresh_token'],
    token_endpoint_auth_method: c?.token_endpoint_auth_method ?? 'client_secret_basic',
    scope: c?.scope ?? 'openid profile email offline_access',
    require_pkce: c?.require_pkce ?? true,
    description: c?.description ?? '',
    client_uri: c?.client_uri ?? '',
    logo_uri: c?.logo_uri ?? '',
    policy_uri: c?.policy_uri ?? '',
    tos_uri: c?.tos_uri ?? '',
    contacts: (c?.contacts ?? []).join(', '),
    tags: (c?.tags ?? []).join(', '),
    id_token_signed_response_alg: c?.id_token_signed_response_alg ?? '',
    subject_type: c?.subject_type ?? '',
    default_max_age: c?.default_max_age ? String(c.default_max_age) : '',
    backchannel_logout_uri: c?.backchannel_logout_uri ?? '',
  };
}

/** The request body: lists split, empty optional fields left out (a PUT then clears them). */
function toBody(f: FormState): Record<string, unknown> {
  const body: Record<string, unknown> = {
    client_name: f.client_name,
    application_type: f.application_type,
    redirect_uris: lines(f.redirect_uris),
    post_logout_redirect_uris: lines(f.post_logout_redirect_uris),
    grant_types: f.grant_types,
    response_types: f.grant_types.includes('authorization_code') ? ['code'] : [],
    token_endpoint_auth_method: f.token_endpoint_auth_method,
    require_pkce: f.require_pkce,
    contacts: commas(f.contacts),
    tags: commas(f.tags),
  };
  for (const k of ['scope', 'description', 'client_uri', 'logo_uri', 'policy_uri', 'tos_uri', 'id_token_signed_response_alg', 'subject_type', 'backchannel_logout_uri'] as const) {
    if (f[k].trim()) body[k] = f[k].trim();
  }
  if (f.default_max_age.trim()) body.default_max_age = Number(f.default_max_age);
  return body;
}

function ClientForm({ initial, onSubmit, submitLabel, showPreset }: { initial?: Client; onSubmit(body: Record<string, unknown>): Promise<void>; submitLabel: string; showPreset?: boolean }) {
  const [f, setF] = useState<FormState>(fromClient(initial));
  const [preset, setPreset] = useState<Preset>('web');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const set = <K extends keyof FormState>(k: K, v: FormState[K]) => setF((s) => ({ ...s, [k]: v }));
  const fe = (name: string) => (error instanceof ApiError ? error.forField(name) : undefined);
  return (
    <form
      class="form"
      noValidate
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(null);
        try {
          await onSubmit(toBody(f));
        } catch (err) {
          setError(err);
        } finally {
          setBusy(false);
        }
      }}
    >
      {error ? <ErrorBox error={error} /> : null}
      {showPreset ? (
        <Select
          label={t('client.kind')}
          name="preset"
          value={preset}
          options={[
            ['web', t('client.kind.web')],
            ['spa', t('client.kind.spa')],
            ['native', t('client.kind.native')],
            ['service', t('client.kind.service')],
            ['device', t('client.kind.device')],
          ]}
          onChange={(v) => {
            setPreset(v as Preset);
            setF((s) => ({ ...s, ...presetDefaults(v as Preset) }));
          }}
        />
      ) : null}
      <Field label={t('client.name')} name="client_name" required value={f.client_name} onInput={(v) => set('client_name', v)} error={fe('client_name')} />
      <Select label={t('client.type')} name="application_type" value={f.application_type} options={[['web', 'web'], ['spa', 'spa'], ['native', 'native']]} onChange={(v) => set('application_type', v)} error={fe('application_type')} />
      <Field label={t('client.redirects')} name="redirect_uris" multiline hint={t('hint.lines')} value={f.redirect_uris} onInput={(v) => set('redirect_uris', v)} error={fe('redirect_uris')} />
      <Field label={t('client.logout_redirects')} name="post_logout_redirect_uris" multiline hint={t('hint.lines')} value={f.post_logout_redirect_uris} onInput={(v) => set('post_logout_redirect_uris', v)} error={fe('post_logout_redirect_uris')} />
      <fieldset>
        <legend>{t('client.grants')}</legend>
        {GRANTS.map((g) => (
          <Checkbox key={g} label={g === DEVICE_GRANT ? 'device_code' : g} name="grant_types" checked={f.grant_types.includes(g)} onChange={(on) => set('grant_types', on ? [...f.grant_types, g] : f.grant_types.filter((x) => x !== g))} />
        ))}
        {fe('grant_types') ? <small class="field-error">{fe('grant_types')}</small> : null}
      </fieldset>
      <Select label={t('client.auth_method')} name="token_endpoint_auth_method" value={f.token_endpoint_auth_method} options={AUTH_METHODS.map((m) => [m, m])} onChange={(v) => set('token_endpoint_auth_method', v)} error={fe('token_endpoint_auth_method')} />
      <Field label={t('client.scope')} name="scope" hint={t('hint.spaces')} value={f.scope} onInput={(v) => set('scope', v)} error={fe('scope')} />
      <Checkbox label={t('client.pkce')} name="require_pkce" checked={f.require_pkce} onChange={(v) => set('require_pkce', v)} error={fe('require_pkce')} />
      <details>
        <summary>{t('more.fields')}</summary>
        <Field label={t('description')} name="description" multiline value={f.description} onInput={(v) => set('description', v)} error={fe('description')} />
        <Field label="client_uri" name="client_uri" type="url" value={f.client_uri} onInput={(v) => set('client_uri', v)} error={fe('client_uri')} />
        <Field label="logo_uri" name="logo_uri" type="url" value={f.logo_uri} onInput={(v) => set('logo_uri', v)} error={fe('logo_uri')} />
        <Field label="policy_uri" name="policy_uri" type="url" value={f.policy_uri} onInput={(v) => set('policy_uri', v)} error={fe('policy_uri')} />
        <Field label="tos_uri" name="tos_uri" type="url" value={f.tos_uri} onInput={(v) => set('tos_uri', v)} error={fe('tos_uri')} />
        <Field label={t('client.contacts')} name="contacts" hint={t('hint.commas')} value={f.contacts} onInput={(v) => set('contacts', v)} error={fe('contacts')} />
        <Field label={t('client.tags')} name="tags" hint={t('hint.commas')} value={f.tags} onInput={(v) => set('tags', v)} error={fe('tags')} />
        <Select label="id_token_signed_response_alg" name="id_token_signed_response_alg" value={f.id_token_signed_response_alg} options={[['', t('default')], ['RS256', 'RS256'], ['ES256', 'ES256'], ['EdDSA', 'EdDSA']]} onChange={(v) => set('id_token_signed_response_alg', v)} error={fe('id_token_signed_response_alg')} />
        <Select label="subject_type" name="subject_type" value={f.subject_type} options={[['', t('default')], ['public', 'public'], ['pairwise', 'pairwise']]} onChange={(v) => set('subject_type', v)} error={fe('subject_type')} />
        <Field label="default_max_age" name="default_max_age" type="number" value={f.default_max_age} onInput={(v) => set('default_max_age', v)} error={fe('default_max_age')} />
        <Field label="backchannel_logout_uri" name="backchannel_logout_uri" type="url" value={f.backchannel_logout_uri} onInput={(v) => set('backchannel_logout_uri', v)} error={fe('backchannel_logout_uri')} />
      </details>
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? t('saving') : submitLabel}
        </button>
      </div>
    </form>
  );
}

export function ClientsSection({ query }: { query: URLSearchParams }) {
  const { api } = useServices();
  const state = useAsync(
    () => api.get<Page<Client>>('/api/v1/clients', { q: query.get('q'), application_type: query.get('application_type'), active: query.get('active'), after: query.get('after'), limit: 20, include_count: true }),
    query.toString(),
  );
  return (
    <>
      <div class="title-row">
        <h1>{t('nav.clients')}</h1>
        <a class="button primary" href={href('/clients/new')}>
          {t('client.new')}
        </a>
      </div>
      <FilterForm query={query} fields={['q', 'application_type', 'active']}>
        {(v, set) => (
          <>
            <Field label={t('search')} name="q" type="search" value={v.q!} onInput={(x) => set('q', x)} />
            <Select label={t('client.type')} name="application_type" value={v.application_type!} options={[['', t('any')], ['web', 'web'], ['spa', 'spa'], ['native', 'native']]} onChange={(x) => set('application_type', x)} />
            <Select label={t('status')} name="active" value={v.active!} options={[['', t('any')], ['true', t('active')], ['false', t('inactive')]]} onChange={(x) => set('active', x)} />
          </>
        )}
      </FilterForm>
      <Loader state={state}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty>{t('clients.empty')}</Empty>
          ) : (
            <>
              <table>
                <caption class="sr-only">{t('nav.clients')}</caption>
                <thead>
                  <tr>
                    <th scope="col">{t('client.name')}</th>
                    <th scope="col">client_id</th>
                    <th scope="col">{t('client.type')}</th>
                    <th scope="col">{t('status')}</th>
                    <th scope="col">{t('created')}</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((c) => (
                    <tr key={c.client_id}>
                      <td>
                        <a href={href(`/clients/${encodeURIComponent(c.client_id)}`)}>{c.client_name}</a>
                      </td>
                      <td class="mono">{c.client_id}</td>
                      <td>{c.application_type}</td>
                      <td>
                        <span class={`badge ${c.active ? 'ok' : 'bad'}`}>{c.active ? t('active') : t('inactive')}</span>
                      </td>
                      <td>{fmtDate(c.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager page={page} query={query} path="/clients" />
            </>
          )
        }
      </Loader>
    </>
  );
}

export function ClientNew() {
  const { api } = useServices();
  const [created, setCreated] = useState<Client | null>(null);
  if (created) {
    return (
      <>
        <h1>{t('client.created')}</h1>
        <p>
          <strong>{created.client_name}</strong> — <span class="mono">{created.client_id}</span>
        </p>
        {created.client_secret ? <SecretOnce label={t('client.secret')} value={created.client_secret} /> : <p>{t('client.public')}</p>}
        <p>
          <a href={href(`/clients/${encodeURIComponent(created.client_id)}`)}>{t('client.open')}</a>
        </p>
      </>
    );
  }
  return (
    <>
      <h1>{t('client.new')}</h1>
      <ClientForm
        showPreset
        submitLabel={t('create')}
        onSubmit={async (body) => {
          const res = await api.json<{ data: Client }>('POST', '/api/v1/clients', { body });
          setCreated(res.data);
        }}
      />
    </>
  );
}

interface ClientStats {
  tokens_issued: number;
  active_sessions: number;
  active_grants: number;
  last_used_at: string | null;
}

export function ClientDetail({ id }: { id: string }) {
  const { api, notify } = useServices();
  const act = useAction();
  const path = `/api/v1/clients/${encodeURIComponent(id)}`;
  const state = useAsync(() => api.get<{ data: Client }>(path), id);
  const stats = useAsync(() => api.get<{ data: ClientStats }>(`${path}/stats`), id);
  const [editing, setEditing] = useState(false);
  const [secret, setSecret] = useState<string | null>(null);
  return (
    <Loader state={state}>
      {({ data: c }) => (
        <>
          <div class="title-row">
            <h1>{c.client_name}</h1>
            <span class={`badge ${c.active ? 'ok' : 'bad'}`}>{c.active ? t('active') : t('inactive')}</span>
          </div>
          {secret ? <SecretOnce label={t('client.new_secret')} value={secret} /> : null}
          <div class="toolbar">
            <button type="button" onClick={() => setEditing(!editing)} aria-expanded={editing}>
              {t('edit')}
            </button>
            {c.active ? (
              <ConfirmButton label={t('deactivate')} question={t('client.deactivate.q', { name: c.client_name })} onConfirm={async () => void ((await act(() => api.json('POST', `${path}/deactivate`), t('done.deactivated'))) && state.reload())} />
            ) : (
              <button type="button" onClick={async () => (await act(() => api.json('POST', `${path}/activate`), t('done.activated'))) && state.reload()}>
                {t('activate')}
              </button>
            )}
            {c.token_endpoint_auth_method !== 'none' ? (
              <ConfirmButton
                label={t('client.regenerate')}
                question={t('client.regenerate.q')}
                onConfirm={async () => {
                  try {
                    const res = await api.json<{ data: { client_secret: string } }>('POST', `${path}/secret`);
                    setSecret(res.data.client_secret);
                    notify(t('done.regenerated'), 'ok');
                  } catch (err) {
                    notify(String((err as Error).message), 'error');
                  }
                }}
              />
            ) : null}
            <ConfirmButton danger label={t('delete')} question={t('client.delete.q', { name: c.client_name })} onConfirm={async () => void ((await act(() => api.json('DELETE', path), t('done.deleted'))) && navigate(href('/clients')))} />
          </div>
          {editing ? (
            <ClientForm
              initial={c}
              submitLabel={t('save')}
              onSubmit={async (body) => {
                await api.json('PUT', path, { body });
                notify(t('done.saved'), 'ok');
                setEditing(false);
                state.reload();
              }}
            />
          ) : (
            <dl class="props">
              <dt>client_id</dt>
              <dd class="mono">{c.client_id}</dd>
              <dt>{t('client.type')}</dt>
              <dd>{c.application_type}</dd>
              <dt>{t('client.grants')}</dt>
              <dd>{c.grant_types.join(', ') || '—'}</dd>
              <dt>{t('client.redirects')}</dt>
              <dd>{c.redirect_uris.join(', ') || '—'}</dd>
              <dt>{t('client.auth_method')}</dt>
              <dd>{c.token_endpoint_auth_method}</dd>
              <dt>{t('client.scope')}</dt>
              <dd>{c.scope || '—'}</dd>
              <dt>{t('description')}</dt>
              <dd>{c.description || '—'}</dd>
              <dt>{t('created')}</dt>
              <dd>{fmtDate(c.created_at)}</dd>
            </dl>
          )}
          <section aria-labelledby="cstats">
            <h2 id="cstats">{t('client.stats')}</h2>
            <Loader state={stats}>
              {({ data: s }) => (
                <dl class="cards">
                  <div>
                    <dt>{t('stats.tokens')}</dt>
                    <dd>{s.tokens_issued}</dd>
                  </div>
                  <div>
                    <dt>{t('stats.sessions')}</dt>
                    <dd>{s.active_sessions}</dd>
                  </div>
                  <div>
                    <dt>{t('stats.grants')}</dt>
                    <dd>{s.active_grants}</dd>
                  </div>
                  <div>
                    <dt>{t('stats.last_used')}</dt>
                    <dd>{fmtDate(s.last_used_at)}</dd>
                  </div>
                </dl>
              )}
            </Loader>
          </section>
        </>
      )}
    </Loader>
  );
}
