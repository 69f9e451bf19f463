/** Clients: list (search, filters, paging), create with per-type defaults, edit, actions, stats. */
import { useState } from 'preact/hooks';
import type { Page } from '../api';
import { ActionButton } from '../components/action-button';
import { ApiForm } from '../components/api-form';
import { Badge } from '../components/badge';
import { ConfirmButton } from '../components/confirm-button';
import { DataTable } from '../components/data-table';
import { EditToggle } from '../components/edit-toggle';
import { Checkbox, Field, Select } from '../components/fields';
import { ActiveSelect, FilterForm } from '../components/filter-form';
import { useFormState } from '../components/form-state';
import { PagedList } from '../components/list';
import { Loader } from '../components/loader';
import { PropList, StatCards } from '../components/props';
import { SecretOnce } from '../components/secret-once';
import { TitleRow } from '../components/title-row';
import { fmtDate } from '../format';
import { t } from '../i18n';
import { href, navigate } from '../router';
import { useAsync, useServices } from '../services';

export interface Client {
  client_id: string;
  client_secret?: string;
  client_name: string;
  application_type: string;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  scope: string | null;
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
    // An existing client's unset scope stays unset; only a new client starts from a default.
    scope: c ? (c.scope ?? '') : 'openid profile email offline_access',
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

/** The create body: lists split, empty optional fields left out (unset). */
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

/**
 * The PATCH body of an edit: only the fields changed in the form, an emptied optional field as null
 * (cleared). Fields the form does not show (first_party, jwks_uri, jwks, ...) are not sent, so the
 * API keeps them as stored; a PUT of the form's fields alone used to erase them. response_types is
 * left to the API, which derives it from changed grant types.
 */
function changedFields(before: FormState, after: FormState): Record<string, unknown> {
  const [was, now] = [toBody(before), toBody(after)];
  const body: Record<string, unknown> = {};
  for (const k of new Set([...Object.keys(was), ...Object.keys(now)])) {
    if (k === 'response_types' || JSON.stringify(was[k]) === JSON.stringify(now[k])) continue;
    body[k] = k in now ? now[k] : null;
  }
  return body;
}

function ClientForm({ initial, onSubmit, submitLabel, showPreset }: { initial?: Client; onSubmit(body: Record<string, unknown>): Promise<void>; submitLabel: string; showPreset?: boolean }) {
  const { values: f, set, setValues: setF, text } = useFormState<FormState>(() => fromClient(initial));
  const [preset, setPreset] = useState<Preset>('web');
  return (
    <ApiForm submitLabel={submitLabel} busyLabel={t('saving')} onSubmit={() => onSubmit(initial ? changedFields(fromClient(initial), f) : toBody(f))}>
      {(fe) => (
        <>
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
          <Field label={t('client.name')} required {...text('client_name', fe)} />
          <Select label={t('client.type')} name="application_type" value={f.application_type} options={[['web', 'web'], ['spa', 'spa'], ['native', 'native']]} onChange={(v) => set('application_type', v)} error={fe('application_type')} />
          <Field label={t('client.redirects')} multiline hint={t('hint.lines')} {...text('redirect_uris', fe)} />
          <Field label={t('client.logout_redirects')} multiline hint={t('hint.lines')} {...text('post_logout_redirect_uris', fe)} />
          <fieldset>
            <legend>{t('client.grants')}</legend>
            {GRANTS.map((g) => (
              <Checkbox key={g} label={g === DEVICE_GRANT ? 'device_code' : g} name="grant_types" checked={f.grant_types.includes(g)} onChange={(on) => set('grant_types', on ? [...f.grant_types, g] : f.grant_types.filter((x) => x !== g))} />
            ))}
            {fe('grant_types') ? <small class="field-error">{fe('grant_types')}</small> : null}
          </fieldset>
          <Select label={t('client.auth_method')} name="token_endpoint_auth_method" value={f.token_endpoint_auth_method} options={AUTH_METHODS.map((m) => [m, m])} onChange={(v) => set('token_endpoint_auth_method', v)} error={fe('token_endpoint_auth_method')} />
          <Field label={t('client.scope')} hint={t('hint.spaces')} {...text('scope', fe)} />
          <Checkbox label={t('client.pkce')} name="require_pkce" checked={f.require_pkce} onChange={(v) => set('require_pkce', v)} error={fe('require_pkce')} />
          <details>
            <summary>{t('more.fields')}</summary>
            <Field label={t('description')} multiline {...text('description', fe)} />
            <Field label="client_uri" type="url" {...text('client_uri', fe)} />
            <Field label="logo_uri" type="url" {...text('logo_uri', fe)} />
            <Field label="policy_uri" type="url" {...text('policy_uri', fe)} />
            <Field label="tos_uri" type="url" {...text('tos_uri', fe)} />
            <Field label={t('client.contacts')} hint={t('hint.commas')} {...text('contacts', fe)} />
            <Field label={t('client.tags')} hint={t('hint.commas')} {...text('tags', fe)} />
            <Select label="id_token_signed_response_alg" name="id_token_signed_response_alg" value={f.id_token_signed_response_alg} options={[['', t('default')], ['RS256', 'RS256'], ['ES256', 'ES256'], ['EdDSA', 'EdDSA']]} onChange={(v) => set('id_token_signed_response_alg', v)} error={fe('id_token_signed_response_alg')} />
            <Select label="subject_type" name="subject_type" value={f.subject_type} options={[['', t('default')], ['public', 'public'], ['pairwise', 'pairwise']]} onChange={(v) => set('subject_type', v)} error={fe('subject_type')} />
            <Field label="default_max_age" type="number" {...text('default_max_age', fe)} />
            <Field label="backchannel_logout_uri" type="url" {...text('backchannel_logout_uri', fe)} />
          </details>
        </>
      )}
    </ApiForm>
  );
}

const ActiveBadge = ({ active }: { active: boolean }) => <Badge tone={active ? 'ok' : 'bad'}>{active ? t('active') : t('inactive')}</Badge>;

export function ClientsSection({ query }: { query: URLSearchParams }) {
  const { api } = useServices();
  const state = useAsync(
    () => api.get<Page<Client>>('/api/v1/clients', { q: query.get('q'), application_type: query.get('application_type'), active: query.get('active'), after: query.get('after'), limit: 20, include_count: true }),
    query.toString(),
  );
  return (
    <>
      <TitleRow title={t('nav.clients')}>
        <a class="button primary" href={href('/clients/new')}>
          {t('client.new')}
        </a>
      </TitleRow>
      <FilterForm query={query} fields={['q', 'application_type', 'active']}>
        {(v, set) => (
          <>
            <Field label={t('search')} name="q" type="search" value={v.q!} onInput={(x) => set('q', x)} />
            <Select label={t('client.type')} name="application_type" value={v.application_type!} options={[['', t('any')], ['web', 'web'], ['spa', 'spa'], ['native', 'native']]} onChange={(x) => set('application_type', x)} />
            <ActiveSelect value={v.active!} onChange={(x) => set('active', x)} />
          </>
        )}
      </FilterForm>
      <PagedList state={state} empty={t('clients.empty')} query={query} path="/clients">
        {(clients) => (
          <DataTable caption={t('nav.clients')} head={[t('client.name'), 'client_id', t('client.type'), t('status'), t('created')]}>
            {clients.map((c) => (
              <tr key={c.client_id}>
                <td>
                  <a href={href(`/clients/${encodeURIComponent(c.client_id)}`)}>{c.client_name}</a>
                </td>
                <td class="mono">{c.client_id}</td>
                <td>{c.application_type}</td>
                <td>
                  <ActiveBadge active={c.active} />
                </td>
                <td>{fmtDate(c.created_at)}</td>
              </tr>
            ))}
          </DataTable>
        )}
      </PagedList>
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
  const path = `/api/v1/clients/${encodeURIComponent(id)}`;
  const state = useAsync(() => api.get<{ data: Client }>(path), id);
  const stats = useAsync(() => api.get<{ data: ClientStats }>(`${path}/stats`), id);
  const [editing, setEditing] = useState(false);
  const [secret, setSecret] = useState<string | null>(null);
  return (
    <Loader state={state}>
      {({ data: c }) => (
        <>
          <TitleRow title={c.client_name}>
            <ActiveBadge active={c.active} />
          </TitleRow>
          {secret ? <SecretOnce label={t('client.new_secret')} value={secret} /> : null}
          <div class="toolbar">
            <EditToggle editing={editing} onToggle={setEditing} />
            {c.active ? (
              <ActionButton label={t('deactivate')} question={t('client.deactivate.q', { name: c.client_name })} run={() => api.json('POST', `${path}/deactivate`)} done={t('done.deactivated')} then={state.reload} />
            ) : (
              <ActionButton label={t('activate')} run={() => api.json('POST', `${path}/activate`)} done={t('done.activated')} then={state.reload} />
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
            <ActionButton danger label={t('delete')} question={t('client.delete.q', { name: c.client_name })} run={() => api.json('DELETE', path)} done={t('done.deleted')} then={() => navigate(href('/clients'))} />
          </div>
          {editing ? (
            <ClientForm
              initial={c}
              submitLabel={t('save')}
              onSubmit={async (body) => {
                // PATCH with the changed fields only (ClientForm): what the form does not show is kept.
                await api.json('PATCH', path, { body });
                notify(t('done.saved'), 'ok');
                setEditing(false);
                state.reload();
              }}
            />
          ) : (
            <PropList
              items={[
                ['client_id', c.client_id, 'mono'],
                [t('client.type'), c.application_type],
                [t('client.grants'), c.grant_types.join(', ') || '—'],
                [t('client.redirects'), c.redirect_uris.join(', ') || '—'],
                [t('client.auth_method'), c.token_endpoint_auth_method],
                [t('client.scope'), c.scope || '—'],
                [t('description'), c.description || '—'],
                [t('created'), fmtDate(c.created_at)],
              ]}
            />
          )}
          <section aria-labelledby="cstats">
            <h2 id="cstats">{t('client.stats')}</h2>
            <Loader state={stats}>
              {({ data: s }) => (
                <StatCards
                  items={[
                    [t('stats.tokens'), s.tokens_issued],
                    [t('stats.sessions'), s.active_sessions],
                    [t('stats.grants'), s.active_grants],
                    [t('stats.last_used'), fmtDate(s.last_used_at)],
                  ]}
                />
              )}
            </Loader>
          </section>
        </>
      )}
    </Loader>
  );
}
