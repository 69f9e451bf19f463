/**
 * Bearer values at rest (issue 12 item 10): refresh tokens and session ids are stored under a keyed
 * hash of the value (HMAC-SHA-256 with a key derived from SVC_ENCRYPTION_KEY), never as the value,
 * in SQLite, PostgreSQL and Redis alike, so a dump of the database or of Redis yields no token or
 * session cookie that works. oidc-provider's payloads carry the value again as `jti`, which is
 * never stored: a refresh token is only ever found by its value, so `jti` is put back from the
 * value asked for; a session can also be found by its uid, so its value is kept sealed
 * (`jti_sealed`, AES-GCM, the sealer) for that lookup alone. (Refresh tokens stored before this
 * carry a `jti_sealed` too; it is dropped when they are read.)
 *
 * Rows written before this existed (stored under the raw value) are still found, consumed and
 * destroyed by the raw value, so existing sessions and refresh tokens survive the upgrade; each is
 * written under its hash the next time oidc-provider saves it, and the old row expires. (A value
 * just found under its hash is consumed under it alone: the raw row cannot be reached meanwhile.)
 */
import { createHmac } from 'node:crypto';
import type { Sealer } from '../keys/sealer.js';
import { TIME_PREFIX_LENGTH } from './random-ids.js';
import type { OidcPayloadRepository, OidcPayloadRow, OidcRowWithGrant, OidcUpsert, TenantId } from '../storage/types.js';
import { consumeBesideUpserts } from './issue-together.js';

export const PROTECTED_MODELS = new Set(['RefreshToken', 'Session']);
/** The protected model also found by uid (findByUid), whose value must be recoverable. */
const SEALED_MODEL = 'Session';
const PREFIX = 'h1.';
/**
 * Refresh tokens' stored ids since issue 17: the value's first 8 characters, then the keyed hash.
 * The values this service issues begin with their issue time (random-ids.ts timeOrderedValue), so
 * rows issued close together sit next to each other in the primary-key index and a group commit
 * writes a few of its pages instead of one per token; those 8 characters are a millisecond clock,
 * which the payload's `iat` tells anyway, and the 210 random bits after them stay behind the hash.
 * A value without that shape (oidc-provider's own, fully random) is stored the same way, only
 * without the locality.
 */
const ORDERED_PREFIX = 'h2.';
const ORDERED_MODEL = 'RefreshToken';
/**
 * Sealed session values kept for re-saves, per repository (one per tenant build): a session is
 * saved again on every sign-in step and silent re-authentication, and sealing its unchanged value
 * again (a random IV and an AES-GCM pass) was ~3.5% of a silent re-authentication's event loop
 * (issue 17). Keyed by the stored id, which binds tenant, model and value, so an entry is only
 * ever reused for the value it seals; filled only by this process's own seals, never from storage.
 */
export const SEALED_CACHE_SIZE = 1024;
/**
 * Stored ids of the values recently found under them, per repository: a refresh token is found and
 * then consumed by the same request, and the keyed hash made twice was ~1.3% of a refresh's event
 * loop (issue 17). Keyed by the value; an entry is used only for the tenant and model it was made
 * for, and only values whose row exists get one (a presented value that finds nothing, of whatever
 * length, is not kept). Its consume also skips the legacy raw id: no row from before hashing can be
 * reached while the hashed one lives (find prefers it).
 */
export const FOUND_CACHE_SIZE = 1024;
interface Found {
  tenant: TenantId;
  model: string;
  stored: string;
}

export interface BearerProtector {
  /** The id a value is stored under. */
  storedId(tenant: TenantId, model: string, id: string): string;
  /**
   * Every id a row holding the value may be under, the current one first: then, for a refresh
   * token, the plain keyed hash it was stored under before ordered ids, and last the raw value
   * (rows from before hashing; never for a value that is itself one of our hashed ids). One HMAC.
   */
  storedIds(tenant: TenantId, model: string, id: string): string[];
}

export function bearerProtector(sealer: Sealer): BearerProtector {
  const key = sealer.derive('oidc-bearer-ids');
  const mac = (tenant: TenantId, model: string, id: string) => createHmac('sha256', key).update(`${tenant}\u0000${model}\u0000${id}`).digest('base64url');
  const ordered = (model: string, id: string, hash: string) => (model === ORDERED_MODEL ? `${ORDERED_PREFIX}${id.slice(0, TIME_PREFIX_LENGTH)}${hash}` : `${PREFIX}${hash}`);
  return {
    storedId: (tenant, model, id) => ordered(model, id, mac(tenant, model, id)),
    storedIds: (tenant, model, id) => {
      const hash = mac(tenant, model, id);
      const ids = [ordered(model, id, hash)];
      if (model === ORDERED_MODEL) ids.push(`${PREFIX}${hash}`);
      if (!id.startsWith(PREFIX) && !id.startsWith(ORDERED_PREFIX)) ids.push(id);
      return ids;
    },
  };
}

export function protectBearerIds(repo: OidcPayloadRepository, sealer: Sealer): OidcPayloadRepository {
  const { storedId, storedIds } = bearerProtector(sealer);
  const aad = (tenant: TenantId, model: string) => `oidc-bearer:${tenant}:${model}`;
  // A row from the storage is parsed afresh for each read (no cache hands it out twice), so a
  // refresh token's is completed in place: a copy of the payload cost more than the rest of this
  // wrapper (issue 17). A sealed value is taken out of the payload oidc-provider sees.
  const restore = (row: OidcPayloadRow, jti: string): OidcPayloadRow => {
    if (row.payload.jti_sealed === undefined) {
      row.payload.jti = jti;
      return row;
    }
    const { jti_sealed: _sealed, ...payload } = row.payload;
    return { ...row, payload: { ...payload, jti } };
  };
  const protects = (model: string) => PROTECTED_MODELS.has(model);
  const sealedIds = new Map<string, string>();
  const sealedId = (tenant: TenantId, model: string, id: string, key: string): string => {
    let sealed = sealedIds.get(key);
    if (sealed === undefined) {
      sealed = sealer.seal(id, aad(tenant, model));
      // Oldest first out (a Map iterates in insertion order); a live session is sealed again at most once per eviction.
      if (sealedIds.size >= SEALED_CACHE_SIZE) sealedIds.delete(sealedIds.keys().next().value!);
      sealedIds.set(key, sealed);
    }
    return sealed;
  };

  const found = new Map<string, Found>();
  const remember = (tenant: TenantId, model: string, id: string, stored: string) => {
    if (found.size >= FOUND_CACHE_SIZE) found.delete(found.keys().next().value!);
    found.set(id, { tenant, model, stored });
  };
  /** The stored id of a value found in this tenant and model, taken out (a value is consumed or destroyed once). */
  const takeFound = (tenant: TenantId, model: string, id: string): string | undefined => {
    const entry = found.get(id);
    if (entry === undefined || entry.tenant !== tenant || entry.model !== model) return undefined;
    found.delete(id);
    return entry.stored;
  };

  /** A row found under the current stored id: remembered for its consume, its value put back. */
  const foundNow = (tenant: TenantId, model: string, id: string, stored: string, row: OidcPayloadRow): OidcPayloadRow => {
    // Sessions are saved, not consumed: only the consumable model is worth remembering.
    if (model !== SEALED_MODEL) remember(tenant, model, id, stored);
    return restore(row, id);
  };
  /** A row under one of the older ids of the value (legacy: storedIds after the first). */
  const findLegacy = async (tenant: TenantId, model: string, id: string, legacy: string[]): Promise<OidcPayloadRow | undefined> => {
    for (const each of legacy) {
      const old = await repo.find(tenant, model, each);
      if (old) return restore(old, id);
    }
    return undefined;
  };
  /** A row as it is stored: a protected model's under its stored id, without the value. */
  const toStored = (tenant: TenantId, row: OidcUpsert): OidcUpsert => {
    if (!protects(row.model)) return row;
    // `jti` (the value) is left out of the stored JSON: undefined members are not serialised.
    const id = storedId(tenant, row.model, row.id);
    const payload: Record<string, unknown> = { ...row.payload, jti: undefined };
    if (row.model === SEALED_MODEL) payload.jti_sealed = sealedId(tenant, row.model, row.id, id);
    return { model: row.model, id, payload, expiresAt: row.expiresAt };
  };
  const withGrant = repo.findWithGrant?.bind(repo);
  const together = repo.consumeAndUpsert?.bind(repo);
  const many = repo.upsertMany?.bind(repo);

  const wrapped: OidcPayloadRepository = {
    ...bindAll(repo),
    ...(withGrant && {
      async findWithGrant(tenant: TenantId, model: string, id: string): Promise<OidcRowWithGrant | undefined> {
        if (!protects(model)) return withGrant(tenant, model, id);
        const [stored, ...legacy] = storedIds(tenant, model, id);
        const both = await withGrant(tenant, model, stored!);
        if (both) return { row: foundNow(tenant, model, id, stored!, both.row), grant: both.grant };
        // A row from before the current ids: its grant is read by the caller.
        const old = await findLegacy(tenant, model, id, legacy);
        return old && { row: old };
      },
    }),
    async upsert(tenant, model, id, payload, expiresAt) {
      if (!protects(model)) return repo.upsert(tenant, model, id, payload, expiresAt);
      // A row from before, under the raw value, is left to expire (find prefers the hashed one;
      // consume and destroy act on both): deleting it on every save would cost a write each time.
      const row = toStored(tenant, { model, id, payload, expiresAt });
      await repo.upsert(tenant, model, row.id, row.payload, expiresAt);
    },
    async find(tenant, model, id) {
      if (!protects(model)) return repo.find(tenant, model, id);
      const [stored, ...legacy] = storedIds(tenant, model, id);
      const row = await repo.find(tenant, model, stored!);
      if (row) return foundNow(tenant, model, id, stored!, row);
      return findLegacy(tenant, model, id, legacy);
    },
    async findByUid(tenant, model, uid) {
      const row = await repo.findByUid(tenant, model, uid);
      if (!row || !protects(model) || typeof row.payload.jti_sealed !== 'string') return row;
      return restore(row, sealer.unseal(row.payload.jti_sealed, aad(tenant, model)));
    },
    async consume(tenant, model, id) {
      if (!protects(model)) return repo.consume(tenant, model, id);
      const seen = takeFound(tenant, model, id);
      if (seen !== undefined) return repo.consume(tenant, model, seen);
      // Every id the value may be stored under together: on SQLite in one group commit, on
      // PostgreSQL and Redis in one round trip's time (awaited in turn, each waited for the last's
      // commit). Consumed by this call when one of them was (a value lives under one id at a time).
      return (await Promise.all(storedIds(tenant, model, id).map((each) => repo.consume(tenant, model, each)))).includes(true);
    },
    async destroy(tenant, model, id) {
      if (!protects(model)) return repo.destroy(tenant, model, id);
      // Not a hot path: the found entry only has to go (a destroyed value is never consumed again).
      takeFound(tenant, model, id);
      const ids = storedIds(tenant, model, id);
      sealedIds.delete(ids[0]!);
      return (await Promise.all(ids.map((each) => repo.destroy(tenant, model, each)))).includes(true);
    },
  };
  if (many) wrapped.upsertMany = (tenant, rows) => many(tenant, rows.map((row) => toStored(tenant, row)));
  if (together) {
    wrapped.consumeAndUpsert = async (tenant, used, rows) => {
      const id = protects(used.model) ? takeFound(tenant, used.model, used.id) : used.id;
      // A value this process did not just find under its current id (a row from before ordered
      // ids, or a found entry evicted) may be under any of its ids: consumed as consume does.
      if (id === undefined) return consumeBesideUpserts(wrapped, tenant, used, rows);
      return together(tenant, { model: used.model, id }, rows.map((row) => toStored(tenant, row)));
    };
  }
  return wrapped;
}

/** The repository's methods bound to it (class instances keep their methods on the prototype). */
function bindAll(repo: OidcPayloadRepository): OidcPayloadRepository {
  return {
    upsert: repo.upsert.bind(repo),
    find: repo.find.bind(repo),
    findByUid: repo.findByUid.bind(repo),
    findByUserCode: repo.findByUserCode.bind(repo),
    consume: repo.consume.bind(repo),
    destroy: repo.destroy.bind(repo),
    revokeByGrantId: repo.revokeByGrantId.bind(repo),
    listByModel: repo.listByModel.bind(repo),
    listSessions: repo.listSessions.bind(repo),
    listGrantIds: repo.listGrantIds.bind(repo),
    countLive: repo.countLive.bind(repo),
    sweepExpired: repo.sweepExpired.bind(repo),
  };
}
