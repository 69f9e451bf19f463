/**
 * The baseline's storage: oidc-provider artefacts in unbounded in-memory Maps with expiry, the
 * simplest adapter a user could write. oidc-provider's default adapter is a 1,000-entry LRU shared
 * by the process, which at thousands of tokens per second evicts grants and sessions still in use
 * (refresh requests then fail with invalid_grant): the baseline must not fail for that. Nothing is
 * durable, which flatters the baseline against the product's SQLite writes (bench/README.md).
 */
import type { Adapter, AdapterPayload } from 'oidc-provider';

interface Entry {
  payload: AdapterPayload;
  /** Epoch ms; undefined = no expiry. */
  expiresAt: number | undefined;
}

const entries = new Map<string, Entry>();
const byGrant = new Map<string, Set<string>>();
const byUid = new Map<string, string>();
const byUserCode = new Map<string, string>();

const key = (model: string, id: string) => `${model}:${id}`;

function live(k: string | undefined): AdapterPayload | undefined {
  if (k === undefined) return undefined;
  const e = entries.get(k);
  if (!e) return undefined;
  if (e.expiresAt !== undefined && e.expiresAt <= Date.now()) {
    entries.delete(k);
    return undefined;
  }
  return e.payload;
}

/** Drops expired entries once a minute, so a long run does not grow without bound. */
const sweeper = setInterval(() => {
  const now = Date.now();
  for (const [k, e] of entries) if (e.expiresAt !== undefined && e.expiresAt <= now) entries.delete(k);
}, 60_000);
sweeper.unref();

export class MemoryAdapter implements Adapter {
  constructor(private readonly model: string) {}

  async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    const k = key(this.model, id);
    entries.set(k, { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : undefined });
    if (payload.grantId) {
      let set = byGrant.get(payload.grantId);
      if (!set) byGrant.set(payload.grantId, (set = new Set()));
      set.add(k);
    }
    if (payload.uid) byUid.set(payload.uid, k);
    if (payload.userCode) byUserCode.set(payload.userCode, k);
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    return live(key(this.model, id));
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return live(byUid.get(uid));
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return live(byUserCode.get(userCode));
  }

  async consume(id: string): Promise<void> {
    const payload = live(key(this.model, id));
    if (payload) payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id: string): Promise<void> {
    entries.delete(key(this.model, id));
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    for (const k of byGrant.get(grantId) ?? []) entries.delete(k);
    byGrant.delete(grantId);
  }
}
