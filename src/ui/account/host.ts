/**
 * What the self-service account surface (password reset, sign-up, e-mail verification, the
 * account page, security alerts) needs from its tenant, and the settings it acts on, each the
 * global setting with the tenant's override merged over it.
 */
import { createHash, randomBytes } from 'node:crypto';
import type Provider from 'oidc-provider';
import type { AppContext } from '../../context.js';
import { afterAnswer as runAfterAnswer } from '../../http/after-answer.js';
import type { HttpResponse } from '../../http/types.js';
import type { SmtpSettings, MailKind, MailMessage } from '../../mail/types.js';
import { resolveSmtp } from '../../mail/settings.js';
import type { LoginGuard } from '../../oidc/login-guard.js';
import type { AccountTokenKind, TenantId, UserRecord } from '../../storage/types.js';
import type { EffectiveConfig } from '../../tenancy/config/merge.js';
import { sealAad } from '../../tenancy/config/secrets.js';
import { tenantBrand, type Brand } from '../branding.js';
import { translator, type Locale } from '../i18n/index.js';
import { negotiateLocale } from '../i18n/negotiate.js';
import type { MailAudience } from '../mail-templates.js';
import type { RelyingParty } from '../../users/passkeys.js';
import type { SocialContext } from '../../oidc/social-common.js';
import type { UiSettings } from '../page-ui.js';

export interface AccountHost {
  readonly tenant: TenantId;
  readonly ctx: AppContext;
  readonly config: EffectiveConfig;
  /** The tenant's origin (its issuer's), e.g. http://acme.localhost:3000. */
  readonly origin: URL;
  /** The OIDC mount path (/oidc/v1). */
  readonly mountPath: string;
  readonly ui: UiSettings;
  readonly csrfKey: Buffer;
  readonly guard: LoginGuard;
  provider(): Promise<Provider>;
  /** A token request to the tenant's own token endpoint, in process (the account page's code exchange). */
  exchange(body: URLSearchParams): Promise<HttpResponse>;
  /** Passkeys on the account page (issue 14): the WebAuthn relying party (RP ID = the tenant's host) and the ceremony script's path. */
  readonly relyingParty: RelyingParty;
  readonly passkeyScript: string;
  /** Social login of the tenant's current config (linked accounts section); undefined without enabled providers. */
  social(): SocialContext | undefined;
}

/** The tenant's SMTP server, or undefined (no host configured anywhere). */
export function smtpOf(host: AccountHost): SmtpSettings | undefined {
  const override = host.config.overrides.integrations?.smtp;
  return resolveSmtp(host.config.integrations.smtp, override, (sealed) => host.ctx.sealer.unseal(sealed, sealAad(host.tenant, 'integrations', ['smtp', 'password'])), host.origin.host);
}

/**
 * Whether features that need e-mail are offered: with an SMTP server always; without one only in
 * development and tests (messages go to the log); never in staging or production (CONTRACT.md).
 */
export function mailAvailable(host: AccountHost): boolean {
  return Boolean(smtpOf(host)) || host.config.node_env === 'development' || host.config.node_env === 'test';
}

export interface SignupSettings {
  enabled: boolean;
  allowedDomains: string[];
  requireVerification: boolean;
}

export function signupSettings(host: AccountHost): SignupSettings {
  const global = host.config.security.signup;
  const own = host.config.overrides.security?.signup as { enabled?: boolean; allowed_email_domains?: string[]; require_email_verification?: boolean } | undefined;
  const mail = mailAvailable(host);
  const require = own?.require_email_verification ?? global.require_email_verification ?? Boolean(smtpOf(host));
  return {
    enabled: own?.enabled ?? global.enabled,
    allowedDomains: own?.allowed_email_domains ?? global.allowed_email_domains,
    // Verification needs mail: without any way to send it, nobody could ever finish signing up.
    requireVerification: require && mail,
  };
}

/** The domain of `email` when the tenant's sign-up list (allowed_email_domains) leaves it out; undefined when it may be used. */
export function refusedDomain(settings: SignupSettings, email: string): string | undefined {
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  if (!settings.allowedDomains.length) return undefined;
  return settings.allowedDomains.some((d) => d.toLowerCase() === domain) ? undefined : domain;
}

/** Account work after the answer (http/after-answer.ts), its failure logged with what it was. */
export function afterAnswer(host: AccountHost, what: string, work: () => Promise<void>): void {
  runAfterAnswer(work, (err: unknown) => host.ctx.log.error({ err, tenant: host.tenant, what }, 'account work after the answer failed'));
}

export function resetTtlSeconds(host: AccountHost): number {
  const own = (host.config.overrides.security as { password_reset?: { ttl_seconds?: number } } | undefined)?.password_reset?.ttl_seconds;
  return own ?? host.config.security.password_reset.ttl_seconds;
}

/** Verification links live a day: people read mail later than they reset passwords. */
export const VERIFY_TTL_SECONDS = 24 * 3600;

export type AlertKind = 'new_device_login' | 'password_changed' | 'mfa_changed' | 'account_locked';

/** Tenant defaults of the security alerts (each user may opt out on the account page). */
export function alertDefaults(host: AccountHost): Record<AlertKind, boolean> {
  return { ...host.config.notifications.security_alerts, ...definedOnly(host.config.overrides.notifications?.security_alerts) };
}

function definedOnly<T extends object>(o: T | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export function brandFor(host: AccountHost): Brand {
  return tenantBrand(host.config);
}

/** The language of an e-mail: the page's language when a page triggered it, else the tenant default. */
export function mailLocale(host: AccountHost, pageLang?: Locale): Locale {
  return pageLang ?? negotiateLocale({}, host.ui.application);
}

/**
 * Whose name a mail may greet: only the account's, at its confirmed address. A name is text anyone
 * can choose (sign-up, the profile), and a mail to an address nobody has confirmed (a sign-up's
 * verification, a new address, an unconfirmed account's "already exists") would otherwise carry
 * that text to any mailbox under the tenant's name ("Hello Visit http://evil.example now,").
 */
function greetedName(user: Pick<UserRecord, 'name' | 'given_name' | 'email' | 'email_verified'> | null, to: string): string | null {
  if (!user?.email_verified || user.email?.toLowerCase() !== to.toLowerCase()) return null;
  return user.given_name ?? user.name ?? null;
}

/** Queues a message built for the recipient's language and the tenant's brand. */
export function sendMail(host: AccountHost, kind: MailKind, user: Pick<UserRecord, 'id' | 'name' | 'given_name' | 'email' | 'email_verified'> | null, to: string, lang: Locale, build: (a: MailAudience) => MailMessage): void {
  const audience: MailAudience = { t: translator(lang), brand: brandFor(host), to, name: greetedName(user, to) };
  host.ctx.mailer.send({ tenant: host.tenant, kind, userId: user?.id ?? null, smtp: smtpOf(host), message: build(audience) });
}

/** A new single-use token: the raw value for the link, its hash for storage. */
export function newToken(): { raw: string; hash: string } {
  const raw = randomBytes(32).toString('base64url');
  return { raw, hash: hashToken(raw) };
}

export function hashToken(raw: string): string {
  return createHash('sha256').update(raw).digest('base64url');
}

/** Token values are 43 base64url characters; anything else is refused before a lookup. */
export function wellFormedToken(raw: string | null): raw is string {
  return typeof raw === 'string' && /^[A-Za-z0-9_-]{43}$/.test(raw);
}

export async function issueToken(host: AccountHost, kind: AccountTokenKind, user: UserRecord, email: string, ttlSeconds: number, data: Record<string, unknown> | null = null): Promise<string> {
  const { raw, hash } = newToken();
  const now = Date.now();
  await host.ctx.storage.accountTokens.create(host.tenant, {
    token_hash: hash,
    kind,
    user_id: user.id,
    email,
    data,
    created_at: new Date(now).toISOString(),
    expires_at: new Date(now + ttlSeconds * 1000).toISOString(),
    used_at: null,
  });
  return raw;
}
