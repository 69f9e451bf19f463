/**
 * Sign-in through the tenant's own authorization endpoint as the first-party public client
 * `svc-admin` (code + PKCE, oidc-client-ts), tokens kept in sessionStorage (gone with the tab),
 * renewed silently before they expire (a hidden same-origin iframe with prompt=none that lands on
 * /admin/callback).
 */
import { UserManager, WebStorageStateStore, type User } from 'oidc-client-ts';
import { API_RESOURCE, BASE, CLIENT_ID, consoleScopes, type ConsoleConfig } from './config';

export class Auth {
  readonly manager: UserManager;
  private user: User | null = null;
  private renewing: Promise<boolean> | null = null;
  /** Called when a renewed token grants no administration scope (the role was changed meanwhile). */
  private onNotAdmin: () => void = () => undefined;

  constructor(readonly config: ConsoleConfig) {
    const origin = location.origin;
    this.manager = new UserManager({
      authority: config.issuer,
      client_id: CLIENT_ID,
      redirect_uri: `${origin}${BASE}/callback`,
      silent_redirect_uri: `${origin}${BASE}/callback`,
      post_logout_redirect_uri: `${origin}${BASE}/signed-out`,
      response_type: 'code',
      scope: consoleScopes(config.platform),
      resource: API_RESOURCE,
      automaticSilentRenew: true,
      monitorSession: false,
      loadUserInfo: false,
      userStore: new WebStorageStateStore({ store: window.sessionStorage }),
    });
    this.manager.events.addUserLoaded((u) => {
      this.user = u;
      // Every renewal (automatic, after a 401 or a 403, at load) brings the scopes the role grants now.
      if (!this.isAdmin) this.onNotAdmin();
    });
    this.manager.events.addUserUnloaded(() => {
      this.user = null;
    });
  }

  /**
   * The signed-in user, if any. Right after the sign-in callback, the stored one; otherwise a stored
   * user is renewed silently first: its scopes were cached at sign-in, and the role may have changed
   * since (a demoted admin kept the whole console across reloads). Null when a sign-in is needed.
   */
  async current(justSignedIn: boolean): Promise<User | null> {
    this.user = await this.manager.getUser();
    if (this.user && (this.user.expired || !justSignedIn)) {
      try {
        this.user = await this.manager.signinSilent();
      } catch {
        this.user = null;
      }
    }
    return this.user;
  }

  /** Whether the session's scopes include any administration scope (the role decides them). */
  get isAdmin(): boolean {
    return [...this.scopes].some((s) => s.startsWith('svc:'));
  }

  /** `fn` runs when a renewal brings a token without any administration scope. */
  whenNotAdmin(fn: () => void): void {
    this.onNotAdmin = fn;
  }

  get accessToken(): string | undefined {
    return this.user?.access_token;
  }

  /** Scopes granted to this session (the role decides them). */
  get scopes(): Set<string> {
    return new Set((this.user?.scope ?? '').split(' ').filter(Boolean));
  }

  get profile(): { name: string; email: string; sub: string } {
    const p = this.user?.profile;
    return { name: String(p?.name ?? p?.preferred_username ?? p?.email ?? ''), email: String(p?.email ?? ''), sub: String(p?.sub ?? '') };
  }

  signIn(returnTo: string): Promise<void> {
    return this.manager.signinRedirect({ url_state: returnTo });
  }

  /**
   * After a 401 (or a 403 for a missing scope): one silent renewal, false when a new interactive
   * sign-in is needed. Requests refused at once share one renewal.
   */
  renew(): Promise<boolean> {
    this.renewing ??= this.manager
      .signinSilent()
      .then((u) => {
        this.user = u;
        return Boolean(u);
      })
      .catch(() => false)
      .finally(() => {
        this.renewing = null;
      });
    return this.renewing;
  }

  async signOut(): Promise<void> {
    const idToken = this.user?.id_token;
    await this.manager.removeUser();
    await this.manager.signoutRedirect({ id_token_hint: idToken });
  }
}
