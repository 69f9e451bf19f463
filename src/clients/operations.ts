/**
 * The clients domain: every create, change and delete of a client goes through here, whichever
 * surface asks (Management API, dynamic registration, CLI, bootstrap, the console). Each write and
 * its audit entry are one storage transaction (storage/types.ts), so an accepted change is never
 * unaudited; then the tenant's client caches are told (this instance at once, the others by event).
 */
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Attribution, AuditEvent } from '../audit/audit-log.js';
import type { AppContext } from '../context.js';
import { clientChangedChannel, type ClientChangedEvent } from '../events/bus.js';
import { Conflict, Invalid, NotFound, type FieldError } from '../errors.js';
import type { AuditEntry, ClientMetadata, ClientRecord } from '../storage/types.js';
import { assertMayConfigureClient } from './escalation.js';
import { buildMetadata } from './rules.js';
import { checkClientScopes } from './scope-names.js';
import { MUTABLE_CLIENT_FIELDS, SPEC_OPTIONAL_CLIENT_FIELDS, type ClientInput } from './schema.js';
import { hashSecret, newClientSecret, secretMatches } from './secrets.js';

/** The part of a tenant handle the domain needs: this instance's cache of the tenant's clients. */
export interface ClientCache {
  invalidateClient(clientId: string): void;
}

export interface ClientScope {
  ctx: Pick<AppContext, 'config' | 'storage' | 'sealer' | 'events' | 'log' | 'audit'>;
  tenant: string;
  by?: Attribution;
  cache?: ClientCache;
  /**
   * The caller's `svc:*` scopes (escalation.ts): a client may not be created, changed or have its
   * secret handed out with scopes beyond them. Undefined for the operator (CLI, bootstrap).
   */
  held?: ReadonlySet<string>;
}

const UNSET_FIELDS = Object.fromEntries(SPEC_OPTIONAL_CLIENT_FIELDS.map((f) => [f, null]));

export function presentClient(r: ClientRecord, secret?: string): Record<string, unknown> {
  // A public client always uses PKCE (provider.ts), whatever a record stored before that rule says.
  const pkce = isConfidential(r.metadata) ? {} : { require_pkce: true };
  return { ...UNSET_FIELDS, ...r.metadata, ...pkce, client_id: r.client_id, active: r.active, created_at: r.created_at, updated_at: r.updated_at, ...(secret ? { client_secret: secret } : {}) };
}

export function isConfidential(m: ClientMetadata): boolean {
  return m.token_endpoint_auth_method !== 'none';
}

/** Validated, complete metadata from a create or PUT (no base) or PATCH (the stored metadata as base). */
export function clientMetadata(scope: Pick<ClientScope, 'ctx'>, input: ClientInput, base?: ClientMetadata): ClientMetadata {
  return buildMetadata(input, base, scope.ctx.config);
}

/** Hash for every confidential client; sealed copy only where HMAC needs the raw secret. */
function secretColumns(scope: ClientScope, clientId: string, m: ClientMetadata, secret: string | undefined) {
  if (!secret) return { secret_hash: null, secret_sealed: null };
  return {
    secret_hash: hashSecret(secret),
    secret_sealed: m.token_endpoint_auth_method === 'client_secret_jwt' ? scope.ctx.sealer.seal(secret, `${scope.tenant}:client:${clientId}`) : null,
  };
}

/** A new, active, unused client record: the one shape every creation path stores. */
export function newClientRecord(
  clientId: string,
  secret: Pick<ClientRecord, 'secret_hash' | 'secret_sealed'>,
  metadata: ClientMetadata,
  now = new Date().toISOString(),
): ClientRecord {
  return { client_id: clientId, ...secret, secret_generation: 0, metadata, active: true, created_at: now, updated_at: now, last_used_at: null, tokens_issued: 0 };
}

/**
 * The audit entry of a write, attributed to the caller; written by the repository with the write.
 * The acting user (a user token) is named even where the event names the affected user in
 * user_id; the affected id stays in details (issue 12).
 */
function entry(scope: ClientScope, event: AuditEvent): AuditEntry {
  const actingUser = scope.by?.user_id ? { user_id: scope.by.user_id, username: scope.by.username ?? null } : {};
  return scope.ctx.audit.entry(scope.tenant, { ...scope.by, ...event, ...actingUser });
}

/**
 * After a write: this instance's cache drops the client at once, and every other instance drops it
 * on the tenant's client:changed event (their caches would otherwise serve it for up to 5 minutes,
 * tenancy/state-cache.ts). The write is committed; an event that cannot be published is logged, not
 * failed: instances that miss it read the client again when their cache entry ends or their event
 * bus reconnects.
 */
async function clientChanged(scope: ClientScope, clientId: string): Promise<void> {
  scope.cache?.invalidateClient(clientId);
  const { ctx, tenant } = scope;
  const event: ClientChangedEvent = { tenant, client_id: clientId, at: new Date().toISOString() };
  try {
    await ctx.events.publish(clientChangedChannel(tenant, ctx.config.redis.key_prefix), event);
  } catch (err) {
    ctx.log.warn({ err, tenant, client_id: clientId }, 'client:changed event could not be published');
  }
}

export async function getClient(scope: Pick<ClientScope, 'ctx' | 'tenant'>, clientId: string): Promise<ClientRecord> {
  const record = await scope.ctx.storage.clients.get(scope.tenant, clientId);
  if (!record) throw new NotFound(`Client ${clientId} not found`);
  return record;
}

export interface CreateOptions {
  clientId?: string;
  secret?: string;
  /** The audit entry (default `client.created` with id and name); undefined details are merged. */
  audit?: (record: ClientRecord) => AuditEvent;
}

/** Creates a client; the secret (confidential clients) is returned once, never stored in clear. */
export async function createClient(scope: ClientScope, metadata: ClientMetadata, opts: CreateOptions = {}): Promise<{ record: ClientRecord; secret?: string }> {
  if (scope.held) assertMayConfigureClient(metadata.scope, scope.held);
  await checkClientScopes(scope, metadata.scope);
  const clientId = opts.clientId ?? randomBytes(16).toString('base64url');
  const secret = isConfidential(metadata) ? (opts.secret ?? newClientSecret()) : undefined;
  const record = newClientRecord(clientId, secretColumns(scope, clientId, metadata, secret), metadata);
  const event = opts.audit?.(record) ?? { type: 'client.created', details: { client_id: clientId, client_name: metadata.client_name } };
  await scope.ctx.storage.clients.create(scope.tenant, record, entry(scope, event));
  return { record, secret };
}

/** How often a PATCH is applied again to a client changed meanwhile before answering 409. */
const PATCH_ATTEMPTS = 5;

/**
 * PUT (omitted fields cleared to their defaults) replaces the mutable fields; PATCH applies the given ones to the stored client. The metadata
 * is one JSON value, so a PATCH is a read-modify-write: it is written only if the client is still
 * as it was read, and applied again to the newer version otherwise, so two PATCHes of different
 * fields at once both land (CONTRACT: concurrent writes each succeed or fail with 409).
 */
export async function updateClient(scope: ClientScope, clientId: string, input: ClientInput, mode: 'put' | 'patch'): Promise<ClientRecord> {
  for (let attempt = 1; ; attempt++) {
    const updated = await writeClientChange(scope, clientId, input, mode);
    if (updated) return updated;
    if (attempt === PATCH_ATTEMPTS) throw new Conflict(`Client ${clientId} was changed by other requests meanwhile; retry`);
  }
}

/**
 * The fields whose stored value the change alters, in schema order: what the `client.updated`
 * entry names. A PUT's cleared fields, a PATCH's nulls and the fields derived from others (the
 * response types of new grant types) are there; a field sent with the value it already had is not.
 * `client_secret` is named when the change drops a stored secret (the client became public).
 * Names only, never values.
 */
function changedFields(existing: ClientRecord, metadata: ClientMetadata): string[] {
  const fields: string[] = MUTABLE_CLIENT_FIELDS.filter((k) => !isDeepStrictEqual(existing.metadata[k] ?? null, metadata[k] ?? null));
  if (existing.secret_hash !== null && !isConfidential(metadata)) fields.push('client_secret');
  return fields;
}

/**
 * The read-only fields a PUT or PATCH may carry (a GET, or a creation's answer, sent back) are
 * ignored only while they say what is stored: one that differs asks for a change this request does
 * not make, and answering 200 would say it was made. `client_id` never changes; `active` changes
 * through /activate and /deactivate, the secret through /secret (compared in constant time with
 * the stored hash, never echoed). The timestamps are not settings: ignored whatever they say.
 */
function readOnlyChanges(existing: ClientRecord, input: ClientInput): void {
  const errors: FieldError[] = [];
  if (input.client_id !== undefined && input.client_id !== existing.client_id) errors.push({ field: 'client_id', message: 'cannot be changed' });
  if (input.active !== undefined && input.active !== existing.active) {
    errors.push({ field: 'active', message: `is read-only: use POST /api/v1/clients/${existing.client_id}/${existing.active ? 'deactivate' : 'activate'}` });
  }
  const secret = input.client_secret;
  if (secret !== undefined && secret !== null && !(typeof secret === 'string' && secretMatches(secret, existing.secret_hash))) {
    errors.push({ field: 'client_secret', message: `is read-only: use POST /api/v1/clients/${existing.client_id}/secret` });
  }
  if (errors.length) throw new Invalid(errors);
}

/** One attempt: the updated client, or undefined when it changed since it was read (a PATCH's base). */
async function writeClientChange(scope: ClientScope, clientId: string, input: ClientInput, mode: 'put' | 'patch'): Promise<ClientRecord | undefined> {
  const existing = await getClient(scope, clientId);
  readOnlyChanges(existing, input);
  const metadata = clientMetadata(scope, input, mode === 'patch' ? existing.metadata : undefined);
  // Hole 3: changing a client (even fields other than scope: its redirect URIs, its keys) is
  // taking it over; the caller must hold every svc:* scope the client is and will be allowed.
  if (scope.held) assertMayConfigureClient(`${existing.metadata.scope ?? ''} ${metadata.scope ?? ''}`, scope.held);
  // PATCH checks a scope it sets; one it keeps may name a resource deleted since, which is harmless.
  if (mode === 'put' || input.scope !== undefined) await checkClientScopes(scope, metadata.scope);
  const change: Parameters<ClientScope['ctx']['storage']['clients']['update']>[2] = { metadata };
  // A client that became confidential has no secret until POST /secret; one that became public loses it.
  if (!isConfidential(metadata)) Object.assign(change, { secret_hash: null, secret_sealed: null });
  const fields = changedFields(existing, metadata);
  const event = { type: 'client.updated', details: { client_id: existing.client_id, fields, method: mode.toUpperCase() } };
  const updated = await scope.ctx.storage.clients.update(scope.tenant, existing.client_id, change, entry(scope, event), mode === 'patch' ? existing.metadata : undefined);
  // Deleted meanwhile (404 from getClient on the next attempt), or changed: applied again.
  if (!updated) return undefined;
  await clientChanged(scope, updated.client_id);
  return updated;
}

export async function setClientActive(scope: ClientScope, clientId: string, active: boolean): Promise<ClientRecord> {
  const existing = await getClient(scope, clientId);
  // Deactivation also ends the client's own tokens (client_credentials, Management API: their sgen)
  // for good; its users' tokens are only refused while it is inactive (docs/decisions.md).
  const change = active ? { active } : { active, bump_generation: true };
  const event = { type: active ? 'client.activated' : 'client.deactivated', details: { client_id: existing.client_id } };
  if (existing.active === active) {
    // Nothing to write; the request is still recorded, as every accepted change request is.
    await scope.ctx.audit.record(scope.tenant, { ...scope.by, ...event });
    await clientChanged(scope, existing.client_id);
    return existing;
  }
  const updated = await scope.ctx.storage.clients.update(scope.tenant, existing.client_id, change, entry(scope, event));
  if (!updated) throw new NotFound(`Client ${existing.client_id} not found`);
  await clientChanged(scope, updated.client_id);
  return updated;
}

export async function deleteClient(scope: ClientScope, clientId: string): Promise<void> {
  const event = { type: 'client.deleted', details: { client_id: clientId } };
  if (!(await scope.ctx.storage.clients.delete(scope.tenant, clientId, entry(scope, event)))) throw new NotFound(`Client ${clientId} not found`);
  await clientChanged(scope, clientId);
}

/** A new secret; the old one (and every token issued under it) is invalid at once. */
export async function rotateClientSecret(scope: ClientScope, clientId: string): Promise<{ client_id: string; client_secret: string }> {
  const existing = await getClient(scope, clientId);
  // The new secret is handed to the caller: as good as creating the client (hole 3).
  if (scope.held) assertMayConfigureClient(existing.metadata.scope, scope.held);
  if (!isConfidential(existing.metadata)) {
    throw new Invalid([{ field: 'token_endpoint_auth_method', message: 'public clients have no secret' }]);
  }
  const secret = newClientSecret();
  const change = { ...secretColumns(scope, existing.client_id, existing.metadata, secret), bump_generation: true };
  const event = { type: 'client.secret_rotated', details: { client_id: existing.client_id } };
  const updated = await scope.ctx.storage.clients.update(scope.tenant, existing.client_id, change, entry(scope, event));
  if (!updated) throw new NotFound(`Client ${existing.client_id} not found`);
  await clientChanged(scope, existing.client_id);
  return { client_id: existing.client_id, client_secret: secret };
}

/**
 * Sets a secret the operator chose (the bootstrap client's configured one, bootstrap.ts). As a
 * regeneration: the old secret and every token issued under it end at once, the write carries its
 * audit entry, and every instance drops its cached copy (client:changed).
 */
export async function setClientSecret(scope: ClientScope, existing: ClientRecord, secret: string, details: Record<string, unknown> = {}): Promise<ClientRecord> {
  const change = { ...secretColumns(scope, existing.client_id, existing.metadata, secret), bump_generation: true };
  const event = { type: 'client.secret_rotated', details: { client_id: existing.client_id, ...details } };
  const updated = await scope.ctx.storage.clients.update(scope.tenant, existing.client_id, change, entry(scope, event));
  if (!updated) throw new NotFound(`Client ${existing.client_id} not found`);
  await clientChanged(scope, existing.client_id);
  return updated;
}
