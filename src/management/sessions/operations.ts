/** The sessions resource (spec 4.5): oidc-provider sessions, listed, read and revoked. */
import { notFound, validation } from '../../http/problem.js';
import { op, type Call, type Operation } from '../operation.js';
import { dataEnvelope, listEnvelope, noContent, sendJson, serializer } from '../respond.js';
import { bulkRevokeQuery, revokedCountResponse, sessionListQuery, sessionResponse } from './schema.js';
import { findSessions, getSession, pageOf, presentSession, revokeSession, sessionTtl, type SessionView } from '../../sessions/store.js';

const one = serializer(dataEnvelope(sessionResponse));
const many = serializer(listEnvelope(sessionResponse));
const revokedOut = serializer(dataEnvelope(revokedCountResponse));

const auditDetails = (s: SessionView) => ({ jti: s.jti, account_id: s.account_id, client_ids: s.client_ids });

async function mustGet(call: Call, jti: string): Promise<SessionView> {
  const session = await getSession(call.ctx.storage.oidc, call.tenant, jti, sessionTtl(call.actor.config));
  if (!session) throw notFound(`Session ${jti} not found`);
  return session;
}

export const sessionOperations: Operation[] = [
  op({
    method: 'GET', path: '/api/v1/sessions', scope: 'svc:sessions:read', rateClass: 'read', tag: 'sessions', summary: 'List sessions',
    query: sessionListQuery,
    success: { status: 200, schema: listEnvelope(sessionResponse) },
    handler: async (call) => {
      const { username, client_id, active, ...pq } = call.query;
      const sessions = await findSessions(call.ctx.storage.oidc, call.tenant, { username, client_id, active }, sessionTtl(call.actor.config));
      const key = (s: SessionView): [string, string] => [s.created_at, s.jti];
      const page = pageOf(sessions, key, call.cursors.request('sessions', pq));
      return sendJson(200, many(call.cursors.envelope('sessions', page, key, presentSession)));
    },
  }),
  op({
    method: 'GET', path: '/api/v1/sessions/:jti', scope: 'svc:sessions:read', rateClass: 'read', tag: 'sessions', summary: 'Get a session',
    success: { status: 200, schema: dataEnvelope(sessionResponse) },
    handler: async (call) => sendJson(200, one({ data: presentSession(await mustGet(call, call.params.jti)) })),
  }),
  op({
    method: 'DELETE', path: '/api/v1/sessions/:jti', scope: 'svc:sessions:revoke', rateClass: 'delete', tag: 'sessions',
    summary: 'Revoke a session and the grants (refresh tokens) issued through it',
    success: { status: 204 },
    handler: async (call) => {
      const session = await mustGet(call, call.params.jti);
      // Revoked by a concurrent call between the read and here: that call answers 204.
      if (!(await revokeSession(call.ctx, call.tenant, session))) throw notFound(`Session ${call.params.jti} not found`);
      await call.audit({ type: 'session.revoked', user_id: session.account_id, details: auditDetails(session) });
      return noContent();
    },
  }),
  op({
    method: 'DELETE', path: '/api/v1/sessions', scope: 'svc:sessions:revoke', rateClass: 'delete', tag: 'sessions',
    summary: 'Revoke every session of an account and/or client (one filter is required)',
    query: bulkRevokeQuery,
    success: { status: 200, schema: dataEnvelope(revokedCountResponse) },
    errors: [422],
    handler: async (call) => {
      const { username, client_id } = call.query;
      if (username === undefined && client_id === undefined) {
        // Guard against mass revocation by a forgotten filter (spec 4.5).
        throw validation(
          [
            { field: 'username', message: 'username or client_id is required' },
            { field: 'client_id', message: 'username or client_id is required' },
          ],
          'Bulk revocation needs at least one of username and client_id',
        );
      }
      const sessions = await findSessions(call.ctx.storage.oidc, call.tenant, { username, client_id }, sessionTtl(call.actor.config));
      let revoked = 0;
      for (const s of sessions) {
        // A session a concurrent revocation ended first is that call's to count and audit.
        if (!(await revokeSession(call.ctx, call.tenant, s))) continue;
        revoked++;
        // One entry per session, so each account's activity log shows its own revocation.
        await call.audit({ type: 'session.revoked', user_id: s.account_id, details: { ...auditDetails(s), bulk: true, filter: { username, client_id } } });
      }
      return sendJson(200, revokedOut({ data: { revoked_count: revoked } }));
    },
  }),
];
