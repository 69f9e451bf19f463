/**
 * POST {oidc}/register-rp: dynamic client registration (RFC 7591) authorised by a registration
 * token (spec 4.8, 5 rule 5). The created client is an ordinary client: the Management API shows
 * it and the token endpoint serves it.
 *
 * Order: token check (401) -> body and metadata validation (400, the counter is untouched) ->
 * consumeUse, the atomic conditional UPDATE that decides races (401 for the losers) -> create the
 * client, giving the use back if that fails. Validating before counting means an invalid request
 * never holds one of the token's uses, not even for a moment.
 */
import type { AppContext } from '../context.js';
import { OAuthError, toProblem } from '../http/problem.js';
import { bearerToken } from '../http/bearer.js';
import { UNSTORABLE_MESSAGE, readJsonBody } from '../http/json-body.js';
import type { HttpRequest, HttpResponse } from '../http/types.js';
import { createClient, presentClient } from '../clients/operations.js';
import { checkClientScopes } from '../clients/scope-names.js';
import { hashRandomToken } from '../clients/secrets.js';
import type { RegistrationTokenRecord } from '../storage/types.js';
import { REGISTRATION_FIELDS, registrationError, registrationMetadata } from './registration-metadata.js';

export interface RegisterDeps {
  ctx: AppContext;
  tenant: string;
}

const invalidToken = (description: string) =>
  new OAuthError(401, 'invalid_token', description, { 'www-authenticate': 'Bearer error="invalid_token"' });

/** Why a token cannot register a client now; undefined when it can. */
function unusable(record: RegistrationTokenRecord | undefined, nowIso: string): string | undefined {
  if (!record) return 'the registration token is not valid';
  if (record.revoked_at !== null) return 'the registration token has been revoked';
  if (record.expires_at <= nowIso) return 'the registration token has expired';
  if (record.current_usage_count >= record.max_usage_count) return 'the registration token has reached its max_usage_count';
  return undefined;
}

async function authenticate(deps: RegisterDeps, req: HttpRequest): Promise<RegistrationTokenRecord> {
  const presented = bearerToken(req);
  if (!presented) throw invalidToken('a Bearer registration token is required');
  const record = await deps.ctx.storage.registrationTokens.findByHash(deps.tenant, hashRandomToken(presented));
  const reason = unusable(record, new Date().toISOString());
  if (reason) throw invalidToken(reason);
  return record!;
}

/**
 * A member name as error_description may carry it: printable ASCII without quote and backslash
 * (RFC 6749 section 5.2); any other character shows as '?'. Names come from the caller's body.
 */
const describable = (text: string) => text.replace(/[^\x20\x21\x23-\x5B\x5D-\x7E]/g, '?');

function readBody(req: HttpRequest): Record<string, unknown> {
  const body = readJsonBody(req);
  if (body.ok) return body.value;
  switch (body.reason) {
    case 'media-type':
      throw new OAuthError(415, 'invalid_client_metadata', 'the request body must be sent as Content-Type: application/json');
    case 'too-deep':
      throw new OAuthError(400, 'invalid_client_metadata', `the request body is ${body.detail}`);
    case 'syntax':
      throw new OAuthError(400, 'invalid_client_metadata', 'the request body is not valid JSON');
    case 'duplicate-member':
      throw new OAuthError(400, 'invalid_client_metadata', `the request body gives the member ${describable(body.member)} more than once`);
    case 'not-object':
      throw new OAuthError(400, 'invalid_client_metadata', 'the request body must be a JSON object');
    case 'unstorable':
      throw new OAuthError(400, 'invalid_client_metadata', `${describable(body.members.join(', '))}: ${UNSTORABLE_MESSAGE}`);
  }
}

/** RFC 7591 section 3.2.1 response: client_id, secret (confidential only), and the registered metadata. */
function registrationResponse(client: Record<string, unknown>, createdAt: string): Record<string, unknown> {
  const out: Record<string, unknown> = { client_id: client.client_id };
  if (typeof client.client_secret === 'string') {
    out.client_secret = client.client_secret;
    out.client_secret_expires_at = 0; // secrets do not expire; they change only through the Management API
  }
  out.client_id_issued_at = Math.floor(Date.parse(createdAt) / 1000);
  for (const key of REGISTRATION_FIELDS) {
    if (client[key] !== undefined && client[key] !== null) out[key] = client[key];
  }
  // Every client with a back-channel URI gets `sid` in its ID tokens and logout tokens (client-metadata.ts):
  // RFC 7591 3.2.1, the registered value is returned even where it replaced the one sent.
  if (typeof client.backchannel_logout_uri === 'string') out.backchannel_logout_session_required = true;
  return out;
}

export async function registerRp(deps: RegisterDeps, req: HttpRequest): Promise<HttpResponse> {
  const { ctx, tenant } = deps;
  const tokens = ctx.storage.registrationTokens;
  const token = await authenticate(deps, req);
  const metadata = registrationMetadata(readBody(req), token.policies, ctx.config, token.creator_scopes);
  try {
    await checkClientScopes(deps, metadata.scope);
  } catch (err) {
    // The domain's Invalid, as the Management API would show it (field errors capped), as RFC 7591's error.
    const problem = toProblem(err);
    if (problem?.status === 422) throw registrationError(problem.extra.errors ?? []);
    throw err;
  }

  if (!(await tokens.consumeUse(tenant, token.jti, new Date().toISOString()))) {
    // Lost a race (another registration took the last use) or revoked/expired meanwhile.
    throw invalidToken(unusable(await tokens.get(tenant, token.jti), new Date().toISOString()) ?? 'the registration token is no longer usable');
  }
  let created: Awaited<ReturnType<typeof createClient>>;
  try {
    // The domain's rule too (issue 12): never more svc:* scopes than the token's creator held.
    const held = new Set(token.creator_scopes ?? []);
    created = await createClient({ ...deps, by: { ip_address: req.ip, user_agent: req.headers['user-agent'] ?? null }, held }, metadata, {
      // The new client is the actor of its own registration.
      audit: (r) => ({ type: 'client.registered', client_id: r.client_id, details: { client_id: r.client_id, client_name: metadata.client_name, registration_token: token.jti } }),
    });
  } catch (err) {
    await tokens.releaseUse(tenant, token.jti);
    throw err;
  }
  const { record, secret } = created;
  return {
    status: 201,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', pragma: 'no-cache' },
    body: JSON.stringify(registrationResponse(presentClient(record, secret), record.created_at)),
  };
}
