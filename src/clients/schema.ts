/** The client metadata a caller may send (spec 2.2): one schema for the API, dynamic registration and the CLI. */
import { z } from 'zod';
import { SIGNING_ALGORITHMS } from '../config/schema.js';

export const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials', 'urn:ietf:params:oauth:grant-type:device_code'] as const;
export const AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt'] as const;

const httpUrl = z.url({ protocol: /^https?$/, message: 'must be a valid http(s) URL' }).max(2048);
/** Redirect URIs may use custom schemes (native apps); the per-type rules are checked in rules.ts. */
const redirectUri = z
  .string()
  .max(2048)
  .superRefine((v, ctx) => {
    const problem = redirectUriProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/**
 * A redirect URI is compared as a string with the one a client library sends, which writes it in
 * the URL parser's form: so it must be stored that way (a lower-case scheme, and for http(s) `//`
 * and a lower-case host: `HTTPS://RP.EXAMPLE.COM/cb` and `https:/rp.example.com/cb` would never
 * match, and the latter resolves against the issuer's own origin), and without credentials.
 */
function redirectUriProblem(v: string): string | undefined {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return 'must be a valid absolute URI without a fragment';
  }
  if (u.protocol.length <= 1 || v.includes('#')) return 'must be a valid absolute URI without a fragment';
  if (u.username || u.password) return 'must not carry a user name or password';
  const web = u.protocol === 'http:' || u.protocol === 'https:';
  const head = web ? `${u.protocol}//${u.host}` : u.protocol;
  if (!v.startsWith(head)) return `must be written in normal form: ${web ? 'a lower-case scheme and host, with // after the scheme' : 'a lower-case scheme'} (${head}...)`;
  return undefined;
}
const scopeString = z.string().max(2000).regex(/^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/, 'must be space-separated scope tokens');

/** Every mutable field; all optional here, `client_name` made required for create and PUT. */
const mutableFields = {
  client_name: z.string().trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters'),
  application_type: z.enum(['web', 'native', 'spa']),
  redirect_uris: z.array(redirectUri).max(50),
  post_logout_redirect_uris: z.array(redirectUri).max(50),
  grant_types: z.array(z.enum(GRANT_TYPES)).min(1).max(4),
  response_types: z.array(z.enum(['code'])).max(1),
  scope: scopeString,
  token_endpoint_auth_method: z.enum(AUTH_METHODS),
  client_uri: httpUrl,
  logo_uri: httpUrl,
  policy_uri: httpUrl,
  tos_uri: httpUrl,
  contacts: z.array(z.email('must be a valid e-mail address').max(320)).max(20),
  description: z.string().max(1000, 'must be at most 1000 characters'),
  tags: z.array(z.string().min(1).max(100)).max(50),
  require_pkce: z.boolean(),
  id_token_signed_response_alg: z.enum(SIGNING_ALGORITHMS),
  subject_type: z.enum(['public', 'pairwise']),
  default_max_age: z.number().int('must be an integer').positive('must be a positive integer').max(31536000),
  backchannel_logout_uri: httpUrl,
  first_party: z.boolean(),
  jwks_uri: httpUrl,
  jwks: z.object({ keys: z.array(z.record(z.string(), z.unknown())).min(1).max(20) }),
};

/** Read-only fields a client may send back unchanged (GET then PUT); ignored, never stored (a changed one is refused: operations.ts readOnlyChanges). */
const readOnly = {
  client_id: z.unknown().optional(),
  client_secret: z.unknown().optional(),
  active: z.unknown().optional(),
  created_at: z.unknown().optional(),
  updated_at: z.unknown().optional(),
};

/**
 * Optional fields without a value of their own: a response shows the spec 2.2 ones as null when
 * unset (CONTRACT.md: every field of spec 2.2), and a body may send null for any of them: not set
 * (create, PUT: a GET sent back as it is) or cleared to the default (PATCH).
 */
export const NULLABLE_CLIENT_FIELDS = ['scope', 'client_uri', 'logo_uri', 'policy_uri', 'tos_uri', 'description', 'id_token_signed_response_alg', 'subject_type', 'default_max_age', 'backchannel_logout_uri', 'jwks_uri', 'jwks'] as const;
/** Those of spec 2.2 (jwks_uri and jwks are shown only when set). */
export const SPEC_OPTIONAL_CLIENT_FIELDS = NULLABLE_CLIENT_FIELDS.filter((f) => f !== 'jwks_uri' && f !== 'jwks');
type Nullable = (typeof NULLABLE_CLIENT_FIELDS)[number];
const isNullable = (k: string): k is Nullable => (NULLABLE_CLIENT_FIELDS as readonly string[]).includes(k);

const optionalFields = Object.fromEntries(Object.entries(mutableFields).map(([k, v]) => [k, isNullable(k) ? v.nullable().optional() : v.optional()])) as {
  [K in keyof typeof mutableFields]: K extends Nullable ? z.ZodOptional<z.ZodNullable<(typeof mutableFields)[K]>> : z.ZodOptional<(typeof mutableFields)[K]>;
};

export const clientCreateSchema = z.strictObject({ ...optionalFields, ...readOnly, client_name: mutableFields.client_name });
export const clientPutSchema = clientCreateSchema;
export const clientPatchSchema = z.strictObject({ ...optionalFields, ...readOnly });
export type ClientInput = z.output<typeof clientPatchSchema>;
export const MUTABLE_CLIENT_FIELDS = Object.keys(mutableFields) as Array<keyof typeof mutableFields>;
