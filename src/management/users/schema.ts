/** Query and response schemas of the users resource (spec 4.4; CONTRACT.md user object); the input schemas are the domain's (src/users/schema.ts). */
import { z } from 'zod';
import { maxChars } from '../../users/schema.js';
import { pageQuery } from '../pagination.js';
import { queryBool } from '../validation.js';

export const userListQuery = z.object({
  ...pageQuery,
  account_enabled: queryBool.optional(),
  role: z.string().max(50, maxChars(50)).optional(),
  auth_provider: z.string().max(50, maxChars(50)).optional(),
  q: z.string().max(200, maxChars(200)).optional(),
});

export const activitiesQuery = z.object(pageQuery);

/** The user as it leaves the service: no password hash, MFA secret or recovery codes, ever. */
export const userResponse = z.object({
  id: z.string(),
  email: z.string().nullable(),
  username: z.string().nullable(),
  given_name: z.string().nullable(),
  family_name: z.string().nullable(),
  name: z.string().nullable(),
  nickname: z.string().nullable(),
  role: z.string(),
  account_enabled: z.boolean(),
  email_verified: z.boolean(),
  locked: z.boolean(),
  auth_provider: z.string(),
  mfa: z.object({ enabled: z.boolean(), methods: z.array(z.string()) }),
  created_at: z.string(),
  updated_at: z.string(),
  last_login_at: z.string().nullable(),
});

export const messageResponse = z.object({ message: z.string() });
