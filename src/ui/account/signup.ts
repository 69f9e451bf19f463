/**
 * Sign-up (CONTRACT.md "Sign-up"), part of the sign-in interaction so that it continues the
 * authorization request that led to it:
 *   GET  {oidc}/interaction/:uid/signup     the form (404 when sign-up is off)
 *   POST {oidc}/interaction/:uid/signup     creates the account; without required verification the
 *                                           sign-in completes at once (the RP gets its code); with
 *                                           it, the interaction waits on a "check your e-mail" page
 *   POST {oidc}/interaction/:uid/resend     the verification mail again (limited per address)
 *   POST {oidc}/interaction/:uid/continue   completes once the address is confirmed
 * An address that already has an account gets the same "check your e-mail" page, and its owner a
 * mail saying so with a reset link: the page never tells whether an account exists (with
 * required verification; without it, a new account signs in at once, which a taken one cannot).
 */
import type { HttpRequest, HttpResponse } from '../../http/types.js';
import { ipLimitKey } from '../../http/ip.js';
import type { UserRecord } from '../../storage/types.js';
import { Conflict } from '../../errors.js';
import { canSignIn } from '../../oidc/accounts.js';
import { createUser } from '../../users/operations.js';
import { PROFILE_MAX, overProfileLimit, validEmail, type UserCreateInput } from '../../users/schema.js';
import { unmetPasswordRules } from '../../users/password-policy.js';
import { existingAccountMail, verifyEmailMail } from '../mail-templates.js';
import { messagePage } from '../pages.js';
import type { PageUi } from '../page-ui.js';
import { VERIFY_TTL_SECONDS, issueToken, mailAvailable, refusedDomain, sendMail, signupSettings, type AccountHost } from './host.js';
import type { WindowLimiter } from './limiter.js';
import { checkEmailPage, signupPage, type SignupField } from './pages.js';
import { passwordRulesMessage } from './password-messages.js';
import { FORGOT_PATH } from './password-reset.js';
import { htmlPage } from './respond.js';

/** Kept in the interaction (server side, bound to its cookie) while the address awaits confirmation. */
export interface SignupPending {
  /** Undefined for an address that already had an account (nothing to complete). */
  accountId?: string;
  email: string;
  exp: number;
}

export const SIGNUP_PENDING = 'svc_signup_pending';
const PENDING_SECONDS = 3600;
const RESEND = { limit: 3, windowSeconds: 3600 };
const PER_IP = { limit: 20, windowSeconds: 3600 };

export function signupPendingOf(result: Record<string, unknown> | undefined): SignupPending | undefined {
  const p = result?.[SIGNUP_PENDING] as Partial<SignupPending> | undefined;
  if (!p || typeof p.email !== 'string' || typeof p.exp !== 'number' || p.exp < Date.now() / 1000) return undefined;
  return { email: p.email, exp: p.exp, ...(typeof p.accountId === 'string' ? { accountId: p.accountId } : {}) };
}

/**
 * Marks an account that signed itself up (in the user's preferences record, which every backend
 * has): the tenant's verification requirement is a sign-up rule, so only such an account waits for
 * its address to be confirmed at sign-in. Accounts an administrator creates (Management API, CLI)
 * sign in at once (CONTRACT), `email_verified` being the administrator's statement.
 */
const SELF_SIGNUP = 'self_signup';

/** Whether this password sign-in must wait on "check your e-mail" (an unconfirmed self sign-up). */
export async function awaitsConfirmation(account: AccountHost, user: UserRecord): Promise<boolean> {
  if (user.email_verified || !signupSettings(account).requireVerification) return false;
  return (await account.ctx.storage.userPreferences.get(account.tenant, user.id))?.[SELF_SIGNUP] === true;
}

/**
 * A sign-in that found the address unconfirmed: a fresh link goes out (within the resend limit), so
 * the page that says a message was sent is true, then the page.
 */
export async function remindConfirmation(s: SignupStep, user: UserRecord): Promise<HttpResponse> {
  s.pending = newPending(user.email ?? '', user.id);
  await s.savePending(s.pending);
  const { account } = s;
  if (user.email && mailAvailable(account) && (await s.limiter.allow(`${account.tenant}:verify-resend:${user.email.toLowerCase()}`, RESEND.limit, RESEND.windowSeconds))) {
    await account.ctx.storage.accountTokens.expireForUser(account.tenant, 'verify_email', user.id, new Date().toISOString());
    await sendVerification(s, user, user.email);
  }
  return seeInteraction(s);
}

export function newPending(email: string, accountId?: string): SignupPending {
  return { email, exp: Math.floor(Date.now() / 1000) + PENDING_SECONDS, ...(accountId ? { accountId } : {}) };
}

export interface SignupStep {
  account: AccountHost;
  req: HttpRequest;
  uid: string;
  /** The interaction page ({oidc}/interaction/:uid). */
  base: string;
  ui: PageUi;
  csrf: string;
  clientName: string;
  /** The client whose authorization request the sign-up continues (named in its audit entries). */
  clientId: string;
  formTargets: string[];
  limiter: WindowLimiter;
  pending: SignupPending | undefined;
  savePending(p: SignupPending): Promise<void>;
  /** Signs the user in and resumes the authorization request. */
  complete(user: UserRecord): Promise<HttpResponse>;
  /** Why an account that cannot sign in (locked, disabled) is refused, as the sign-in form says it. */
  refusal(user: UserRecord): string;
  /** False for a copy of a post of this address already made in this interaction (a double-click). */
  claimPost(email: string): Promise<boolean>;
  /** The copy's answer: where the first post led, once it is done (src/oidc/signup-once.ts). */
  copyOfPost(email: string): Promise<HttpResponse>;
}

export type SignupAction = 'signup' | 'resend' | 'continue';

function who(req: HttpRequest) {
  return { ip_address: req.ip, user_agent: req.headers['user-agent'] ?? null };
}

/** The "check your e-mail" page of a pending sign-up (also the answer for a taken address). */
export function checkEmailView(s: SignupStep, status: number, extra: { notice?: string; error?: string } = {}): HttpResponse {
  return htmlPage(status, checkEmailPage({ ui: s.ui, email: s.pending?.email ?? '', resendAction: `${s.base}/resend`, continueAction: `${s.base}/continue`, csrf: s.csrf, ...extra }), [], s.formTargets);
}

export async function handleSignupStep(s: SignupStep, action: SignupAction, form: URLSearchParams | undefined): Promise<HttpResponse> {
  const settings = signupSettings(s.account);
  const { t } = s.ui;
  if (action === 'signup' && !settings.enabled) return htmlPage(404, messagePage({ ui: s.ui, title: t('page.not_found.title'), message: t('page.not_found.message'), error: true }));
  if (action === 'signup') return form ? submit(s, form) : form_(s, 200);
  if (!s.pending) return seeInteraction(s);
  if (action === 'resend') return resend(s);
  // continue
  const user = s.pending.accountId ? await s.account.ctx.storage.users.get(s.account.tenant, s.pending.accountId) : undefined;
  if (user?.email_verified && canSignIn(user)) return s.complete(user);
  // Confirmed, but locked or disabled by an administrator meanwhile: completing would only bounce
  // back to an empty sign-in form (the provider finds no account that may sign in). Say why.
  if (user?.email_verified && !user.deleted_at) return checkEmailView(s, 403, { error: s.refusal(user) });
  return checkEmailView(s, 400, { error: t('signin.unverified') });
}

function seeInteraction(s: SignupStep): HttpResponse {
  return { status: 303, headers: { location: s.base, 'cache-control': 'no-store' } };
}

function form_(s: SignupStep, status: number, values: { email?: string; name?: string; error?: string; errorField?: SignupField } = {}): HttpResponse {
  const minLength = s.account.config.security.password_policy.min_length;
  return htmlPage(status, signupPage({ ui: s.ui, action: `${s.base}/signup`, csrf: s.csrf, clientName: s.clientName, minLength, signIn: s.base, ...values }), [], s.formTargets);
}

async function submit(s: SignupStep, form: URLSearchParams): Promise<HttpResponse> {
  const { account, ui, req } = s;
  const { t } = ui;
  const { ctx, tenant } = account;
  const settings = signupSettings(account);
  const email = (form.get('email') ?? '').trim().slice(0, 320);
  const name = (form.get('name') ?? '').trim();
  const password = form.get('password') ?? '';
  const again = (status: number, error: string, errorField?: SignupField) => form_(s, status, { email, name, error, ...(errorField ? { errorField } : {}) });

  // Refused, not cut short (the users domain's limit; the API answers 422).
  if (overProfileLimit('name', name)) return again(400, t('account.profile.too_long', { field: t('signup.name'), max: PROFILE_MAX.name }), 'name');
  if (!validEmail(email)) return again(400, t('signup.invalid_email'), 'email');
  const domain = refusedDomain(settings, email);
  if (domain) return again(400, t('signup.domain_not_allowed', { domain }), 'email');
  const policy = account.config.security.password_policy;
  const unmet = unmetPasswordRules(password, policy, email);
  if (unmet.length) return again(400, passwordRulesMessage(t, unmet, policy), 'password');
  // A double-click: the copy changes nothing and sends nothing, and leads where the first post led.
  if (!(await s.claimPost(email))) return s.copyOfPost(email);
  if (!(await s.limiter.allow(`${tenant}:signup-ip:${ipLimitKey(req.ip)}`, PER_IP.limit, PER_IP.windowSeconds))) return again(429, t('page.too_many.message'));

  const existing = await ctx.storage.users.findByEmail(tenant, email);
  if (existing) {
    // The Argon2 run a new account costs, so the answer's timing does not tell a taken address
    // either (without it a taken address answered in a third of the time).
    await ctx.passwords.hash(password);
    return taken(s, existing, email);
  }

  // Through the users domain (the same rules as every other way of creating a user), recorded as the
  // sign-up it is: one entry, written with the user.
  let user: UserRecord;
  try {
    user = await createUser(
      { ctx, tenant, config: account.config, by: { username: email, client_id: s.clientId, ...who(req) } },
      { email, password, email_verified: false, ...(name ? { name } : {}) } as UserCreateInput,
      (id) => ({ type: 'signup', status: 'success', user_id: id, details: { user_id: id, method: 'password' } }),
    );
  } catch (err) {
    // The address was taken in the meantime (the domain answers 409): the same page as any taken address.
    if (!(err instanceof Conflict)) throw err;
    const winner = await ctx.storage.users.findByEmail(tenant, email);
    if (winner) return taken(s, winner, email);
    throw err;
  }
  await ctx.storage.userPreferences.put(tenant, user.id, { [SELF_SIGNUP]: true }, new Date().toISOString());

  if (mailAvailable(account)) await sendVerification(s, user, email);
  if (!settings.requireVerification) return s.complete(user);
  s.pending = newPending(email, user.id);
  await s.savePending(s.pending);
  return seeInteraction(s);
}

/** Same page as a new sign-up; the owner of the address hears about it (one mail per window). */
async function taken(s: SignupStep, existing: UserRecord, email: string): Promise<HttpResponse> {
  const { account } = s;
  await account.ctx.audit.record(account.tenant, { type: 'signup', status: 'failed', username: email, user_id: existing.id, client_id: s.clientId, ...who(s.req), details: { user_id: existing.id, reason: 'email_taken' } });
  if (mailAvailable(account) && existing.email && (await s.limiter.allow(`${account.tenant}:signup-taken:${existing.id}`, RESEND.limit, RESEND.windowSeconds))) {
    const resetUrl = `${account.origin.origin}${FORGOT_PATH}`;
    sendMail(account, 'signup_existing', existing, existing.email, s.ui.t.lang, (a) => existingAccountMail(a, resetUrl));
  }
  s.pending = newPending(email);
  await s.savePending(s.pending);
  return seeInteraction(s);
}

async function sendVerification(s: SignupStep, user: UserRecord, email: string): Promise<void> {
  const raw = await issueToken(s.account, 'verify_email', user, email, VERIFY_TTL_SECONDS, { interaction: s.uid });
  const link = `${s.account.origin.origin}/account/verify?token=${raw}`;
  sendMail(s.account, 'verify_email', user, email, s.ui.t.lang, (a) => verifyEmailMail(a, link, VERIFY_TTL_SECONDS));
}

async function resend(s: SignupStep): Promise<HttpResponse> {
  const { account } = s;
  const pending = s.pending!;
  const allowed = await s.limiter.allow(`${account.tenant}:verify-resend:${pending.email.toLowerCase()}`, RESEND.limit, RESEND.windowSeconds);
  if (!allowed) return checkEmailView(s, 429, { error: s.ui.t('signup.resend_limit') });
  const user = pending.accountId ? await account.ctx.storage.users.get(account.tenant, pending.accountId) : await account.ctx.storage.users.findByEmail(account.tenant, pending.email);
  if (user?.email && mailAvailable(account)) {
    if (pending.accountId && !user.email_verified) {
      await account.ctx.storage.accountTokens.expireForUser(account.tenant, 'verify_email', user.id, new Date().toISOString());
      await sendVerification(s, user, user.email);
    } else if (!pending.accountId) {
      sendMail(account, 'signup_existing', user, user.email, s.ui.t.lang, (a) => existingAccountMail(a, `${account.origin.origin}${FORGOT_PATH}`));
    }
  }
  return checkEmailView(s, 200, { notice: s.ui.t('signup.resent') });
}
