/** Query and response schemas of the clients resource (spec 4.3); the input schemas are the domain's (src/clients/schema.ts). */
import { z } from 'zod';
import { pageQuery } from '../pagination.js';
import { queryBool } from '../validation.js';

export const clientListQuery = z.object({
  ...pageQuery,
  application_type: z.enum(['web', 'native', 'spa']).optional(),
  active: queryBool.optional(),
  q: z.string().max(200, 'must be at most 200 characters').optional(),
});

export const clientResponse = z.object({
  client_id: z.string(),
  client_secret: z.string().optional(),
  client_name: z.string(),
  application_type: z.string(),
  redirect_uris: z.array(z.string()),
  post_logout_redirect_uris: z.array(z.string()),
  grant_types: z.array(z.string()),
  response_types: z.array(z.string()),
  scope: z.string().nullable(),
  token_endpoint_auth_method: z.string(),
  client_uri: z.string().nullable(),
  logo_uri: z.string().nullable(),
  policy_uri: z.string().nullable(),
  tos_uri: z.string().nullable(),
  contacts: z.array(z.string()),
  description: z.string().nullable(),
  tags: z.array(z.string()),
  require_pkce: z.boolean(),
  id_token_signed_response_alg: z.string().nullable(),
  subject_type: z.string().nullable(),
  default_max_age: z.number().nullable(),
  backchannel_logout_uri: z.string().nullable(),
  first_party: z.boolean(),
  jwks_uri: z.string().optional(),
  // The registered public keys (a GET sent back as a PUT keeps them).
  jwks: z.object({ keys: z.array(z.record(z.string(), z.unknown())) }).optional(),
  active: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const clientStatsResponse = z.object({
  client_id: z.string(),
  tokens_issued: z.number(),
  active_sessions: z.number(),
  active_grants: z.number(),
  last_used_at: z.string().nullable(),
});
