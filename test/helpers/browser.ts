/** Headless Debian Chromium through playwright-core (no browser download). */
import { chromium, type Browser } from 'playwright-core';

/** Chromium resolving every tenant subdomain of localhost to the loopback address (multi-tenant walks). */
export const TENANT_SUBDOMAINS = '--host-resolver-rules=MAP *.localhost 127.0.0.1';

export async function launchBrowser(extraArgs: readonly string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage', ...extraArgs],
  });
}
