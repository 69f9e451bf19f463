/**
 * Errors a repository raises in a storage-neutral shape (src/errors.ts), so the surfaces map them
 * without knowing SQLite, PostgreSQL or Redis error codes.
 */
export { NotFound, TenantGone, Unavailable, UniqueViolation } from '../errors.js';
