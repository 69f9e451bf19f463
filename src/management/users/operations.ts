/** The users resource (spec 4.4). Passwords are hashed on the Argon2 worker pool, never here. */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { conflict, notFound, validation } from '../../http/problem.js';
import { UniqueViolation } from '../../storage/errors.js';
import type { AuditEntry, UserRecord } from '../../storage/types.js';
import { PLATFORM_TENANT } from '../../tenancy/resolver.js';
import { resetMfa } from '../../users/passkeys.js';
import { auditEntryResponse } from '../audit/schema.js';
import { op, type Call, type Operation } from '../operation.js';
import { dataEnvelope, listEnvelope, noContent, sendJson, serializer } from '../respond.js';
import { sessionResponse } from '../sessions/schema.js';
import { findSessions, presentSession, revokeAccount, sessionTtl } from '../sessions/store.js';
import {
  MUTABLE_USER_FIELDS, PLATFORM_ROLES, activitiesQuery, messageResponse, passwordResetSchema,
  userCreateSchema, userListQuery, userResponse, userUpdateSchema, type UserUpdateInput,
} from './schema.js';

const one = serializer(dataEnvelope(userResponse));
const many = serializer(listEnvelope(userResponse));
const messageOut = serializer(dataEnvelope(messageResponse));
const activitiesOut = serializer(listEnvelope(auditEntryResponse));
const sessionsOut = serializer(z.object({ data: z.array(sessionResponse) }));

type UserChange = Parameters<Call['ctx']['storage']['users']['update']>[2];

/** Only the public fields; the hash, sealed MFA material and internal state never leave. */
export function presentUser(u: UserRecord, now = new Date().toISOString()) {
  return {
    id: u.id,
    email: u.email,
    username: u.username,
    given_name: u.given_name,
    family_name: u.family_name,
    name: u.name,
    nickname: u.nickname,
    role: u.role,
    account_enabled: u.account_enabled,
    email_verified: u.email_verified,
    // A brute-force lock reads as unlocked once it has run out; an admin lock has no end.
    locked: u.locked && (u.locked_until === null || u.locked_until > now),
    auth_provider: u.auth_provider,
    mfa: { enabled: u.mfa_enabled, methods: u.mfa_methods },
    created_at: u.created_at,
    updated_at: u.updated_at,
    last_login_at: u.last_login_at,
  };
}

const accountKey = (id: string) => `account:${id}`;

async function mustGet(call: Call, id: string): Promise<UserRecord> {
  const user = await call.ctx.storage.users.get(call.tenant, id);
  if (!user) throw notFound(`User ${id} not found`);
  return user;
}

/** For changes: an anonymised account is a tombstone, it cannot be edited back to life. */
async function mustGetLive(call: Call, id: string): Promise<UserRecord> {
  const user = await mustGet(call, id);
  if (user.deleted_at) throw conflict(`User ${id} was deleted (anonymised) and cannot be changed`);
  return user;
}

function checkRole(role: string | undefined, tenant: string): void {
  if (role && PLATFORM_ROLES.has(role) && tenant !== PLATFORM_TENANT) {
    throw validation([{ field: 'role', message: `the role ${role} can only be given in the ${PLATFORM_TENANT} tenant` }]);
  }
}

/** 409 when another live account already has the e-mail (checked up front for a clear answer). */
async function checkEmailFree(call: Call, email: string, selfId?: string): Promise<void> {
  const other = await call.ctx.storage.users.findByEmail(call.tenant, email);
  if (other && other.id !== selfId) throw conflict('A user with this e-mail address already exists');
}

/** The unique indexes are the real guard (two concurrent writers): their violation is a 409 too. */
function uniqueToConflict(err: unknown): never {
  if (err instanceof UniqueViolation) {
    throw conflict(err.field === 'username' ? 'A user with this username already exists' : 'A user with this e-mail address already exists');
  }
  throw err;
}

/**
 * The stored change for PUT (every mutable field; omitted ones back to their defaults, except the
 * e-mail, which has no default and is kept) or PATCH (supplied fields only; null clears).
 */
function buildChange(input: UserUpdateInput, existing: UserRecord, mode: 'put' | 'patch'): UserChange {
  const change: UserChange = {};
  if (mode === 'put') {
    Object.assign(change, {
      username: null, given_name: null, family_name: null, name: null, nickname: null,
      role: 'user', account_enabled: true, email_verified: false,
    });
  }
  for (const key of MUTABLE_USER_FIELDS) {
    if (input[key] !== undefined) (change as Record<string, unknown>)[key] = input[key];
  }
  // A new address is unverified unless the caller says otherwise.
  const newEmail = change.email;
  if (newEmail && newEmail.toLowerCase() !== existing.email?.toLowerCase() && input.email_verified === undefined) {
    change.email_verified = false;
  }
  return change;
}

async function update(call: Call<unknown, UserUpdateInput>, mode: 'put' | 'patch') {
  const existing = await mustGetLive(call, call.params.user_id!);
  checkRole(call.body.role, call.tenant);
  const change = buildChange(call.body, existing, mode);
  if (change.email) await checkEmailFree(call, change.email, existing.id);
  const updated = await call.ctx.storage.users.update(call.tenant, existing.id, change).catch(uniqueToConflict);
  if (!updated) throw notFound(`User ${existing.id} not found`);
  const fields = MUTABLE_USER_FIELDS.filter((k) => call.body[k] !== undefined);
  await call.audit({ type: 'user.updated', user_id: updated.id, details: { user_id: updated.id, fields, method: mode.toUpperCase() } });
  return sendJson(200, one({ data: presentUser(updated) }));
}

async function setLock(call: Call, locked: boolean) {
  const existing = await mustGetLive(call, call.params.user_id!);
  const updated = await call.ctx.storage.users.update(call.tenant, existing.id, { locked, locked_until: null });
  if (!updated) throw notFound(`User ${existing.id} not found`);
  // Unlocking also forgets earlier failures, or the next wrong password would lock again at once.
  if (!locked) await call.ctx.storage.loginAttempts.clear(call.tenant, accountKey(existing.id));
  await call.audit({ type: locked ? 'user.locked' : 'user.unlocked', user_id: existing.id, details: { user_id: existing.id } });
  return sendJson(200, one({ data: presentUser(updated) }));
}

/** Erases everything personal; the row stays so audit entries and references keep their target. */
const ANONYMISED: UserChange = {
  email: null, email_verified: false, username: null, given_name: null, family_name: null, name: null, nickname: null,
  password_hash: null, mfa_enabled: false, mfa_methods: [], mfa_secret_sealed: null, mfa_recovery_sealed: null,
  account_enabled: false, locked: false, locked_until: null,
};

const route = (suffix = '') => `/api/v1/users/:user_id${suffix}`;

export const userOperations: Operation[] = [
  op({
    method: 'GET', path: '/api/v1/users', scope: 'svc:users:read', rateClass: 'read', tag: 'users', summary: 'List users',
    query: userListQuery,
    success: { status: 200, schema: listEnvelope(userResponse) },
    handler: async (call) => {
      const { account_enabled, role, auth_provider, q, ...pq } = call.query;
      const page = await call.ctx.storage.users.list(call.tenant, { account_enabled, role, auth_provider, q }, call.cursors.request('users', pq));
      const now = new Date().toISOString();
      return sendJson(200, many(call.cursors.envelope('users', page, (u) => [u.created_at, u.id], (u) => presentUser(u, now))));
    },
  }),
  op({
    method: 'POST', path: '/api/v1/users', scope: 'svc:users:write', rateClass: 'write', tag: 'users', summary: 'Create a user',
    body: userCreateSchema,
    success: { status: 201, schema: dataEnvelope(userResponse) },
    errors: [409, 422, 503],
    handler: async (call) => {
      const b = call.body;
      checkRole(b.role, call.tenant);
      // Before hashing: a duplicate should not cost an Argon2 run.
      await checkEmailFree(call, b.email);
      const passwordHash = await call.ctx.passwords.hash(b.password);
      const now = new Date().toISOString();
      const user: UserRecord = {
        id: randomUUID(),
        email: b.email,
        email_verified: b.email_verified ?? false,
        username: b.username ?? null,
        given_name: b.given_name ?? null,
        family_name: b.family_name ?? null,
        name: b.name ?? null,
        nickname: b.nickname ?? null,
        role: b.role ?? 'user',
        account_enabled: b.account_enabled ?? true,
        locked: false,
        locked_until: null,
        auth_provider: 'local',
        password_hash: passwordHash,
        mfa_enabled: false,
        mfa_methods: [],
        mfa_secret_sealed: null,
        mfa_recovery_sealed: null,
        deleted_at: null,
        created_at: now,
        updated_at: now,
        last_login_at: null,
      };
      await call.ctx.storage.users.create(call.tenant, user).catch(uniqueToConflict);
      await call.audit({ type: 'user.created', user_id: user.id, details: { user_id: user.id, role: user.role } });
      return sendJson(201, one({ data: presentUser(user) }));
    },
  }),
  op({
    method: 'GET', path: route(), scope: 'svc:users:read', rateClass: 'read', tag: 'users', summary: 'Get a user',
    success: { status: 200, schema: dataEnvelope(userResponse) },
    handler: async (call) => sendJson(200, one({ data: presentUser(await mustGet(call, call.params.user_id!)) })),
  }),
  op({
    method: 'PUT', path: route(), scope: 'svc:users:write', rateClass: 'write', tag: 'users', summary: 'Replace all mutable fields (omitted ones are cleared)',
    body: userUpdateSchema,
    success: { status: 200, schema: dataEnvelope(userResponse) },
    errors: [404, 409, 422],
    handler: (call) => update(call, 'put'),
  }),
  op({
    method: 'PATCH', path: route(), scope: 'svc:users:write', rateClass: 'write', tag: 'users', summary: 'Change the supplied fields only',
    body: userUpdateSchema,
    success: { status: 200, schema: dataEnvelope(userResponse) },
    errors: [404, 409, 422],
    handler: (call) => update(call, 'patch'),
  }),
  op({
    method: 'DELETE', path: route(), scope: 'svc:users:delete', rateClass: 'delete', tag: 'users',
    summary: 'Anonymise a user: personal data and credentials erased, sign-in impossible, sessions revoked',
    success: { status: 204 },
    handler: async (call) => {
      const existing = await mustGet(call, call.params.user_id!);
      if (existing.deleted_at) return noContent(); // already anonymised: nothing left to erase
      const updated = await call.ctx.storage.users.update(call.tenant, existing.id, { ...ANONYMISED, deleted_at: new Date().toISOString() });
      if (!updated) throw notFound(`User ${existing.id} not found`);
      await call.ctx.storage.webauthn.deleteUserCredentials(call.tenant, existing.id); // passkeys are credentials too
      const revoked = await revokeAccount(call.ctx.storage.oidc, call.tenant, existing.id, sessionTtl(call.actor));
      await call.ctx.storage.loginAttempts.clear(call.tenant, accountKey(existing.id));
      await call.audit({ type: 'user.deleted', user_id: existing.id, details: { user_id: existing.id, anonymised: true, sessions_revoked: revoked } });
      return noContent();
    },
  }),
  op({
    method: 'POST', path: route('/lock'), scope: 'svc:users:write', rateClass: 'write', tag: 'users', summary: 'Lock a user (no expiry)',
    success: { status: 200, schema: dataEnvelope(userResponse) },
    handler: (call) => setLock(call, true),
  }),
  op({
    method: 'DELETE', path: route('/lock'), scope: 'svc:users:write', rateClass: 'write', tag: 'users', summary: 'Unlock a user',
    success: { status: 200, schema: dataEnvelope(userResponse) },
    handler: (call) => setLock(call, false),
  }),
  op({
    method: 'POST', path: route('/password-reset'), scope: 'svc:users:write', rateClass: 'sensitive', tag: 'users', summary: 'Set a new password (admin reset)',
    body: passwordResetSchema,
    success: { status: 200, schema: dataEnvelope(messageResponse) },
    errors: [404, 409, 422, 503],
    handler: async (call) => {
      const existing = await mustGetLive(call, call.params.user_id!);
      const passwordHash = await call.ctx.passwords.hash(call.body.new_password);
      const updated = await call.ctx.storage.users.update(call.tenant, existing.id, { password_hash: passwordHash });
      if (!updated) throw notFound(`User ${existing.id} not found`);
      await call.audit({ type: 'password_reset', user_id: existing.id, details: { user_id: existing.id, by: 'admin' } });
      return sendJson(200, messageOut({ data: { message: 'The password has been reset' } }));
    },
  }),
  op({
    method: 'POST', path: route('/mfa/reset'), scope: 'svc:users:write', rateClass: 'sensitive', tag: 'users', summary: 'Reset MFA (TOTP disabled, recovery codes cleared, passkeys removed)',
    success: { status: 200, schema: dataEnvelope(messageResponse) },
    handler: async (call) => {
      const existing = await mustGetLive(call, call.params.user_id!);
      // TOTP, recovery codes and passkeys (issue 14).
      const passkeys = await resetMfa(call.ctx, call.tenant, existing.id);
      await call.audit({ type: 'user.mfa_reset', user_id: existing.id, details: { user_id: existing.id, methods: existing.mfa_methods, passkeys_removed: passkeys } });
      return sendJson(200, messageOut({ data: { message: 'MFA has been reset' } }));
    },
  }),
  op({
    method: 'GET', path: route('/activities'), scope: 'svc:users:read', rateClass: 'read', tag: 'users', summary: "The user's audit entries, newest first",
    query: activitiesQuery,
    success: { status: 200, schema: listEnvelope(auditEntryResponse) },
    handler: async (call) => {
      const user = await mustGet(call, call.params.user_id!);
      // Cursor scope per user: a cursor from another user's log is rejected rather than misread.
      const scope = `users/${user.id}/activities`;
      const page = await call.ctx.storage.audit.list(call.tenant, { user_id: user.id }, call.cursors.request(scope, call.query));
      return sendJson(200, activitiesOut(call.cursors.envelope(scope, page, (e: AuditEntry) => [e.timestamp, e.id], (e) => e)));
    },
  }),
  op({
    method: 'GET', path: route('/sessions'), scope: 'svc:sessions:read', rateClass: 'read', tag: 'users', summary: "The user's active sessions (flat list)",
    success: { status: 200, schema: z.object({ data: z.array(sessionResponse) }) },
    handler: async (call) => {
      const user = await mustGet(call, call.params.user_id!);
      const sessions = await findSessions(call.ctx.storage.oidc, call.tenant, { username: user.id, active: true }, sessionTtl(call.actor));
      return sendJson(200, sessionsOut({ data: sessions.map(presentSession) }));
    },
  }),
];
