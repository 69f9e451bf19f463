/**
 * Keys that verify client assertions (client_secret_jwt, private_key_jwt), imported once and kept
 * per client, with oidc-provider's rules (lib/models/client.js):
 * - client_secret_jwt: the client's raw secret is the HMAC key of HS256/HS384/HS512.
 * - private_key_jwt with `jwks`: the registered public keys.
 * - private_key_jwt with `jwks_uri`: fetched (2.5 s timeout, `Accept: application/json`), fresh for
 *   max(60 s, Cache-Control max-age, Expires); a stale set is refetched when no key verifies, one
 *   fetch at a time per client.
 * An entry is keyed by what it was built from (sealed secret, jwks JSON, jwks_uri), so a client
 * changed through the Management API never verifies with its old keys.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import QuickLRU from 'quick-lru';
import type { ClientRecord } from '../storage/types.js';

/** oidc-provider's clientAuthSigningAlgValues in this product (provider.ts enabledJWA). */
export const CLIENT_AUTH_SIGNING_ALGS = ['HS256', 'HS384', 'HS512', 'RS256', 'PS256', 'ES256', 'EdDSA'] as const;
export type ClientAuthAlg = (typeof CLIENT_AUTH_SIGNING_ALGS)[number];

export function isClientAuthAlg(alg: unknown): alg is ClientAuthAlg {
  return typeof alg === 'string' && (CLIENT_AUTH_SIGNING_ALGS as readonly string[]).includes(alg);
}

/** A public key of a client with the JWK members oidc-provider selects on. */
export interface ClientPublicKey {
  kty: string;
  kid?: string;
  alg?: string;
  use?: string;
  crv?: string;
  keyOps?: string[];
  key: KeyObject;
}

export interface JwksFetchResult {
  status: number;
  body: unknown;
  /** Seconds since the epoch until which the answer is fresh (already max(60 s, max-age, Expires)). */
  freshUntil: number;
}

export interface ClientKeyOptions {
  /** The raw secret of a client_secret_jwt client (unsealed), or undefined. */
  secretOf(record: ClientRecord): string | undefined;
  /** GET of a jwks_uri; throws when it cannot be fetched (refused target, timeout, too large). */
  fetchJwks(uri: string): Promise<JwksFetchResult>;
  now?: () => number;
}

interface RemoteSet {
  uri: string;
  keys: ClientPublicKey[];
  freshUntil: number;
  refreshing?: Promise<void>;
}

const epoch = () => Math.floor(Date.now() / 1000);

/** Imports the usable public keys of a JWK Set; keys of unknown or private types are skipped. */
export function importJwks(jwks: unknown): ClientPublicKey[] {
  if (!jwks || typeof jwks !== 'object' || !Array.isArray((jwks as { keys?: unknown }).keys)) throw new Error('invalid JWK Set');
  const out: ClientPublicKey[] = [];
  for (const jwk of (jwks as { keys: unknown[] }).keys) {
    if (!jwk || typeof jwk !== 'object' || Array.isArray(jwk)) continue;
    const j = jwk as Record<string, unknown>;
    if (j.kty !== 'RSA' && j.kty !== 'EC' && j.kty !== 'OKP') continue;
    if ('d' in j) continue; // private material is never accepted as a client key
    try {
      const key = createPublicKey({ key: j as never, format: 'jwk' });
      const entry: ClientPublicKey = { kty: j.kty, key };
      if (typeof j.kid === 'string') entry.kid = j.kid;
      if (typeof j.alg === 'string') entry.alg = j.alg;
      if (typeof j.use === 'string') entry.use = j.use;
      if (typeof j.crv === 'string') entry.crv = j.crv;
      if (Array.isArray(j.key_ops)) entry.keyOps = j.key_ops.filter((o): o is string => typeof o === 'string');
      out.push(entry);
    } catch {
      // not importable: skipped, like a key oidc-provider cannot use
    }
  }
  return out;
}

export class ClientKeyCache {
  // quick-lru rather than lru-cache: it grows as used, where lru-cache preallocates `max` slots
  // for every actor built (most tenants have a handful of clients).
  private readonly secrets = new QuickLRU<string, { sealed: string; secret: Buffer }>({ maxSize: 2000 });
  private readonly inline = new QuickLRU<string, { source: string; keys: ClientPublicKey[] }>({ maxSize: 2000 });
  private readonly remote = new QuickLRU<string, RemoteSet>({ maxSize: 2000 });
  private readonly now: () => number;

  constructor(private readonly opts: ClientKeyOptions) {
    this.now = opts.now ?? epoch;
  }

  /** HMAC key of a client_secret_jwt client; undefined when it has no usable secret. */
  hmacKey(record: ClientRecord): Buffer | undefined {
    const sealed = record.secret_sealed;
    if (!sealed) return undefined;
    const hit = this.secrets.get(record.client_id);
    if (hit && hit.sealed === sealed) return hit.secret;
    const raw = this.opts.secretOf(record);
    if (!raw) return undefined;
    const secret = Buffer.from(raw);
    this.secrets.set(record.client_id, { sealed, secret });
    return secret;
  }

  /** Registered public keys, without fetching (inline `jwks`, or the jwks_uri set as last fetched). */
  publicKeys(record: ClientRecord): ClientPublicKey[] {
    const { jwks, jwks_uri } = record.metadata;
    if (jwks_uri) {
      const set = this.remote.get(record.client_id);
      return set && set.uri === jwks_uri ? set.keys : [];
    }
    if (!jwks) return [];
    const source = JSON.stringify(jwks);
    const hit = this.inline.get(record.client_id);
    if (hit && hit.source === source) return hit.keys;
    const keys = importJwks(jwks);
    this.inline.set(record.client_id, { source, keys });
    return keys;
  }

  /** True when the keys may be refetched: a jwks_uri client whose set is stale or never fetched. */
  stale(record: ClientRecord): boolean {
    const uri = record.metadata.jwks_uri;
    if (!uri) return false;
    const set = this.remote.get(record.client_id);
    return !set || set.uri !== uri || set.freshUntil <= this.now();
  }

  /** Refetches a stale jwks_uri set (one fetch at a time per client); throws when it cannot. */
  async refresh(record: ClientRecord): Promise<void> {
    const uri = record.metadata.jwks_uri;
    if (!uri || !this.stale(record)) return;
    let set = this.remote.get(record.client_id);
    if (!set || set.uri !== uri) {
      set = { uri, keys: [], freshUntil: 0 };
      this.remote.set(record.client_id, set);
    }
    const target = set;
    target.refreshing ??= (async () => {
      try {
        const res = await this.opts.fetchJwks(uri);
        // Fresh for the period even when the answer is unusable, so a broken jwks_uri is not hammered.
        target.freshUntil = res.freshUntil;
        if (res.status !== 200) throw new Error(`unexpected jwks_uri response status code ${res.status}`);
        target.keys = importJwks(res.body);
      } finally {
        target.refreshing = undefined;
      }
    })();
    await target.refreshing;
  }

  forget(clientId: string): void {
    this.secrets.delete(clientId);
    this.inline.delete(clientId);
    this.remote.delete(clientId);
  }
}

/** Freshness of a jwks_uri answer by oidc-provider's rule: at least 60 s, longer by max-age or Expires. */
export function freshUntilOf(headers: { get(name: string): string | null }, now = epoch()): number {
  const candidates = [now + 60];
  const expires = headers.get('expires');
  if (expires) {
    const t = Date.parse(expires);
    if (Number.isFinite(t)) candidates.push(Math.floor(t / 1000));
  }
  const maxAge = /max-age=(\d+)/.exec(headers.get('cache-control') ?? '');
  if (maxAge) candidates.push(now + parseInt(maxAge[1]!, 10));
  return Math.max(...candidates);
}
