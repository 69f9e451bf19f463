/**
 * Driving the administration console in Chromium: sign-in through the tenant's own sign-in page,
 * axe-core checks, screenshots under test-artifacts/ (gitignored), CSP violations collected.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import { PROJECT_ROOT } from '../../src/paths.js';
import { seriousViolations } from './axe.js';

export const ARTIFACTS = join(PROJECT_ROOT, 'test-artifacts', 'admin-console');

/** The console's build output (npm test builds it in `pretest`; a single test file run builds it here). */
export function ensureConsoleBuilt(): void {
  if (existsSync(join(PROJECT_ROOT, 'dist', 'admin', 'index.html'))) return;
  execFileSync('npm', ['run', 'build:admin', '--silent'], { cwd: PROJECT_ROOT, stdio: 'inherit' });
}

/** axe-core on the current page (test/helpers/axe.ts): no serious or critical violation. */
export async function expectAccessible(page: Page, label: string): Promise<void> {
  const bad = await seriousViolations(page);
  expect(bad, `${label}: ${JSON.stringify(bad, null, 1)}`).toEqual([]);
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Collects Content-Security-Policy violations and page errors. */
export function watchPage(page: Page): { problems: string[] } {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  return { problems };
}

/** From the console URL through the tenant's sign-in page back into the console. */
export async function signInToConsole(page: Page, consoleUrl: string, email: string, password: string): Promise<void> {
  await page.goto(consoleUrl);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((u) => u.pathname.startsWith('/admin') && !u.pathname.startsWith('/admin/callback'));
}
