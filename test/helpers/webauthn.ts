/**
 * Passkeys in headless Chromium: a page with a virtual CTAP2 authenticator attached over the
 * DevTools protocol (WebAuthn.enable, WebAuthn.addVirtualAuthenticator), and an axe-core check
 * of the page in view.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';

export interface AuthenticatorPage {
  context: BrowserContext;
  page: Page;
  cdp: CDPSession;
  authenticatorId: string;
  /** The credentials the virtual authenticator holds (id base64, rpId, signCount). */
  credentials(): Promise<Array<{ credentialId: string; rpId?: string; signCount: number; userHandle?: string; isResidentCredential: boolean }>>;
}

export interface AuthenticatorOptions {
  hasUserVerification?: boolean;
  isUserVerified?: boolean;
}

/** A fresh browser context and page holding one virtual platform authenticator (resident keys, UV). */
export async function pageWithAuthenticator(browser: Browser, o: AuthenticatorOptions = {}): Promise<AuthenticatorPage> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      ctap2Version: 'ctap2_1',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: o.hasUserVerification ?? true,
      isUserVerified: o.isUserVerified ?? true,
      automaticPresenceSimulation: true,
    },
  });
  return {
    context,
    page,
    cdp,
    authenticatorId,
    credentials: async () => (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials,
  };
}

const require = createRequire(import.meta.url);
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/** Serious and critical axe-core violations of the page (injected through the DevTools protocol, so the page's CSP does not apply). */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: Array<{ id: string; impact: string | null; nodes: unknown[] }> }> } }).axe;
    return axe.run();
  });
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.nodes.length})`);
}
