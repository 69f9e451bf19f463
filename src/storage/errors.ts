/**
 * Errors a repository raises in a storage-neutral shape, so the Management API can map them to
 * problem responses without knowing SQLite or PostgreSQL error codes.
 */

/** A unique constraint refused the write (another live record already holds the value). */
export class UniqueViolation extends Error {
  constructor(readonly field: string) {
    super(`unique constraint violated on ${field}`);
    this.name = 'UniqueViolation';
  }
}
