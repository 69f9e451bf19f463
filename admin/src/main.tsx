/**
 * Console entry: finish a sign-in callback, sign in when needed, then the sections. Everything it
 * shows comes from the Management API with the signed-in user's token (no private back door).
 */
import { render } from 'preact';
import { Api } from './api';
import { Auth } from './auth';
import { BASE, readConfig } from './config';
import { initLocale, t } from './i18n';
import { navigate } from './router';
import { Shell } from './shell';
import { applyTheme } from './theme';
import './style.css';

const root = document.getElementById('app')!;
// The static "Loading…" of the shell is replaced, not kept beside the application.
root.textContent = '';

function Message({ title, text, action }: { title: string; text: string; action?: { label: string; run(): void } }) {
  return (
    <main id="main" class="message-page">
      <h1>{title}</h1>
      <p>{text}</p>
      {action ? (
        <button type="button" class="primary" onClick={action.run}>
          {action.label}
        </button>
      ) : null}
    </main>
  );
}

/** The 403 page: signed in, but the role grants no administration scope. */
export function Forbidden({ auth }: { auth: Auth }) {
  document.title = `${t('forbidden.title')} · ${t('app.title')}`;
  return (
    <main id="main" class="message-page" data-status="403">
      <p class="status-code" aria-hidden="true">403</p>
      <h1>{t('forbidden.title')}</h1>
      <p>{t('forbidden.text')}</p>
      <button type="button" onClick={() => void auth.signOut()}>
        {t('signout')}
      </button>
    </main>
  );
}

async function start(): Promise<void> {
  applyTheme();
  initLocale();
  const config = readConfig();
  const auth = new Auth(config);
  const path = location.pathname.replace(/\/$/, '');
  const signIn = () => void auth.signIn(`${location.pathname}${location.search}`.replace(`${BASE}/signed-out`, BASE));

  let justSignedIn = false;
  if (path === `${BASE}/callback`) {
    // Inside the hidden iframe of a silent renewal: hand the answer to the parent and stop.
    if (window.parent !== window) {
      await auth.manager.signinCallback().catch(() => undefined);
      return;
    }
    try {
      const user = await auth.manager.signinCallback();
      const back = typeof user?.url_state === 'string' && user.url_state.startsWith(BASE) ? user.url_state : BASE;
      history.replaceState(null, '', back);
      justSignedIn = true;
    } catch (err) {
      const code = (err as { error?: string }).error;
      // The authorization server refuses the console's scopes to a role without them.
      if (code === 'access_denied' || code === 'invalid_scope' || code === 'unauthorized_client') {
        render(<Forbidden auth={auth} />, root);
        return;
      }
      render(<Message title={t('signin.failed')} text={String((err as Error).message ?? err)} action={{ label: t('signin'), run: signIn }} />, root);
      return;
    }
  }
  if (path === `${BASE}/signed-out`) {
    render(<Message title={t('signedout.title')} text={t('signedout.text')} action={{ label: t('signin'), run: signIn }} />, root);
    return;
  }
  const user = await auth.current(justSignedIn);
  if (!user) {
    signIn();
    return;
  }
  if (!auth.isAdmin) {
    render(<Forbidden auth={auth} />, root);
    return;
  }
  const api = new Api(auth, signIn);
  render(<Shell api={api} auth={auth} config={config} />, root);
  // CONTRACT.md "Administration console": a user whose role no longer grants any administration
  // scope gets the 403 page, also when the role changes while the console is open.
  auth.whenNotAdmin(() => render(<Forbidden auth={auth} />, root));
  // Links rendered before the first navigation still route on the client.
  if (location.pathname === BASE + '/') navigate(BASE, true);
}

start().catch((err: unknown) => {
  render(<Message title={t('error.title')} text={String((err as Error)?.message ?? err)} />, root);
});
