/**
 * Settings: the seven tenant configuration sections (spec 1.5) as forms. A tenant admin edits the
 * signed-in tenant's own configuration (GET /api/v1/config, PUT /api/v1/config/:section, scopes
 * svc:config:*); in `_platforms` the administrators open any tenant's through the cross-tenant
 * resource (GET /api/v1/tenants/:slug/config, PUT .../config/:section); an `admin` of `_platforms`
 * (no cross-tenant scope) edits `_platforms`'s own. A save sends the stored section back with the
 * form's fields changed, so what the form does not show is kept. An empty field inherits
 * the global value; secrets are write-only (the API answers `********`, and sending that back keeps
 * them); a 422 is shown at the field it names. Under Features, a read-only table gives the callback
 * URL to register at each social provider, as the server computes it (relay through `_ops` included).
 */
import { useState } from 'preact/hooks';
import { ApiForm } from '../components/api-form';
import { Badge } from '../components/badge';
import { DataTable } from '../components/data-table';
import { Checkbox, Field, Select } from '../components/fields';
import { Loader } from '../components/loader';
import { t } from '../i18n';
import { href, setQuery } from '../router';
import { useAsync, useServices } from '../services';

type Kind = 'text' | 'number' | 'bool' | 'list' | 'secret' | 'url' | { options: string[] };
interface FieldSpec {
  path: string;
  kind: Kind;
}

const PALETTE = ['primary', 'secondary', 'accent', 'background', 'surface', 'text', 'error'];
const PROVIDERS = ['google', 'github', 'microsoft', 'apple', 'facebook', 'gitlab'];

// Only fields something acts on: the API refuses the others (UNSUPPORTED_FIELDS in src/tenancy/config/policy.ts).
export const SECTIONS: Record<string, FieldSpec[]> = {
  application: [
    { path: 'title', kind: 'text' },
    { path: 'default_locale', kind: { options: ['en', 'fr', 'de', 'es'] } },
    { path: 'available_locales', kind: 'list' },
  ],
  branding: [
    { path: 'company_name', kind: 'text' },
    { path: 'logo_light_url', kind: 'url' },
    { path: 'logo_dark_url', kind: 'url' },
    { path: 'favicon_url', kind: 'url' },
    { path: 'font_family', kind: 'text' },
    ...PALETTE.map((c) => ({ path: `palette_light.${c}`, kind: 'text' as const })),
    ...PALETTE.map((c) => ({ path: `palette_dark.${c}`, kind: 'text' as const })),
  ],
  security: [
    { path: 'password_policy.min_length', kind: 'number' },
    ...['uppercase', 'lowercase', 'digit', 'symbol'].map((x) => ({ path: `password_policy.require_${x}`, kind: 'bool' as const })),
    { path: 'mfa.required', kind: 'bool' },
    { path: 'mfa.totp_enabled', kind: 'bool' },
    { path: 'mfa.webauthn_enabled', kind: 'bool' },
    { path: 'sessions.ttl_seconds', kind: 'number' },
    { path: 'signup.enabled', kind: 'bool' },
    { path: 'signup.allowed_email_domains', kind: 'list' },
    ...['read', 'write', 'delete', 'sensitive'].map((x) => ({ path: `rate_limit.${x}`, kind: 'number' as const })),
    { path: 'device_matching.enabled', kind: 'bool' },
    { path: 'device_matching.trusted_device_days', kind: 'number' },
    { path: 'device_matching.notify_new_device', kind: 'bool' },
  ],
  features: PROVIDERS.flatMap((p) => [
    { path: `social_login.providers.${p}.enabled`, kind: 'bool' as const },
    { path: `social_login.providers.${p}.client_id`, kind: 'text' as const },
    { path: `social_login.providers.${p}.client_secret`, kind: 'secret' as const },
  ]),
  oidc: [
    { path: 'discovery.service_documentation', kind: 'url' },
    { path: 'discovery.op_policy_uri', kind: 'url' },
    { path: 'discovery.op_tos_uri', kind: 'url' },
    ...['access_token', 'id_token', 'refresh_token', 'authorization_code', 'device_code'].map((x) => ({ path: `ttl.${x}`, kind: 'number' as const })),
  ],
  integrations: [
    { path: 'smtp.host', kind: 'text' },
    { path: 'smtp.port', kind: 'number' },
    { path: 'smtp.username', kind: 'text' },
    { path: 'smtp.password', kind: 'secret' },
    { path: 'smtp.from', kind: 'text' },
    { path: 'smtp.secure', kind: 'bool' },
  ],
  notifications: [
    ...['new_device_login', 'password_changed', 'mfa_changed', 'account_locked'].map((x) => ({ path: `security_alerts.${x}`, kind: 'bool' as const })),
  ],
};

const MASK = '********';

function get(obj: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), obj);
}

function put(obj: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let o = obj;
  for (const k of keys.slice(0, -1)) o = (o[k] ??= {}) as Record<string, unknown>;
  o[keys[keys.length - 1]!] = value;
}

/** Removes the field at `path`, and the objects that it leaves empty on the way up. */
function remove(obj: Record<string, unknown>, path: string): void {
  const keys = path.split('.');
  const chain: Array<Record<string, unknown>> = [obj];
  for (const k of keys.slice(0, -1)) {
    const next = chain[chain.length - 1]![k];
    if (!next || typeof next !== 'object') return;
    chain.push(next as Record<string, unknown>);
  }
  delete chain[chain.length - 1]![keys[keys.length - 1]!];
  for (let i = chain.length - 1; i > 0 && Object.keys(chain[i]!).length === 0; i--) delete chain[i - 1]![keys[i - 1]!];
}

function toText(v: unknown, kind: Kind): string {
  if (v === undefined || v === null) return '';
  if (kind === 'list') return Array.isArray(v) ? v.join(', ') : String(v);
  if (kind === 'secret') return '';
  return String(v);
}

/** The config resource: the named tenant's (platform, cross-tenant) or the signed-in tenant's own. */
function configPath(slug: string | null): string {
  return slug === null ? '/api/v1/config' : `/api/v1/tenants/${encodeURIComponent(slug)}/config`;
}

function SectionForm({ slug, section, stored, onSaved }: { slug: string | null; section: string; stored: Record<string, unknown>; onSaved(config: Record<string, unknown>): void }) {
  const { api, notify } = useServices();
  const specs = SECTIONS[section]!;
  const [values, setValues] = useState<Record<string, string>>(() => Object.fromEntries(specs.map((s) => [s.path, toText(get(stored, s.path), s.kind)])));
  const [clear, setClear] = useState<Record<string, boolean>>({});

  /**
   * The PUT replaces the whole section, so the body starts from the section as stored (secrets as
   * `********`, which the API keeps) and changes only the fields shown here: the others (custom
   * providers, fields this form has no input for) are sent back as they are, not erased.
   */
  function body(): Record<string, unknown> {
    const out = structuredClone(stored);
    for (const s of specs) {
      const v = values[s.path] ?? '';
      if (s.kind === 'secret') {
        if (v) put(out, s.path, v);
        else if (get(stored, s.path) === MASK && !clear[s.path]) put(out, s.path, MASK);
        else remove(out, s.path);
        continue;
      }
      // An emptied field inherits the global value.
      if (v === '') remove(out, s.path);
      else if (s.kind === 'number') put(out, s.path, Number(v));
      else if (s.kind === 'bool') put(out, s.path, v === 'true');
      else if (s.kind === 'list') put(out, s.path, v.split(/[,\s]+/).filter(Boolean));
      else put(out, s.path, v);
    }
    return out;
  }

  return (
    <ApiForm
      labelledBy={`sec-${section}`}
      heading={<h2 id={`sec-${section}`}>{t(`settings.${section}`)}</h2>}
      submitLabel={t('settings.save', { name: t(`settings.${section}`) })}
      busyLabel={t('saving')}
      onSubmit={async () => {
        const res = await api.json<{ data: Record<string, unknown> }>('PUT', `${configPath(slug)}/${section}`, { body: body() });
        notify(t('done.saved'), 'ok');
        onSaved(res.data);
      }}
    >
      {(fe) =>
        specs.map((s) => {
          const label = s.path;
          const value = values[s.path] ?? '';
          const set = (v: string) => setValues((x) => ({ ...x, [s.path]: v }));
          if (s.kind === 'bool') return <Select key={s.path} label={label} name={s.path} value={value} options={[['', t('inherit')], ['true', t('yes')], ['false', t('no')]]} onChange={set} error={fe(s.path)} />;
          if (typeof s.kind === 'object') return <Select key={s.path} label={label} name={s.path} value={value} options={[['', t('inherit')], ...s.kind.options.map((o): [string, string] => [o, o])]} onChange={set} error={fe(s.path)} />;
          if (s.kind === 'secret') {
            const isSet = get(stored, s.path) === MASK;
            return (
              <div key={s.path}>
                <Field label={label} name={s.path} type="password" autocomplete="new-password" value={value} onInput={set} hint={isSet ? t('secret.stored') : t('secret.unset')} error={fe(s.path)} />
                {isSet ? <Checkbox label={t('secret.clear', { name: s.path })} name={`${s.path}.clear`} checked={Boolean(clear[s.path])} onChange={(v) => setClear((c) => ({ ...c, [s.path]: v }))} /> : null}
              </div>
            );
          }
          return <Field key={s.path} label={label} name={s.path} type={s.kind === 'number' ? 'number' : s.kind === 'url' ? 'url' : 'text'} hint={s.kind === 'list' ? t('hint.commas') : undefined} value={value} onInput={set} error={fe(s.path)} />;
        })
      }
    </ApiForm>
  );
}

interface ProviderCallback {
  name: string;
  display_name: string;
  preset: string | null;
  enabled: boolean;
  callback_url: string;
}

/** The callback URL of each social provider (GET .../config/social-callbacks), read-only; refetched when the features change. */
function SocialCallbacks({ slug, version }: { slug: string | null; version: string }) {
  const { api } = useServices();
  const state = useAsync(() => api.get<{ data: { relay: boolean; providers: ProviderCallback[] } }>(`${configPath(slug)}/social-callbacks`), `${slug ?? ''}:${version}`);
  return (
    <section aria-labelledby="social-callbacks">
      <h2 id="social-callbacks">{t('social.callbacks')}</h2>
      <Loader state={state}>
        {({ data }) => (
          <>
            <p>{data.relay ? t('social.callbacks.relay') : t('social.callbacks.intro')}</p>
            <DataTable caption={t('social.callbacks')} head={[t('social.provider'), t('status'), t('social.callback_url')]}>
              {data.providers.map((p) => (
                <tr key={p.name}>
                  <th scope="row">
                    {p.display_name}
                    {p.display_name !== p.name ? <span class="mono"> ({p.name})</span> : null}
                  </th>
                  <td>
                    <Badge tone={p.enabled ? 'ok' : 'warn'}>{p.enabled ? t('social.offered') : t('social.not_offered')}</Badge>
                  </td>
                  <td>
                    <code class="mono" data-callback={p.name}>{p.callback_url}</code>
                  </td>
                </tr>
              ))}
            </DataTable>
          </>
        )}
      </Loader>
    </section>
  );
}

/** Every section of one tenant's configuration, one at a time (tabs in the URL); `slug` null: the signed-in tenant. */
export function TenantSettings({ slug, section, onSection }: { slug: string | null; section: string; onSection(s: string): void }) {
  const { api } = useServices();
  const state = useAsync(() => api.get<{ data: Record<string, unknown> }>(configPath(slug)), slug ?? '');
  const [saved, setSaved] = useState<Record<string, unknown> | null>(null);
  const current = SECTIONS[section] ? section : 'application';
  return (
    <Loader state={state}>
      {({ data }) => {
        const config = saved ?? data;
        return (
          <>
            <nav class="tabs" aria-label={t('settings.sections')}>
              {Object.keys(SECTIONS).map((s) => (
                <button type="button" key={s} aria-pressed={s === current} onClick={() => onSection(s)}>
                  {t(`settings.${s}`)}
                </button>
              ))}
            </nav>
            <SectionForm key={`${slug}:${current}:${JSON.stringify(config[current] ?? {})}`} slug={slug} section={current} stored={(config[current] as Record<string, unknown>) ?? {}} onSaved={setSaved} />
            {current === 'features' ? <SocialCallbacks slug={slug} version={JSON.stringify(config.features ?? {})} /> : null}
          </>
        );
      }}
    </Loader>
  );
}

export function SettingsSection({ query }: { query: URLSearchParams }) {
  const { config, auth } = useServices();
  const [slug, setSlug] = useState(query.get('tenant') ?? '');
  // Any tenant's settings need the cross-tenant scopes (platform administrators of `_platforms`);
  // a role `admin` of `_platforms` has the svc:config:* ones, for `_platforms`'s own settings.
  if (!config.platform || !auth.scopes.has('svc:cross-tenant:read')) {
    return (
      <>
        <h1>{t('nav.settings')}</h1>
        <p>{t('settings.own_intro')}</p>
        <TenantSettings slug={null} section={query.get('section') ?? 'application'} onSection={(s) => setQuery({ section: s }, true)} />
      </>
    );
  }
  const tenant = query.get('tenant');
  return (
    <>
      <h1>{t('nav.settings')}</h1>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setQuery({ tenant: slug.trim() || undefined, section: undefined });
        }}
      >
        <Field label={t('settings.tenant')} name="tenant" value={slug} onInput={setSlug} hint={t('settings.tenant_hint')} />
        <div class="actions">
          <button type="submit" class="primary">
            {t('open')}
          </button>
        </div>
      </form>
      {tenant ? <TenantSettings slug={tenant} section={query.get('section') ?? 'application'} onSection={(s) => setQuery({ section: s }, true)} /> : <p>
        <a href={href('/tenants')}>{t('nav.tenants')}</a>
      </p>}
    </>
  );
}
