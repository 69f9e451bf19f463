/**
 * Opening the account page signed in, in headless Chromium: `/account` sends the browser through the
 * tenant's sign-in page and back (the built-in `svc-account` client).
 */
import type { Page } from 'playwright-core';

/** Signs `user` in from the account page in `page` and waits until the page is back on it. */
export async function signInToAccountPage(page: Page, origin: string, user: { email: string; password: string }): Promise<Page> {
  await page.goto(`${origin}/account`);
  await page.getByLabel('E-mail').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${origin}/account`);
  return page;
}
