/**
 * RFC 7591 client metadata -> the Management API's client metadata, validated by the same schema
 * and cross-field rules as `POST /api/v1/clients` (clients/schema.ts, clients/rules.ts), then by the
 * registration token's policies. Every failure is an RFC 7591 section 3.2.2 error (400).
 */
import type { Config } from '../config/index.js';
import { OAuthError, toProblem, type FieldError } from '../http/problem.js';
import { buildMetadata } from '../clients/rules.js';
import { clientPatchSchema } from '../clients/schema.js';
import { zodFieldErrors } from '../http/zod-errors.js';
import type { ClientMetadata } from '../storage/types.js';
import { STANDARD_OIDC_SCOPES, policyViolations } from './registration-policies.js';

/** The metadata a registration may send (and gets back). Anything else is ignored (RFC 7591 section 2). */
export const REGISTRATION_FIELDS = [
  'redirect_uris', 'token_endpoint_auth_method', 'grant_types', 'response_types', 'client_name', 'client_uri', 'logo_uri',
  'scope', 'contacts', 'tos_uri', 'policy_uri', 'jwks_uri', 'jwks', 'application_type', 'post_logout_redirect_uris',
  'backchannel_logout_uri', 'id_token_signed_response_alg', 'subject_type', 'default_max_age',
] as const;

/** RFC 7591 makes client_name optional; the Management API needs one. */
export const DEFAULT_CLIENT_NAME = 'Dynamically registered client';
/** Tag that lets administrators find registered clients (`GET /api/v1/clients?q=` does not search tags, the object shows them). */
export const REGISTERED_TAG = 'dynamic-registration';

export function registrationError(errors: FieldError[]): OAuthError {
  const first = errors[0] ?? { field: 'body', message: 'invalid client metadata' };
  const code = /^redirect_uris(\.|$)/.test(first.field) ? 'invalid_redirect_uri' : 'invalid_client_metadata';
  return new OAuthError(400, code, errors.map((e) => `${e.field}: ${e.message}`).join('; '));
}

/** `creatorScopes`: the `svc:*` scopes the registration token's creator held (null: none). */
export function registrationMetadata(body: Record<string, unknown>, policies: readonly string[], config: Config, creatorScopes: readonly string[] | null = null): ClientMetadata {
  // first_party is not RFC 7591 metadata, but silently ignoring an attempt to skip consent would hide it.
  if (body.first_party !== undefined) throw registrationError([{ field: 'first_party', message: 'cannot be set by dynamic registration' }]);

  const input: Record<string, unknown> = {};
  for (const key of REGISTRATION_FIELDS) {
    // JSON null means "not given" (RFC 7591 leaves it open; rejecting it would break lenient clients).
    if (body[key] !== undefined && body[key] !== null) input[key] = body[key];
  }
  if (input.application_type !== undefined && input.application_type !== 'web' && input.application_type !== 'native') {
    throw registrationError([{ field: 'application_type', message: "must be 'web' or 'native'" }]);
  }
  input.client_name ??= DEFAULT_CLIENT_NAME;
  // An explicit default keeps the stored client from inheriting every scope the provider knows.
  // offline_access only with the refresh_token grant: without it the scope could never act (no
  // refresh token is issued), and RFC 7591's default grant_types is authorization_code alone.
  const refreshes = Array.isArray(input.grant_types) && input.grant_types.includes('refresh_token');
  input.scope ??= STANDARD_OIDC_SCOPES.filter((s) => s !== 'offline_access' || refreshes).join(' ');

  const parsed = clientPatchSchema.safeParse(input);
  if (!parsed.success) throw registrationError(zodFieldErrors(parsed.error, 'body', input));

  let m: ClientMetadata;
  try {
    m = buildMetadata(parsed.data, undefined, config);
  } catch (err) {
    const problem = toProblem(err);
    if (problem?.status === 422) throw registrationError(problem.extra.errors ?? [{ field: 'body', message: problem.detail }]);
    throw err;
  }
  m.tags = [REGISTERED_TAG];
  // RFC 7591 section 2: redirect-based grants need registered redirect URIs.
  if (m.grant_types.includes('authorization_code') && m.redirect_uris.length === 0) {
    throw registrationError([{ field: 'redirect_uris', message: 'at least one redirect URI is required for the authorization_code grant' }]);
  }
  const violations = policyViolations(m, policies, creatorScopes);
  if (violations.length) throw registrationError(violations);
  return m;
}
