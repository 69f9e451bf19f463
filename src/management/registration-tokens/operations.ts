/**
 * The registration-tokens resource (spec 4.8): initial access tokens for `POST {oidc}/register-rp`.
 * The raw token is shown once, on create; storage keeps only its sha256 hash. Revoked tokens are
 * gone from the API (404, unlisted: CONTRACT.md); expired and used-up ones drop out of the list
 * (spec 4.8 lists active tokens: those register-rp would accept) but can still be read and revoked
 * by jti.
 */
import { randomBytes } from 'node:crypto';
import { notFound } from '../../http/problem.js';
import { assertMayIssueRegistrationPolicies, heldScopes } from '../../clients/escalation.js';
import { hashRandomToken } from '../../clients/secrets.js';
import type { RegistrationTokenRecord } from '../../storage/types.js';
import { op, type Call, type Operation } from '../operation.js';
import { dataEnvelope, listEnvelope, noContent, sendJson, serializer } from '../respond.js';
import { registrationTokenCreateSchema, registrationTokenListQuery, registrationTokenResponse } from './schema.js';

const CURSOR_SCOPE = 'registration-tokens';
const one = serializer(dataEnvelope(registrationTokenResponse));
const many = serializer(listEnvelope(registrationTokenResponse));

/** 256 bits of randomness: unguessable, so the fast sha256 hash is enough at rest. */
export function newRegistrationToken(): string {
  return randomBytes(32).toString('base64url');
}

function present(r: RegistrationTokenRecord, token?: string): Record<string, unknown> {
  return {
    jti: r.jti,
    ...(token ? { token } : {}),
    expires_at: r.expires_at,
    max_usage_count: r.max_usage_count,
    current_usage_count: r.current_usage_count,
    policies: r.policies,
    note: r.note,
    created_at: r.created_at,
  };
}

async function mustGet(call: Call, jti: string): Promise<RegistrationTokenRecord> {
  const record = await call.ctx.storage.registrationTokens.get(call.tenant, jti);
  if (!record || record.revoked_at !== null) throw notFound(`Registration token ${jti} not found`);
  return record;
}

export const registrationTokenOperations: Operation[] = [
  op({
    method: 'GET', path: '/api/v1/registration-tokens', scope: 'svc:registration-tokens:read', rateClass: 'read', tag: 'registration-tokens',
    summary: 'List active (not revoked, not expired, not used up) registration tokens',
    query: registrationTokenListQuery,
    success: { status: 200, schema: listEnvelope(registrationTokenResponse) },
    handler: async (call) => {
      const page = await call.ctx.storage.registrationTokens.list(call.tenant, call.cursors.request(CURSOR_SCOPE, call.query), new Date().toISOString());
      return sendJson(200, many(call.cursors.envelope(CURSOR_SCOPE, page, (r) => [r.created_at, r.jti], (r) => present(r))));
    },
  }),
  op({
    method: 'POST', path: '/api/v1/registration-tokens', scope: 'svc:registration-tokens:write', rateClass: 'write', tag: 'registration-tokens',
    summary: 'Create a registration token (the raw token is returned once)',
    body: registrationTokenCreateSchema,
    success: { status: 201, schema: dataEnvelope(registrationTokenResponse) },
    errors: [422],
    handler: async (call) => {
      // Hole 3: a token must not open more to registrants than its creator holds.
      const held = heldScopes(call.claims.scope);
      assertMayIssueRegistrationPolicies(call.body.policies, held);
      const token = newRegistrationToken();
      const now = new Date();
      const record: RegistrationTokenRecord = {
        jti: randomBytes(16).toString('base64url'),
        token_hash: hashRandomToken(token),
        expires_at: new Date(now.getTime() + call.body.expires_in * 1000).toISOString(),
        max_usage_count: call.body.max_usage_count,
        current_usage_count: 0,
        policies: call.body.policies,
        note: call.body.note ?? null,
        created_at: now.toISOString(),
        revoked_at: null,
        creator_scopes: [...held],
      };
      await call.ctx.storage.registrationTokens.create(call.tenant, record);
      await call.audit({
        type: 'registration_token.created',
        details: { jti: record.jti, expires_at: record.expires_at, max_usage_count: record.max_usage_count, policies: record.policies },
      });
      return sendJson(201, one({ data: present(record, token) }));
    },
  }),
  op({
    method: 'GET', path: '/api/v1/registration-tokens/:jti', scope: 'svc:registration-tokens:read', rateClass: 'read', tag: 'registration-tokens',
    summary: 'Get the metadata of a registration token (never the raw token)',
    success: { status: 200, schema: dataEnvelope(registrationTokenResponse) },
    handler: async (call) => sendJson(200, one({ data: present(await mustGet(call, call.params.jti)) })),
  }),
  op({
    method: 'DELETE', path: '/api/v1/registration-tokens/:jti', scope: 'svc:registration-tokens:delete', rateClass: 'delete', tag: 'registration-tokens',
    summary: 'Revoke a registration token',
    success: { status: 204 },
    handler: async (call) => {
      const jti = call.params.jti;
      // The conditional UPDATE makes a second (or concurrent) revoke a 404, not a second 204.
      if (!(await call.ctx.storage.registrationTokens.revoke(call.tenant, jti, new Date().toISOString()))) {
        throw notFound(`Registration token ${jti} not found`);
      }
      await call.audit({ type: 'registration_token.revoked', details: { jti } });
      return noContent();
    },
  }),
];
