/**
 * Signing-key lifecycle (spec 1.6 and 3, CONTRACT.md):
 *
 *   active (promoted: signs, published) --rotate--> expiring (published, verifies until
 *   expires_at = rotated_at + overlap window) --window over + rotate/retire-expired--> retired
 *
 * An active key whose algorithm left `security.key_store.algorithms` takes the same step to
 * expiring when the tenant's keys are next loaded (demoteUnconfigured): it stops signing at once
 * and verifies the tokens it signed for one overlap window.
 *
 * A key marked by DELETE /api/v1/jwks/:kid keeps its state (and stays published) until the next
 * rotation or retire-expired, which retire it directly. Every change is one storage transaction
 * and is then announced on the tenant's rotation channel, so each instance's actor reloads.
 *
 * Key generation is slow (RSA) and asynchronous, so new keys are generated before the
 * transaction: the transaction body only reads and writes, which keeps it short and (on SQLite)
 * free of interleaving with other requests.
 */
import type { SigningAlg } from '../config/schema.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { Config } from '../config/index.js';
import { rotationChannel, type EventBus, type JwksRotatedEvent } from '../events/bus.js';
import type { Logger } from '../log.js';
import type { KeyRepository, KeyStatus, SigningKeyRecord, Storage, TenantId } from '../storage/types.js';
import { exclusive, newKeyRecord } from './keystore.js';
import type { Sealer } from './sealer.js';

/**
 * What the lifecycle needs (the AppContext has it all). Named here rather than as a slice of
 * AppContext: the tenant state cache, which the context holds, demotes keys on load.
 */
export interface KeyLifecycleDeps {
  readonly storage: Storage;
  readonly sealer: Sealer;
  readonly config: Config;
  readonly events: EventBus;
  readonly log: Logger;
}

export interface RotationResult {
  /** Number of new keys promoted (one per configured algorithm). */
  promoted: number;
  /** kids of the new keys. */
  kids: string[];
  /** kids that moved active -> expiring. */
  expiring: string[];
  /** kids that became retired (marked keys, expiring keys past their window). */
  retired: string[];
}

export interface RetireResult {
  retired: number;
  kids: string[];
  /** kids of replacement keys (an algorithm whose only active key was marked and retired). */
  promoted: string[];
}

export type MarkResult =
  | { outcome: 'marked'; kid: string; current_status: KeyStatus }
  | { outcome: 'not_found' }
  | { outcome: 'already_retired'; kid: string };

type KeyChange = Parameters<KeyRepository['update']>[2];
interface Update {
  kid: string;
  change: KeyChange;
}

const isPast = (iso: string | null, now: Date) => iso !== null && Date.parse(iso) <= now.getTime();

/** Keys retire-expired (and a rotation) retire: marked ones, and expiring ones past their window. */
function retirements(keys: SigningKeyRecord[], now: Date): Update[] {
  const at = now.toISOString();
  return keys
    .filter((k) => k.status !== 'retired' && (k.retire_requested || (k.status === 'expiring' && isPast(k.expires_at, now))))
    .map((k) => ({
      kid: k.kid,
      change: {
        status: 'retired' as const,
        promoted: false,
        rotated_at: k.rotated_at ?? at,
        // When it left the JWKS: the end of its window, or now for a key retired early.
        expires_at: k.expires_at !== null && isPast(k.expires_at, now) ? k.expires_at : at,
      },
    }));
}

/** The keys a retirement pass leaves untouched. */
function survivors(keys: SigningKeyRecord[], now: Date): SigningKeyRecord[] {
  const gone = new Set(retirements(keys, now).map((u) => u.kid));
  return keys.filter((k) => !gone.has(k.kid));
}

/** Configured algorithms without an active key that will stay active (not marked). */
function algorithmsLackingKey(keys: SigningKeyRecord[], algorithms: readonly SigningAlg[]): SigningAlg[] {
  return algorithms.filter((alg) => !keys.some((k) => k.alg === alg && k.status === 'active' && !k.retire_requested));
}

/**
 * Due when, for some configured algorithm, the newest active key is older than the rotation
 * interval (or there is none). A tenant without any key is never due: ensureKeys bootstraps it
 * on first use, and rotating would create keys for a tenant nobody uses.
 */
export function rotationDue(keys: SigningKeyRecord[], algorithms: readonly SigningAlg[], intervalDays: number, now: Date): boolean {
  if (!keys.length) return false;
  const maxAgeMs = intervalDays * 86_400_000;
  return algorithms.some((alg) => {
    const newest = keys
      .filter((k) => k.alg === alg && k.status === 'active')
      .reduce<number>((max, k) => Math.max(max, Date.parse(k.created_at)), Number.NEGATIVE_INFINITY);
    return now.getTime() - newest >= maxAgeMs;
  });
}

/** Earliest end of an overlap window among expiring keys (the scheduler wakes up for it). */
export function nextExpiry(keys: SigningKeyRecord[]): number | undefined {
  const ends = keys.filter((k) => k.status === 'expiring' && k.expires_at).map((k) => Date.parse(k.expires_at!));
  return ends.length ? Math.min(...ends) : undefined;
}

// Rotations of one tenant in this process run one after the other (exclusive(), keystore.ts);
// across instances, the transaction and the re-check inside it do the job; that needs
// KeyRepository.transaction to serialise writers of a tenant: SQLite's BEGIN IMMEDIATE does,
// PostgreSQL needs pg_advisory_xact_lock (or SELECT ... FOR UPDATE) since READ COMMITTED alone
// would let both instances see "due".

async function announce(deps: KeyLifecycleDeps, tenant: TenantId, kids: string[], promoted: number, now: Date): Promise<void> {
  const event: JwksRotatedEvent = { tenant, kids, promoted, at: now.toISOString() };
  try {
    await deps.events.publish(rotationChannel(tenant, deps.config.redis.key_prefix), event);
  } catch (err) {
    // Storage is the source of truth and already changed; instances that miss the event pick the
    // change up on their next reload. Failing the request would invite a second rotation.
    deps.log.error({ err, tenant, event }, 'jwks:rotated event could not be published');
  }
}

function generateFor(deps: KeyLifecycleDeps, tenant: TenantId, algorithms: readonly SigningAlg[], now: Date): Promise<SigningKeyRecord[]> {
  return Promise.all(algorithms.map((alg) => newKeyRecord(alg, deps.sealer, tenant, now)));
}

async function applyRotation(repo: KeyRepository, tenant: TenantId, keys: SigningKeyRecord[], fresh: SigningKeyRecord[], overlapSeconds: number, now: Date): Promise<RotationResult> {
  const at = now.toISOString();
  const retiring = retirements(keys, now);
  const retiringKids = new Set(retiring.map((u) => u.kid));
  const demoting: Update[] = keys
    .filter((k) => k.status === 'active' && !retiringKids.has(k.kid))
    .map((k) => ({
      kid: k.kid,
      change: { status: 'expiring' as const, promoted: false, rotated_at: at, expires_at: new Date(now.getTime() + overlapSeconds * 1000).toISOString() },
    }));
  for (const u of [...retiring, ...demoting]) await repo.update(tenant, u.kid, u.change);
  await repo.insert(tenant, fresh);
  return { promoted: fresh.length, kids: fresh.map((k) => k.kid), expiring: demoting.map((u) => u.kid), retired: retiring.map((u) => u.kid) };
}

async function rotateWith(deps: KeyLifecycleDeps, tenant: TenantId, now: Date, onlyIfDue: boolean): Promise<RotationResult | null> {
  const repo = deps.storage.keys;
  const { algorithms, overlap_window_seconds, rotation_interval_days } = deps.config.security.key_store;
  return exclusive(repo, tenant, async () => {
    if (onlyIfDue && !rotationDue(await repo.list(tenant), algorithms, rotation_interval_days, now)) return null;
    const fresh = await generateFor(deps, tenant, algorithms, now);
    const result = await repo.transaction(tenant, async () => {
      const keys = await repo.list(tenant);
      // Another instance may have rotated between the check above and this transaction.
      if (onlyIfDue && !rotationDue(keys, algorithms, rotation_interval_days, now)) return null;
      return applyRotation(repo, tenant, keys, fresh, overlap_window_seconds, now);
    });
    if (result) await announce(deps, tenant, result.kids, result.promoted, now);
    return result;
  });
}

/**
 * Manual rotation (POST /api/v1/jwks/rotate): a new active, promoted key per configured
 * algorithm; the previous active keys start their overlap window; marked keys and expiring keys
 * past their window are retired.
 */
export async function rotate(deps: KeyLifecycleDeps, tenant: TenantId, now = new Date()): Promise<RotationResult> {
  return (await rotateWith(deps, tenant, now, false))!;
}

/** Scheduled rotation: rotates only when rotationDue, re-checked inside the transaction. */
export function rotateIfDue(deps: KeyLifecycleDeps, tenant: TenantId, now = new Date()): Promise<RotationResult | null> {
  return rotateWith(deps, tenant, now, true);
}

/**
 * Retires expiring keys past their window and marked keys. If that leaves a configured algorithm
 * without an active key (its current key was marked), a replacement is promoted in the same
 * transaction, so the tenant can always sign.
 */
export async function retireExpired(deps: KeyLifecycleDeps, tenant: TenantId, now = new Date()): Promise<RetireResult> {
  const repo = deps.storage.keys;
  const { algorithms } = deps.config.security.key_store;
  return exclusive(repo, tenant, async () => {
    const before = await repo.list(tenant);
    if (!retirements(before, now).length) return { retired: 0, kids: [], promoted: [] };
    const spares = await generateFor(deps, tenant, algorithmsLackingKey(survivors(before, now), algorithms), now);

    const result = await repo.transaction(tenant, async () => {
      const keys = await repo.list(tenant);
      const retiring = retirements(keys, now);
      for (const u of retiring) await repo.update(tenant, u.kid, u.change);
      const lacking = new Set(algorithmsLackingKey(survivors(keys, now), algorithms));
      // Only what is still lacking: another instance may have filled the gap meanwhile. A gap
      // without a spare (marked after the pre-check) is filled by ensureKeys on the next reload.
      const replacements = spares.filter((k) => lacking.has(k.alg as SigningAlg));
      if (replacements.length) await repo.insert(tenant, replacements);
      return { retired: retiring.length, kids: retiring.map((u) => u.kid), promoted: replacements.map((k) => k.kid) };
    });
    if (result.retired || result.promoted.length) {
      await announce(deps, tenant, [...result.kids, ...result.promoted], result.promoted.length, now);
    }
    return result;
  });
}

/** Active keys whose algorithm is not (or no longer) configured: they must not stay current. */
export function unconfiguredActive(keys: SigningKeyRecord[], algorithms: readonly SigningAlg[]): SigningKeyRecord[] {
  return keys.filter((k) => k.status === 'active' && !(algorithms as readonly string[]).includes(k.alg));
}

export interface DemotionResult {
  /** The tenant's keys after the call (as read inside its transaction when something changed). */
  keys: SigningKeyRecord[];
  /** Keys this call moved active -> expiring (none when another instance did it first). */
  demoted: SigningKeyRecord[];
}

/**
 * An algorithm was removed from `security.key_store.algorithms`: its active keys become expiring
 * (promoted=false, rotated_at=now, expires_at=now+overlap window), as a rotation would leave them,
 * so they sign nothing more, keep verifying the tokens they signed for the window, and are then
 * retired by the scheduler or retire-expired. Called with the keys just read, so a tenant without
 * such keys (every load but the first after the change) costs nothing more.
 *
 * Idempotent across instances starting together: the re-check inside the transaction (serialised
 * per tenant: BEGIN IMMEDIATE, pg_advisory_xact_lock) lets the first writer demote and the others
 * find nothing left; only the writer logs, audits (`jwks.demoted`) and announces the change.
 */
export async function demoteUnconfigured(
  deps: KeyLifecycleDeps & { audit: Pick<AuditLog, 'record'> },
  tenant: TenantId,
  algorithms: readonly SigningAlg[],
  keys: SigningKeyRecord[],
  now = new Date(),
): Promise<DemotionResult> {
  if (!unconfiguredActive(keys, algorithms).length) return { keys, demoted: [] };
  const repo = deps.storage.keys;
  const at = now.toISOString();
  const expiresAt = new Date(now.getTime() + deps.config.security.key_store.overlap_window_seconds * 1000).toISOString();
  const result = await exclusive(repo, tenant, () =>
    repo.transaction(tenant, async (): Promise<DemotionResult> => {
      const current = await repo.list(tenant);
      const stale = unconfiguredActive(current, algorithms);
      if (!stale.length) return { keys: current, demoted: [] };
      for (const k of stale) await repo.update(tenant, k.kid, { status: 'expiring', promoted: false, rotated_at: at, expires_at: expiresAt });
      return { keys: await repo.list(tenant), demoted: stale };
    }),
  );
  if (!result.demoted.length) return result;
  const kids = result.demoted.map((k) => k.kid);
  const removed = [...new Set(result.demoted.map((k) => k.alg))].sort();
  deps.log.warn(
    { tenant, kids, algorithms: removed, expires_at: expiresAt, setting: 'SECURITY_KEY_STORE_ALGORITHMS' },
    `signing keys of ${removed.join(', ')} (no longer in SECURITY_KEY_STORE_ALGORITHMS) stopped signing: they verify the tokens they signed until ${expiresAt}, then retire`,
  );
  await deps.audit.record(tenant, { type: 'jwks.demoted', details: { trigger: 'algorithms', kids, algorithms: removed, expires_at: expiresAt } });
  // Other instances reload the tenant's keys; their schedulers retire the keys when the window ends.
  await announce(deps, tenant, kids, 0, now);
  return result;
}

/** DELETE /api/v1/jwks/:kid: marks a key; it is retired at the next rotation or retire-expired. */
export async function markForRetirement(deps: KeyLifecycleDeps, tenant: TenantId, kid: string, now = new Date()): Promise<MarkResult> {
  const repo = deps.storage.keys;
  return exclusive(repo, tenant, async () => {
    let changed = false;
    const result = await repo.transaction(tenant, async (): Promise<MarkResult> => {
      const key = (await repo.list(tenant)).find((k) => k.kid === kid);
      if (!key) return { outcome: 'not_found' };
      if (key.status === 'retired') return { outcome: 'already_retired', kid };
      if (!key.retire_requested) {
        await repo.update(tenant, kid, { retire_requested: true });
        changed = true;
      }
      return { outcome: 'marked', kid, current_status: key.status };
    });
    // Repeating the DELETE is accepted again but changes nothing, so it announces nothing.
    if (changed) await announce(deps, tenant, [kid], 0, now);
    return result;
  });
}
