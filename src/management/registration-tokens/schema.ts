/** Request and response schemas of the registration-tokens resource (spec 2.7, 4.8, 8). */
import { z } from 'zod';
import { DEFAULT_POLICIES, REGISTRATION_POLICIES, isRegistrationPolicy } from '../../oidc/registration-policies.js';
import { pageQuery } from '../pagination.js';

const policyName = z
  .string()
  .min(1, 'must not be empty')
  .max(128, 'must be at most 128 characters')
  .refine(isRegistrationPolicy, `unknown policy; known policies: ${REGISTRATION_POLICIES.join(', ')}`);

export const registrationTokenCreateSchema = z.strictObject({
  expires_in: z.number().int('must be an integer').min(300, 'must be at least 300').max(2_592_000, 'must be at most 2592000'),
  max_usage_count: z.number().int('must be an integer').min(1, 'must be at least 1').max(1000, 'must be at most 1000'),
  policies: z
    .array(policyName)
    .min(1, 'must have at least 1 item')
    .max(10, 'must have at most 10 items')
    // Duplicates carry no meaning: store each policy once.
    .transform((list) => [...new Set(list)])
    .default([...DEFAULT_POLICIES]),
  note: z.string().max(500, 'must be at most 500 characters').optional(),
});
export type RegistrationTokenCreate = z.output<typeof registrationTokenCreateSchema>;

export const registrationTokenListQuery = z.object({ ...pageQuery });

export const registrationTokenResponse = z.object({
  jti: z.string(),
  token: z.string().optional(),
  expires_at: z.string(),
  max_usage_count: z.number(),
  current_usage_count: z.number(),
  policies: z.array(z.string()),
  note: z.string().nullable(),
  created_at: z.string(),
});
