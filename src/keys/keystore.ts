/**
 * Per-tenant signing keys: generation, sealing into storage, and the in-memory key set an actor
 * uses (signing keys by algorithm, verification keys by kid, the published JWKS as bytes).
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPair, type KeyObject } from 'node:crypto';
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
  const existing = await repo.list(tenant);
  const missing = missingAlgorithms(existing, algorithms);
  if (!missing.length) return existing;
  const created = await Promise.all(missing.map((alg) => newKeyRecord(alg, sealer, tenant)));
  return exclusive(repo, tenant, () =>
    repo.transaction(tenant, async () => {
      const current = await repo.list(tenant);
      const still = missingAlgorithms(current, algorithms);
      const fresh = created.filter((k) => (still as readonly string[]).includes(k.alg));
      if (!fresh.length) return current;
      await repo.insert(tenant, fresh);
      return repo.list(tenant);
    }),
  );
}

export interface SigningKey {
  kid: string;
  alg: SigningAlg;
  privateKey: KeyObject;
}

/** What an actor holds in memory; rebuilt from storage whenever keys change. */
export class KeySet {
  /** Current signing key per algorithm (active and promoted). */
  readonly signing = new Map<SigningAlg, SigningKey>();
  /** Keys that verify: active and expiring (overlap window). */
  readonly verifying = new Map<string, VerifyKey>();
  /** Private JWKs for oidc-provider, current keys first so it signs with them. */
  readonly providerJwks: { keys: JWK[] };
  /** The published JWKS document, serialised once. */
  readonly jwksBody: Buffer;
  readonly jwksEtag: string;
  /**
   * Access tokens whose signature these keys verified (see checkAccessToken). quick-lru grows as
   * used: lru-cache would preallocate its whole capacity for every tenant's key set.
   */
  readonly verifiedTokens = new QuickLRU<string, Record<string, unknown>>({ maxSize: 5000 });

  constructor(records: SigningKeyRecord[], sealer: Sealer, tenant: TenantId, algorithms: readonly SigningAlg[]) {
    // Published and verifying until retired. A key marked by DELETE /api/v1/jwks/:kid stays until
    // the next rotation or retire-expired retires it (CONTRACT.md), so the mark alone changes nothing.
    const published = records.filter((r) => r.status !== 'retired');
    // Active before expiring, newest first: oidc-provider picks the first key of an algorithm.
    published.sort((a, b) => (a.status === b.status ? b.created_at.localeCompare(a.created_at) : a.status === 'active' ? -1 : 1));
    const privateJwks: JWK[] = [];
    for (const r of published) {
      const jwk = JSON.parse(sealer.unseal(r.private_sealed, `${tenant}:${r.kid}`)) as JWK;
      const alg = r.alg as SigningAlg;
      privateJwks.push(jwk);
      this.verifying.set(r.kid, { alg, publicKey: createPublicKey({ key: r.public_jwk as JWK as never, format: 'jwk' }) });
      if (r.status === 'active' && r.promoted && !this.signing.has(alg) && algorithms.includes(alg)) {
        this.signing.set(alg, { kid: r.kid, alg, privateKey: createPrivateKey({ key: jwk as never, format: 'jwk' }) });
      }
    }
    this.providerJwks = { keys: privateJwks };
    this.jwksBody = Buffer.from(JSON.stringify({ keys: published.map((r) => r.public_jwk) }));
    this.jwksEtag = `"${createHash('sha256').update(this.jwksBody).digest('base64url').slice(0, 27)}"`;
  }

  /** The key for `alg`, or the first configured algorithm's key. */
  signingKey(alg?: string): SigningKey {
    const wanted = alg ? this.signing.get(alg as SigningAlg) : undefined;
    const key = wanted ?? this.signing.values().next().value;
    if (!key) throw new Error('no signing key available');
    return key;
  }
}
