// Placeholder: the SQLite users repository is being written (see issue 3/4 work).
import type { UserRepository } from '../types.js';
import type { Db } from './db.js';

export class SqliteUsers implements UserRepository {
  constructor(_db: Db) {}
  create(): Promise<void> { throw new Error('not implemented'); }
  get(): Promise<undefined> { throw new Error('not implemented'); }
  findByEmail(): Promise<undefined> { throw new Error('not implemented'); }
  list(): Promise<never> { throw new Error('not implemented'); }
  count(): Promise<number> { throw new Error('not implemented'); }
  update(): Promise<undefined> { throw new Error('not implemented'); }
}
