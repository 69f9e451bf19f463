/**
 * The set-up the differential tests of the direct user paths share (code-direct, refresh-direct,
 * silent-auth-direct): the service, a management token, a signed-in user's browser session and a
 * confidential code-flow client registered for `redirect`.
 */
import type { TenantActor } from '../../src/tenancy/actor.js';
import { startTestApp, type TestApp } from './app.js';
import { HttpSession, codeFlowClient, type CodeFlowClient } from './code-flow.js';
import { createUser, type TestUser } from './users.js';

export interface UserFlowFixture {
  t: TestApp;
  /** A management token with at least svc:clients:write and svc:users:write. */
  admin: string;
  user: TestUser;
  session: HttpSession;
  basic: CodeFlowClient;
  newClient(extra?: Record<string, unknown>): Promise<CodeFlowClient>;
  /** The default tenant's actor. */
  actor(): Promise<TenantActor>;
}

/** `env`: the service's settings (startTestApp), e.g. another storage. */
export async function startUserFlowFixture(redirect: string, adminScope = 'svc:clients:write svc:users:write', env: Record<string, string> = {}): Promise<UserFlowFixture> {
  const t = await startTestApp(env);
  const admin = await t.token(adminScope);
  const user = await createUser(t, { email_verified: true, nickname: 'ada' });
  const session = new HttpSession(t.issuer, user);
  const newClient = (extra: Record<string, unknown> = {}): Promise<CodeFlowClient> => codeFlowClient(t, admin, redirect, extra);
  const basic = await newClient();
  return { t, admin, user, session, basic, newClient, actor: () => t.app.pool.get('default') };
}
