/** The users resource (spec 4.4): input validated here, the rules and writes in src/users. */
import { z } from 'zod';
import type { AuditEntry } from '../../storage/types.js';
import { findSessions, presentSession, sessionTtl } from '../../sessions/store.js';
import { createUser, deleteUser, getUser, presentUser, resetMfa, setPassword, setUserLock, updateUser, type UserScope } from '../../users/operations.js';
import { passwordResetSchema, userCreateSchema, userUpdateSchema } from '../../users/schema.js';
import { auditEntryResponse } from '../audit/schema.js';
import { op, type Call, type Operation } from '../operation.js';
import { dataEnvelope, listEnvelope, noContent, sendJson, serializer } from '../respond.js';
import { sessionResponse } from '../sessions/schema.js';
import { activitiesQuery, messageResponse, userListQuery, userResponse } from './schema.js';

const one = serializer(dataEnvelope(userResponse));
const many = serializer(listEnvelope(userResponse));
const messageOut = serializer(dataEnvelope(messageResponse));
const activitiesOut = serializer(listEnvelope(auditEntryResponse));
const sessionsOut = serializer(z.object({ data: z.array(sessionResponse) }));

/**
 * The domain's view of a call: its tenant and effective config, the caller for the audit entry,
 * and the security alert an administrator's password set or MFA reset sends the user.
 */
const scopeOf = (call: Call): UserScope => ({
  ctx: call.ctx,
  tenant: call.tenant,
  config: call.actor.config,
  by: call.by,
  alertUser: (user, change) => call.actor.alertAdminChange(user, change),
});

/** A literal pattern type, so the handlers' `call.params.user_id` is typed (operation.ts PathParams). */
const route = <S extends string>(suffix: S) => `/api/v1/users/:user_id${suffix}` as const;

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
    handler: async (call) => sendJson(201, one({ data: presentUser(await createUser(scopeOf(call), call.body)) })),
  }),
  op({
    method: 'GET', path: route(''), scope: 'svc:users:read', rateClass: 'read', tag: 'users', summary: 'Get a user',
    success: { status: 200, schema: dataEnvelope(userResponse) },
    handler: async (call) => sendJson(200, one({ data: presentUser(await getUser(call, call.params.user_id)) })),
  }),
  op({
    method: 'PUT', path: route(''), scope: 'svc:users:write', rateClass: 'write', tag: 'users', summary: 'Replace all mutable fields (omitted ones are cleared)',
    body: userUpdateSchema,
    success: { status: 200, schema: dataEnvelope(userResponse) },
    errors: [404, 409, 422],
    handler: async (call) => sendJson(200, one({ data: presentUser(await updateUser(scopeOf(call), call.params.user_id, call.body, 'put')) })),
  }),
  op({
    method: 'PATCH', path: route(''), scope: 'svc:users:write', rateClass: 'write', tag: 'users', summary: 'Change the supplied fields only',
    body: userUpdateSchema,
    success: { status: 200, schema: dataEnvelope(userResponse) },
    errors: [404, 409, 422],
    handler: async (call) => sendJson(200, one({ data: presentUser(await updateUser(scopeOf(call), call.params.user_id, call.body, 'patch')) })),
  }),
  op({
    method: 'DELETE', path: route(''), scope: 'svc:users:delete', rateClass: 'delete', tag: 'users',
    summary: 'Delete a user: gone from the API (404 afterwards), personal data and credentials erased, sessions revoked',
    success: { status: 204 },
    handler: async (call) => {
      await deleteUser(scopeOf(call), call.params.user_id);
      return noContent();
    },
  }),
  op({
    method: 'POST', path: route('/lock'), scope: 'svc:users:write', rateClass: 'write', tag: 'users', summary: 'Lock a user (no expiry)',
    success: { status: 200, schema: dataEnvelope(userResponse) },
    handler: async (call) => sendJson(200, one({ data: presentUser(await setUserLock(scopeOf(call), call.params.user_id, true)) })),
  }),
  op({
    method: 'DELETE', path: route('/lock'), scope: 'svc:users:write', rateClass: 'write', tag: 'users', summary: 'Unlock a user',
    success: { status: 200, schema: dataEnvelope(userResponse) },
    handler: async (call) => sendJson(200, one({ data: presentUser(await setUserLock(scopeOf(call), call.params.user_id, false)) })),
  }),
  op({
    method: 'POST', path: route('/password-reset'), scope: 'svc:users:write', rateClass: 'sensitive', tag: 'users', summary: 'Set a new password (admin reset)',
    body: passwordResetSchema,
    success: { status: 200, schema: dataEnvelope(messageResponse) },
    errors: [404, 409, 422, 503],
    handler: async (call) => {
      await setPassword(scopeOf(call), call.params.user_id, call.body.new_password);
      return sendJson(200, messageOut({ data: { message: 'The password has been reset' } }));
    },
  }),
  op({
    method: 'POST', path: route('/mfa/reset'), scope: 'svc:users:write', rateClass: 'sensitive', tag: 'users', summary: 'Reset MFA (TOTP disabled, recovery codes cleared, passkeys removed)',
    success: { status: 200, schema: dataEnvelope(messageResponse) },
    handler: async (call) => {
      await resetMfa(scopeOf(call), call.params.user_id);
      return sendJson(200, messageOut({ data: { message: 'MFA has been reset' } }));
    },
  }),
  op({
    method: 'GET', path: route('/activities'), scope: 'svc:users:read', rateClass: 'read', tag: 'users', summary: "The user's audit entries, newest first",
    query: activitiesQuery,
    success: { status: 200, schema: listEnvelope(auditEntryResponse) },
    handler: async (call) => {
      const user = await getUser(call, call.params.user_id);
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
      const user = await getUser(call, call.params.user_id);
      const sessions = await findSessions(call.ctx.storage.oidc, call.tenant, { username: user.id, active: true }, sessionTtl(call.actor.config));
      return sendJson(200, sessionsOut({ data: sessions.map(presentSession) }));
    },
  }),
];
