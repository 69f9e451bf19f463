/**
 * A client as the end-user pages name it. The built-in clients (clients/system-clients.ts) carry
 * an English client_name for the API and tokens; on a page they are named in the page's language
 * from the catalogue. Any other client is named as its owner registered it, else by its id.
 */
import { ACCOUNT_CLIENT_ID, ADMIN_CLIENT_ID } from '../clients/system-clients.js';
import type { MessageKey, Translator } from './i18n/index.js';

const SYSTEM_NAMES: Record<string, MessageKey> = {
  [ACCOUNT_CLIENT_ID]: 'client.system.account',
  [ADMIN_CLIENT_ID]: 'client.system.admin',
};

export function clientDisplayName(t: Translator, clientId: string, registeredName: unknown): string {
  const key = Object.hasOwn(SYSTEM_NAMES, clientId) ? SYSTEM_NAMES[clientId] : undefined;
  if (key) return t(key);
  return typeof registeredName === 'string' && registeredName !== '' ? registeredName : clientId;
}
