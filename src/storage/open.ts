/** Opens the configured storage backend. */
import type { Config } from '../config/index.js';
import { SqliteStorage } from './sqlite/index.js';
import type { Storage } from './types.js';

export async function openStorage(config: Config): Promise<Storage> {
  if (config.storage.adapter === 'sqlite') return SqliteStorage.open(config.storage.sqlite.path);
  throw new Error('STORAGE_ADAPTER=postgresql is not available in this build yet');
}
