/**
 * The service with social login providers from a config file, sign-up on, a first-party web client
 * of a relying party on loopback, and Chromium: what every social-login end-to-end file starts from.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { startTestApp, type TestApp } from './app.js';
import { launchBrowser } from './browser.js';
import { startRpServer, type RpServer } from './rp-server.js';
import { createClient } from './users.js';

export interface SocialApp {
  t: TestApp;
  rp: RpServer;
  /** The relying party's redirect URI. */
  redirect: string;
  browser: Browser;
  /** openid-client's configuration of the first-party client. */
  config: oidc.Configuration;
  /** Users and linked identities now, to show a failure created nothing. */
  snapshot(): Promise<{ users: number; links: number }>;
  close(): Promise<void>;
}

/** `providers` is `features.social_login.providers` of the config file; `env` adds settings. */
export async function startSocialApp(providers: Record<string, unknown>, env: Record<string, string> = {}): Promise<SocialApp> {
  const rp = await startRpServer();
  const redirect = `${rp.origin}/cb`;
  const dir = mkdtempSync(join(tmpdir(), 'svc-social-'));
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ features: { social_login: { providers } } }));
  const t = await startTestApp({ SVC_CONFIG_FILE: file, ...env });
  await t.app.ctx.storage.tenantConfig.put('default', 'security', { signup: { enabled: true } });
  await (await t.app.pool.get('default')).reload();
  const browser = await launchBrowser();
  const client = await createClient(t, { client_name: 'Web App', application_type: 'web', redirect_uris: [redirect], grant_types: ['authorization_code'], scope: 'openid profile email', first_party: true });
  const config = await oidc.discovery(new URL(t.issuer), client.client_id, client.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
  const count = async (table: string) => Number(Object.values((await t.sql(`SELECT count(*) AS n FROM ${table}`))[0]!)[0]);
  return {
    t,
    rp,
    redirect,
    browser,
    config,
    snapshot: async () => ({ users: await count('users'), links: await count('social_identities') }),
    close: async () => {
      await browser.close();
      await t.close();
      await rp.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
