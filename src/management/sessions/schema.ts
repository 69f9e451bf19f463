/** Request and response schemas of the sessions resource (spec 2.4, 4.5; CONTRACT.md session object). */
import { z } from 'zod';
import { pageQuery } from '../pagination.js';
import { queryBool } from '../validation.js';

const accountFilter = z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters');
const clientFilter = z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters');

export const sessionListQuery = z.object({
  ...pageQuery,
  /** The account id (the user's `id`, the `sub` of its tokens); named `username` by the spec. */
  username: accountFilter.optional(),
  client_id: clientFilter.optional(),
  active: queryBool.optional(),
});

export const bulkRevokeQuery = z.object({
  username: accountFilter.optional(),
  client_id: clientFilter.optional(),
});

export const sessionResponse = z.object({
  jti: z.string(),
  account_id: z.string().nullable(),
  client_ids: z.array(z.string()),
  created_at: z.string(),
  expires_at: z.string().nullable(),
  last_active_at: z.string(),
  active: z.boolean(),
});

export const revokedCountResponse = z.object({ revoked_count: z.number() });
