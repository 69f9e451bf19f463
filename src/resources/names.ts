/**
 * The rules of API resource names (issue 19): what an identifier and a scope name may be. The
 * Management API, the client scope check and the token endpoint all ask here.
 */
import { MANAGEMENT_RESOURCE } from './management-api.js';

/**
 * OIDC scopes the provider itself defines. A resource may not define them (a token's scope would
 * mean two things) and a client may always name them.
 */
export const STANDARD_SCOPES: ReadonlySet<string> = new Set(['openid', 'profile', 'email', 'offline_access', 'roles']);

/** RFC 6749 3.3 scope-token: visible ASCII except space, `"` and `\`; bounded. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/;

/** Why a resource may not define this scope name, or undefined when it may. */
export function scopeNameProblem(name: string): string | undefined {
  if (!SCOPE_TOKEN.test(name)) return 'must be 1-128 visible ASCII characters without spaces, quotes or backslashes';
  if (STANDARD_SCOPES.has(name)) return `'${name}' is a standard OpenID Connect scope of the provider`;
  if (name.startsWith('svc:')) return "names starting with 'svc:' belong to the Management API";
  return undefined;
}

/** Why this identifier may not name a resource, or undefined when it may. */
export function identifierProblem(identifier: string): string | undefined {
  if (identifier.length > 2048) return 'must be at most 2048 characters';
  // Control characters and spaces never belong in a URI; WHATWG URL parsing would strip some silently.
  if (/[\x00-\x20\x7F]/.test(identifier)) return 'must not contain spaces or control characters';
  let url: URL;
  try {
    url = new URL(identifier);
  } catch {
    return 'must be an absolute URI';
  }
  if (identifier.includes('#')) return 'must not contain a fragment (RFC 8707)';
  if (url.protocol === 'urn:' || identifier.toLowerCase().startsWith('urn:svc:')) {
    if (identifier.toLowerCase() === MANAGEMENT_RESOURCE) return `${MANAGEMENT_RESOURCE} is the Management API`;
    if (identifier.toLowerCase().startsWith('urn:svc:')) return "urn:svc: identifiers are reserved for the service";
  }
  return undefined;
}
