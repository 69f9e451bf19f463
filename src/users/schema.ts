/** The user fields a caller may send (spec 2.3): one schema for the API and the coming account pages and console. */
import { z } from 'zod';

export const ROLES = ['user', 'admin', 'superadmin', 'platform_admin'] as const;
/** Roles that only exist in the `_platforms` tenant (CONTRACT.md). */
export const PLATFORM_ROLES = new Set<string>(['superadmin', 'platform_admin']);

export const maxChars = (n: number) => `must be at most ${n} characters`;
export const password = z.string().min(8, 'must be at least 8 characters').max(128, maxChars(128));

/** Longest value of each profile text field (spec 2.3/8, after trimming); the account and sign-up pages check the same. */
export const PROFILE_MAX = { username: 100, given_name: 100, family_name: 100, name: 200, nickname: 100 } as const;
export type ProfileField = keyof typeof PROFILE_MAX;

/** Whether `value` is over its field's limit, counted as the API's schema counts: characters (code points), not UTF-16 units. */
export const overProfileLimit = (field: ProfileField, value: string): boolean => [...value].length > PROFILE_MAX[field];

const profileText = (field: ProfileField) => z.string().trim().max(PROFILE_MAX[field], maxChars(PROFILE_MAX[field]));

/**
 * The one rule for an account's e-mail address, on every surface that sets one (Management API,
 * sign-up, the account page's change): an address one surface takes is never one another refuses.
 * zod's pattern is ASCII only, which also keeps addresses that SQLite's ASCII-only lower() would
 * not fold (ZOË@ beside zoë@) out of the unique index's way.
 */
export const emailSchema = z.email('must be a valid e-mail address').max(254, maxChars(254));
export const validEmail = (value: string): boolean => emailSchema.safeParse(value).success;

/** Every mutable field (spec 2.3 minus password). Optional text fields take null to clear them. */
const mutableFields = {
  email: emailSchema,
  username: profileText('username').min(1, 'must not be empty').nullable(),
  given_name: profileText('given_name').nullable(),
  family_name: profileText('family_name').nullable(),
  name: profileText('name').nullable(),
  nickname: profileText('nickname').nullable(),
  role: z.enum(ROLES, { message: `must be one of ${ROLES.join(', ')}` }),
  account_enabled: z.boolean(),
  email_verified: z.boolean(),
};
export const MUTABLE_USER_FIELDS = Object.keys(mutableFields) as Array<keyof typeof mutableFields>;

/** Read-only fields a caller may send back unchanged (GET then PUT): accepted, ignored, never stored (a changed one is refused: operations.ts readOnlyChanges). */
const readOnly = {
  id: z.unknown().optional(),
  locked: z.unknown().optional(),
  auth_provider: z.unknown().optional(),
  mfa: z.unknown().optional(),
  created_at: z.unknown().optional(),
  updated_at: z.unknown().optional(),
  last_login_at: z.unknown().optional(),
};

const optionalFields = Object.fromEntries(Object.entries(mutableFields).map(([k, v]) => [k, v.optional()])) as {
  [K in keyof typeof mutableFields]: z.ZodOptional<(typeof mutableFields)[K]>;
};

// Strict objects: `password` (or anything else unknown) on PUT/PATCH is a 422 "Unknown field".
export const userCreateSchema = z.strictObject({ ...optionalFields, ...readOnly, email: mutableFields.email, password });
export const userUpdateSchema = z.strictObject({ ...optionalFields, ...readOnly });
export type UserUpdateInput = z.output<typeof userUpdateSchema>;

export const passwordResetSchema = z.strictObject({ new_password: password });
export type UserCreateInput = z.output<typeof userCreateSchema>;
