/**
 * Per-tenant signing keys: generation, sealing into storage, and the in-memory key set an actor
 * uses (signing keys by algorithm, verification keys by kid, the published JWKS as bytes).
 */
import { createPrivateKey, createPublicKey, generateKeyPair, type KeyObject } from 'node:crypto';
import { etagOf } from '../http/etag.js';
import { sealedKeyUnreadable } from '../startup-errors.js';
import { calculateJwkThumbprint, type JWK } from 'jose';
import QuickLRU from 'quick-lru';
import type { SigningAlg } from '../config/schema.js';
import type { KeyRepository, SigningKeyRecord, TenantId } from '../storage/types.js';
import type { VerifyKey } from './jwt.js';
import type { Sealer } from './sealer.js';

function generate(alg: SigningAlg): Promise<KeyObject> {
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, _pub: KeyObject, priv: KeyObject) => (err ? reject(err) : resolve(priv));
    if (alg === 'RS256') generateKeyPair('rsa', { modulusLength: 2048 }, done);
    else if (alg === 'ES256') generateKeyPair('ec', { namedCurve: 'P-256' }, done);
    else generateKeyPair('ed25519', undefined, done);
  });
}

function publicPart(jwk: JWK): JWK {
  const { kty, crv, n, e, x, y } = jwk;
  return Object.fromEntries(Object.entries({ kty, crv, n, e, x, y }).filter(([, v]) => v !== undefined)) as JWK;
}

/** A new active, promoted key for `alg`, sealed for storage. */
export async function newKeyRecord(alg: SigningAlg, sealer: Sealer, tenant: TenantId, now = new Date()): Promise<SigningKeyRecord> {
  const priv = await generate(alg);
  const privateJwk = priv.export({ format: 'jwk' }) as JWK;
  const pub = publicPart(privateJwk);
  const kid = await calculateJwkThumbprint(pub, 'sha256');
  const publicJwk = { ...pub, kid, alg, use: 'sig' };
  return {
    kid,
    alg,
    use: 'sig',
    status: 'active',
    promoted: true,
    public_jwk: publicJwk,
    private_sealed: sealer.seal(JSON.stringify({ ...privateJwk, kid, alg, use: 'sig' }), `${tenant}:${kid}`),
    created_at: now.toISOString(),
    rotated_at: null,
    expires_at: null,
    retire_requested: false,
  };
}

// Key-set changes of one tenant in this process run one after the other (a second transaction on
// the shared SQLite connection must not start inside the first). Across instances, the storage
// transaction and the re-check inside it do the job: SQLite's BEGIN IMMEDIATE and PostgreSQL's
// pg_advisory_xact_lock (KeyRepository.transaction) serialise the writers of a tenant.
const queues = new WeakMap<object, Map<TenantId, Promise<unknown>>>();

/** Runs fn after every earlier exclusive() call for the same repository and tenant has settled. */
export function exclusive<T>(repo: KeyRepository, tenant: TenantId, fn: () => Promise<T>): Promise<T> {
  let byTenant = queues.get(repo);
  if (!byTenant) queues.set(repo, (byTenant = new Map()));
  const previous = byTenant.get(tenant) ?? Promise.resolve();
  const result = previous.then(fn, fn);
  const tail = result.then(
    () => undefined,
    () => undefined,
  );
  byTenant.set(tenant, tail);
  void tail.then(() => {
    if (byTenant.get(tenant) === tail) byTenant.delete(tenant);
  });
  return result;
}

const missingAlgorithms = (keys: SigningKeyRecord[], algorithms: readonly SigningAlg[]) =>
  algorithms.filter((alg) => !keys.some((k) => k.alg === alg && k.status === 'active'));

/**
 * First boot of a tenant: generates an active key for every configured algorithm that lacks one.
 * Instances starting together must not each add a key set (their JWKS would differ until a
 * reload): the keys are generated outside (RSA is slow) and inserted in a transaction that
 * re-checks, so the first writer wins and the others adopt its keys.
 */
export async function ensureKeys(repo: KeyRepository, tenant: TenantId, algorithms: readonly SigningAlg[], sealer: Sealer): Promise<SigningKeyRecord[]> {
  return (await createMissingKeys(repo, tenant, algorithms, sealer)).keys;
}

/**
 * ensureKeys, also telling which keys this call inserted (`created`): a caller that lost the race
 * to another instance or command adopted that one's keys and created none (`svc keys generate`
 * reports only its own).
 */
export async function createMissingKeys(
  repo: KeyRepository,
  tenant: TenantId,
  algorithms: readonly SigningAlg[],
  sealer: Sealer,
): Promise<{ keys: SigningKeyRecord[]; created: SigningKeyRecord[] }> {
  const existing = await repo.list(tenant);
  const missing = missingAlgorithms(existing, algorithms);
  if (!missing.length) return { keys: existing, created: [] };
  const generated = await Promise.all(missing.map((alg) => newKeyRecord(alg, sealer, tenant)));
  return exclusive(repo, tenant, () =>
    repo.transaction(tenant, async () => {
      const current = await repo.list(tenant);
      const still = missingAlgorithms(current, algorithms);
      const fresh = generated.filter((k) => (still as readonly string[]).includes(k.alg));
      if (!fresh.length) return { keys: current, created: [] };
      await repo.insert(tenant, fresh);
      return { keys: await repo.list(tenant), created: fresh };
    }),
  );
}

export interface SigningKey {
  kid: string;
  alg: SigningAlg;
  privateKey: KeyObject;
}

/**
 * One published key, unsealed and imported on first use: a tenant whose state is cached
 * (tenancy/state-cache.ts) but that only ever signs RS256 never pays for, nor holds in memory,
 * its other private keys. Imported key objects are kept (OpenSSL caches its precomputations in them).
 */
class StoredKey implements SigningKey, VerifyKey {
  readonly kid: string;
  readonly alg: SigningAlg;
  private priv: KeyObject | undefined;
  private pub: KeyObject | undefined;

  constructor(
    private readonly record: SigningKeyRecord,
    private readonly sealer: Sealer,
    private readonly tenant: TenantId,
  ) {
    this.kid = record.kid;
    this.alg = record.alg as SigningAlg;
  }

  /** The private JWK (oidc-provider's configuration wants JWKs). */
  privateJwk(): JWK {
    let plain: string;
    try {
      plain = this.sealer.unseal(this.record.private_sealed, `${this.tenant}:${this.kid}`);
    } catch (err) {
      throw sealedKeyUnreadable(this.tenant, this.kid, err);
    }
    return JSON.parse(plain) as JWK;
  }

  get privateKey(): KeyObject {
    this.priv ??= createPrivateKey({ key: this.privateJwk() as never, format: 'jwk' });
    return this.priv;
  }

  get publicKey(): KeyObject {
    this.pub ??= createPublicKey({ key: this.record.public_jwk as JWK as never, format: 'jwk' });
    return this.pub;
  }
}

/** What an actor holds in memory; rebuilt from storage whenever keys change. */
export class KeySet {
  /** Current signing key per algorithm (active and promoted). */
  readonly signing = new Map<SigningAlg, SigningKey>();
  /** Keys that verify: active and expiring (overlap window). */
  readonly verifying = new Map<string, VerifyKey>();
  /** The published JWKS document, serialised once. */
  readonly jwksBody: Buffer;
  readonly jwksEtag: string;
  /**
   * Access tokens whose signature these keys verified (see checkAccessToken). quick-lru grows as
   * used: lru-cache would preallocate its whole capacity for every tenant's key set.
   */
  get verifiedTokens(): QuickLRU<string, Record<string, unknown>> {
    // Created on first use: most cached tenants never verify a token (see tenancy/state-cache.ts).
    this.verified ??= new QuickLRU({ maxSize: 5000 });
    return this.verified;
  }
  private verified: QuickLRU<string, Record<string, unknown>> | undefined;
  private readonly published: StoredKey[];

  constructor(records: SigningKeyRecord[], sealer: Sealer, tenant: TenantId, algorithms: readonly SigningAlg[]) {
    // Published and verifying until retired. A key marked by DELETE /api/v1/jwks/:kid stays until
    // the next rotation or retire-expired retires it (CONTRACT.md), so the mark alone changes nothing.
    const published = records.filter((r) => r.status !== 'retired');
    // Active before expiring, newest first: oidc-provider picks the first key of an algorithm.
    published.sort((a, b) => (a.status === b.status ? b.created_at.localeCompare(a.created_at) : a.status === 'active' ? -1 : 1));
    this.published = published.map((r) => new StoredKey(r, sealer, tenant));
    for (const [i, r] of published.entries()) {
      const key = this.published[i]!;
      this.verifying.set(r.kid, key);
      if (r.status === 'active' && r.promoted && !this.signing.has(key.alg) && algorithms.includes(key.alg)) this.signing.set(key.alg, key);
    }
    this.jwksBody = Buffer.from(JSON.stringify({ keys: published.map((r) => r.public_jwk) }));
    this.jwksEtag = etagOf(this.jwksBody);
  }

  /** Private JWKs for oidc-provider, current keys first so it signs with them (unsealed on each call). */
  providerJwks(): { keys: JWK[] } {
    return { keys: this.published.map((k) => k.privateJwk()) };
  }

  /** The key for `alg`, or the first configured algorithm's key. */
  signingKey(alg?: string): SigningKey {
    const wanted = alg ? this.signing.get(alg as SigningAlg) : undefined;
    const key = wanted ?? this.signing.values().next().value;
    if (!key) throw new Error('no signing key available');
    return key;
  }
}
