// Placeholder: the SQLite registration-token repository is being written.
import type { RegistrationTokenRepository } from '../types.js';
import type { Db } from './db.js';

export class SqliteRegistrationTokens implements RegistrationTokenRepository {
  constructor(_db: Db) {}
  create(): Promise<void> { throw new Error('not implemented'); }
  get(): Promise<undefined> { throw new Error('not implemented'); }
  findByHash(): Promise<undefined> { throw new Error('not implemented'); }
  list(): Promise<never> { throw new Error('not implemented'); }
  revoke(): Promise<boolean> { throw new Error('not implemented'); }
  consumeUse(): Promise<boolean> { throw new Error('not implemented'); }
  releaseUse(): Promise<void> { throw new Error('not implemented'); }
}
