/** The signed-in layout: skip link, header, section navigation, status messages, the section. */
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Api } from './api';
import type { Auth } from './auth';
import type { ConsoleConfig } from './config';
import { LOCALES, currentLocale, setLocale, t } from './i18n';
import { href, onLinkClick, useRoute, type Route } from './router';
import { AuditDetail, AuditSection } from './sections/audit';
import { ClientDetail, ClientNew, ClientsSection } from './sections/clients';
import { KeysSection } from './sections/keys';
import { Overview } from './sections/overview';
import { RegistrationTokensSection } from './sections/registration-tokens';
import { SessionsSection } from './sections/sessions';
import { SettingsSection } from './sections/settings';
import { TenantDetail, TenantsSection } from './sections/tenants';
import { UserDetail, UserNew, UsersSection } from './sections/users';
import { applyTheme, storedTheme, type Theme } from './theme';
import { Services, type AppServices } from './services';

interface NavItem {
  path: string;
  label: string;
}

function navItems(auth: Auth): NavItem[] {
  const items = [
    { path: '', label: t('nav.overview') },
    { path: '/clients', label: t('nav.clients') },
    { path: '/users', label: t('nav.users') },
    { path: '/sessions', label: t('nav.sessions') },
    { path: '/keys', label: t('nav.keys') },
    { path: '/registration-tokens', label: t('nav.regtokens') },
    { path: '/audit', label: t('nav.audit') },
    { path: '/settings', label: t('nav.settings') },
  ];
  if (managesTenants(auth)) items.push({ path: '/tenants', label: t('nav.tenants') });
  return items;
}

/**
 * The Tenants section needs the platform scopes, which only `_platforms`'s platform administrators
 * are granted (src/users/roles.ts): a role `admin` there manages `_platforms` alone, and would see
 * nothing but errors.
 */
function managesTenants(auth: Auth): boolean {
  return auth.config.platform && auth.scopes.has('svc:tenants:read');
}

function section(route: Route, auth: Auth): ComponentChildren {
  const [, top, id, extra] = route.path.split('/');
  const key = route.query.toString();
  switch (top ?? '') {
    case '':
      return <Overview />;
    case 'clients':
      if (id === 'new') return <ClientNew />;
      return id ? <ClientDetail id={decodeURIComponent(id)} key={id} /> : <ClientsSection query={route.query} key={key} />;
    case 'users':
      if (id === 'new') return <UserNew />;
      return id ? <UserDetail id={decodeURIComponent(id)} key={id} /> : <UsersSection query={route.query} key={key} />;
    case 'sessions':
      return <SessionsSection query={route.query} key={key} />;
    case 'keys':
      return <KeysSection query={route.query} key={key} />;
    case 'registration-tokens':
      return <RegistrationTokensSection query={route.query} key={key} />;
    case 'audit':
      return id ? <AuditDetail id={decodeURIComponent(id)} key={id} /> : <AuditSection query={route.query} key={key} />;
    case 'settings':
      return <SettingsSection query={route.query} key={key} />;
    // Only _platforms has tenants (elsewhere the API refuses the console's token), and only its platform administrators manage them: not found.
    case 'tenants':
      if (!managesTenants(auth)) return notFound();
      return id ? <TenantDetail slug={decodeURIComponent(id)} tab={extra} query={route.query} key={`${id}?${key}`} /> : <TenantsSection query={route.query} key={key} />;
    default:
      return notFound();
  }
}

function notFound(): ComponentChildren {
  return (
    <>
      <h1>{t('notfound.title')}</h1>
      <p>
        <a href={href('')}>{t('nav.overview')}</a>
      </p>
    </>
  );
}

export function Shell({ api, auth, config }: { api: Api; auth: Auth; config: ConsoleConfig }) {
  const route = useRoute();
  const [notice, setNotice] = useState<{ message: string; kind: 'ok' | 'error'; n: number } | null>(null);
  const [theme, setTheme] = useState<Theme>(storedTheme());
  const [, rerender] = useState(0);
  const main = useRef<HTMLElement>(null);
  const services = useMemo<AppServices>(() => ({ api, auth, config, notify: (message, kind = 'ok') => setNotice({ message, kind, n: Date.now() }) }), [api, auth, config]);
  const items = navItems(auth);
  const activeTop = `/${route.path.split('/')[1] ?? ''}`.replace(/^\/$/, '');

  const navigated = useRef(false);
  useEffect(() => {
    const current = items.find((i) => i.path === activeTop);
    document.title = `${current?.label ?? t('app.title')} · ${config.tenant} · ${t('app.title')}`;
    // After a client-side navigation, move focus to the new content for screen-reader and keyboard users.
    // Not on the first render: after a page load the first Tab stop stays the skip link.
    if (navigated.current) main.current?.focus({ preventScroll: true });
    navigated.current = true;
  }, [route.path]);

  return (
    <Services.Provider value={services}>
      <div class="layout" onClick={onLinkClick}>
        <a class="skip" href="#main">
          {t('skip')}
        </a>
        <header class="top">
          <span class="brand">
            {t('app.title')} <span class="tenant">{config.tenant}</span>
          </span>
          <div class="prefs">
            <label>
              <span class="sr-only">{t('theme')}</span>
              <select
                value={theme}
                aria-label={t('theme')}
                onChange={(e) => {
                  const v = e.currentTarget.value as Theme;
                  applyTheme(v);
                  setTheme(v);
                }}
              >
                <option value="system">{t('theme.system')}</option>
                <option value="light">{t('theme.light')}</option>
                <option value="dark">{t('theme.dark')}</option>
              </select>
            </label>
            <select
              value={currentLocale()}
              aria-label={t('language')}
              onChange={(e) => {
                setLocale(e.currentTarget.value);
                rerender((n) => n + 1);
              }}
            >
              {LOCALES.map(([code, name]) => (
                <option value={code} key={code}>
                  {name}
                </option>
              ))}
            </select>
            <span class="who">{auth.profile.email || auth.profile.name}</span>
            <button type="button" onClick={() => void auth.signOut()}>
              {t('signout')}
            </button>
          </div>
        </header>
        <nav class="side" aria-label={t('nav.label')}>
          <ul>
            {items.map((i) => (
              <li key={i.path}>
                <a href={href(i.path)} aria-current={i.path === activeTop ? 'page' : undefined}>
                  {i.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main" tabIndex={-1} ref={main}>
          <div class={`notice ${notice?.kind ?? ''}`} role={notice?.kind === 'error' ? 'alert' : 'status'} aria-live="polite">
            {notice ? (
              <>
                <span>{notice.message}</span>
                <button type="button" class="link" onClick={() => setNotice(null)} aria-label={t('dismiss')}>
                  ×
                </button>
              </>
            ) : null}
          </div>
          {section(route, auth)}
        </main>
      </div>
    </Services.Provider>
  );
}
