/** Request and response schemas of the resources resource (issue 19, CONTRACT.md "API resources"). */
import { z } from 'zod';
import { SIGNING_ALGORITHMS } from '../../config/schema.js';
import { TTL_CEILINGS } from '../../tenancy/config/policy.js';
import { identifierProblem, scopeNameProblem } from '../../resources/names.js';
import { pageQuery } from '../pagination.js';

/** A resource's scope list is small by nature; the bound keeps every token endpoint lookup cheap. */
export const MAX_RESOURCE_SCOPES = 100;

const scopeName = z.string().superRefine((name, ctx) => {
  const problem = scopeNameProblem(name);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const scope = z.strictObject({
  name: scopeName,
  description: z.string().max(500, 'must be at most 500 characters').default(''),
});

const scopes = z
  .array(scope)
  .max(MAX_RESOURCE_SCOPES, `must have at most ${MAX_RESOURCE_SCOPES} items`)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((s, i) => {
      if (seen.has(s.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate scope name '${s.name}'` });
      seen.add(s.name);
    });
  });

const identifier = z.string().superRefine((value, ctx) => {
  const problem = identifierProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

const mutable = {
  name: z.string().trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters'),
  scopes,
  token_format: z.enum(['jwt', 'opaque']),
  access_token_ttl: z
    .number()
    .int('must be an integer')
    .min(60, 'must be at least 60')
    .max(TTL_CEILINGS.access_token, `must be at most ${TTL_CEILINGS.access_token} (the access token ceiling)`),
  signing_alg: z.enum(SIGNING_ALGORITHMS),
  include_roles: z.boolean(),
};

/** Read-only fields a caller may send back unchanged (GET then PATCH); ignored, never stored (another `id` is refused: resources/operations.ts updateResource). */
const readOnly = { id: z.unknown().optional(), created_at: z.unknown().optional(), updated_at: z.unknown().optional() };

export const resourceCreateSchema = z.strictObject({
  identifier,
  name: mutable.name,
  scopes: mutable.scopes.default([]),
  token_format: mutable.token_format.default('jwt'),
  access_token_ttl: mutable.access_token_ttl.optional(),
  signing_alg: mutable.signing_alg.optional(),
  include_roles: mutable.include_roles.default(false),
  ...readOnly,
});

export const resourcePatchSchema = z.strictObject({
  // Accepted only unchanged: tokens and grants name the identifier, so it is fixed at creation.
  identifier: z.string().optional(),
  name: mutable.name.optional(),
  scopes: mutable.scopes.optional(),
  token_format: mutable.token_format.optional(),
  access_token_ttl: mutable.access_token_ttl.optional(),
  signing_alg: mutable.signing_alg.optional(),
  include_roles: mutable.include_roles.optional(),
  ...readOnly,
});

export const resourceListQuery = z.object({ ...pageQuery });

export const resourceResponse = z.object({
  id: z.string(),
  identifier: z.string(),
  name: z.string(),
  scopes: z.array(z.object({ name: z.string(), description: z.string() })),
  token_format: z.enum(['jwt', 'opaque']),
  access_token_ttl: z.number(),
  signing_alg: z.string(),
  include_roles: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
