/** The signing keys resource (spec 4.6, 2.5). Lifecycle rules live in src/keys/rotation.ts. */
import { z } from 'zod';
import { conflict, notFound } from '../../http/problem.js';
import { markForRetirement, retireExpired, rotate } from '../../keys/rotation.js';
import type { SigningKeyRecord } from '../../storage/types.js';
import { op, type Call, type Operation } from '../operation.js';
import { dataEnvelope, sendJson, serializer } from '../respond.js';

const KEY_STATUSES = ['active', 'expiring', 'retired'] as const;

/** Only public members: whatever the stored JWK holds, `d`, `p`, `q`... cannot be serialised. */
const publicJwk = z.object({
  kty: z.string(),
  kid: z.string().optional(),
  alg: z.string().optional(),
  use: z.string().optional(),
  crv: z.string().optional(),
  n: z.string().optional(),
  e: z.string().optional(),
  x: z.string().optional(),
  y: z.string().optional(),
});

export const keyResponse = z.object({
  kid: z.string(),
  alg: z.string(),
  use: z.string(),
  status: z.enum(KEY_STATUSES),
  promoted: z.boolean(),
  publicKey: publicJwk,
  createdAt: z.string(),
  /** null until the key is rotated out. */
  rotatedAt: z.string().nullable(),
});

const one = serializer(dataEnvelope(keyResponse));
const many = serializer(dataEnvelope(z.array(keyResponse)));
const rotateResponse = z.object({ message: z.string(), promoted: z.number() });
const retireResponse = z.object({ message: z.string(), retired: z.number() });
const markResponse = z.object({ message: z.string(), kid: z.string(), current_status: z.enum(KEY_STATUSES) });
const rotateOut = serializer(dataEnvelope(rotateResponse));
const retireOut = serializer(dataEnvelope(retireResponse));
const markOut = serializer(dataEnvelope(markResponse));

export function presentKey(k: SigningKeyRecord) {
  return { kid: k.kid, alg: k.alg, use: k.use, status: k.status, promoted: k.promoted, publicKey: k.public_jwk, createdAt: k.created_at, rotatedAt: k.rotated_at };
}

/** The caller sees its own change at once; other instances follow the jwks:rotated event. */
const refreshLocal = (call: Call) => call.actor.reload();

export const jwksOperations: Operation[] = [
  op({
    method: 'GET', path: '/api/v1/jwks', scope: 'svc:jwks:read', rateClass: 'read', tag: 'jwks', summary: 'List signing keys (newest first)',
    query: z.object({ status: z.enum(KEY_STATUSES).optional() }),
    success: { status: 200, schema: dataEnvelope(z.array(keyResponse)) },
    handler: async (call) => {
      const keys = await call.ctx.storage.keys.list(call.tenant);
      const wanted = call.query.status;
      return sendJson(200, many({ data: keys.filter((k) => !wanted || k.status === wanted).map(presentKey) }));
    },
  }),
  op({
    method: 'GET', path: '/api/v1/jwks/:kid', scope: 'svc:jwks:read', rateClass: 'read', tag: 'jwks', summary: 'Get a signing key',
    success: { status: 200, schema: dataEnvelope(keyResponse) },
    errors: [404],
    handler: async (call) => {
      const kid = call.params.kid;
      const key = (await call.ctx.storage.keys.list(call.tenant)).find((k) => k.kid === kid);
      if (!key) throw notFound(`Signing key ${kid} not found`);
      return sendJson(200, one({ data: presentKey(key) }));
    },
  }),
  op({
    method: 'POST', path: '/api/v1/jwks/rotate', scope: 'svc:jwks:rotate', rateClass: 'sensitive', tag: 'jwks', summary: 'Rotate: promote a new key per algorithm; the old ones expire after the overlap window',
    success: { status: 200, schema: dataEnvelope(rotateResponse) },
    handler: async (call) => {
      const result = await rotate(call.ctx, call.tenant);
      await refreshLocal(call);
      await call.audit({ type: 'jwks.rotated', details: { trigger: 'api', ...result } });
      const message = `Signing keys rotated: ${result.promoted} new key(s) promoted, ${result.expiring.length} key(s) expiring`;
      return sendJson(200, rotateOut({ data: { message, promoted: result.promoted } }));
    },
  }),
  op({
    method: 'POST', path: '/api/v1/jwks/retire-expired', scope: 'svc:jwks:rotate', rateClass: 'sensitive', tag: 'jwks', summary: 'Retire keys past their overlap window and keys marked for retirement',
    success: { status: 200, schema: dataEnvelope(retireResponse) },
    handler: async (call) => {
      const result = await retireExpired(call.ctx, call.tenant);
      if (result.retired || result.promoted.length) await refreshLocal(call);
      await call.audit({ type: 'jwks.retired', details: { trigger: 'api', ...result } });
      return sendJson(200, retireOut({ data: { message: `${result.retired} signing key(s) retired`, retired: result.retired } }));
    },
  }),
  op({
    method: 'DELETE', path: '/api/v1/jwks/:kid', scope: 'svc:jwks:rotate', rateClass: 'sensitive', tag: 'jwks', summary: 'Mark a key for retirement (retired at the next rotation or retire-expired)',
    success: { status: 202, schema: dataEnvelope(markResponse) },
    errors: [404, 409],
    handler: async (call) => {
      const kid = call.params.kid;
      const result = await markForRetirement(call.ctx, call.tenant, kid);
      if (result.outcome === 'not_found') throw notFound(`Signing key ${kid} not found`);
      if (result.outcome === 'already_retired') throw conflict(`Signing key ${kid} is already retired`);
      await call.audit({ type: 'jwks.retire_requested', details: { kid, current_status: result.current_status } });
      const message = 'Key marked for retirement; it is retired at the next rotation or retire-expired';
      return sendJson(202, markOut({ data: { message, kid, current_status: result.current_status } }));
    },
  }),
];
