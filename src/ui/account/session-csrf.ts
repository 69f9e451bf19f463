/** The account page's CSRF token: an HMAC of the account session, shared by every section's forms. */
import { createHmac } from 'node:crypto';
import type { AccountHost } from './host.js';

export function csrfOf(host: AccountHost, sessionUid: string): string {
  return createHmac('sha256', host.csrfKey).update(`account:${sessionUid}`).digest('base64url');
}
