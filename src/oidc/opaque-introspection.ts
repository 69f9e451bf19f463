/**
 * The introspection answer for an opaque `ClientCredentials` token, as oidc-provider 9 builds it
 * (lib/actions/introspection.js renderTokenResponse, lib/models/formats/opaque.js verify): the same
 * members in the same order. Returns undefined for anything this shortcut does not reproduce
 * (another kind, a non-opaque format, malformed claims, rich authorization details): the caller
 * hands those to oidc-provider.
 */
import type { AuthenticatedClient } from './client-auth.js';
import { CLOCK_TOLERANCE } from './client-assertion.js';

type Payload = Record<string, unknown>;

/**
 * What oidc-provider checks of every stored opaque artefact before it uses it (formats/opaque.js
 * verify, helpers/jwt.js assertPayload), but the expiry, which each caller decides. False for
 * anything it would refuse; also used by the direct userinfo path (userinfo.ts).
 */
export function opaquePayloadValid(p: Payload, now: number): boolean {
  if ('jwt' in p || 'jwt-ietf' in p || 'paseto' in p || ('format' in p && p.format !== 'opaque')) return false;
  if (p.nbf !== undefined && (typeof p.nbf !== 'number' || p.nbf > now + CLOCK_TOLERANCE)) return false;
  if (p.iat !== undefined && typeof p.iat !== 'number') return false;
  if (p.exp !== undefined && typeof p.exp !== 'number') return false;
  if (p.exp === undefined && typeof p.iat === 'number' && p.iat > now + CLOCK_TOLERANCE) return false;
  if (p.jti !== undefined && typeof p.jti !== 'string') return false;
  if (p.iss !== undefined && typeof p.iss !== 'string') return false;
  if (p.aud !== undefined && typeof p.aud !== 'string' && (!Array.isArray(p.aud) || p.aud.some((a) => typeof a !== 'string'))) return false;
  return true;
}

function opaqueClaimsValid(p: Payload, now: number): boolean {
  return opaquePayloadValid(p, now) && typeof p.clientId === 'string';
}

export function opaqueIntrospection(p: Payload, caller: AuthenticatedClient, issuer: string, now = Math.floor(Date.now() / 1000)): Payload | undefined {
  if (p.kind !== 'ClientCredentials' || p.rar !== undefined || !opaqueClaimsValid(p, now)) return undefined;
  // Expired (oidc-provider's isValid is exp > now; past the tolerance it does not even find it).
  if (typeof p.exp !== 'number' || p.exp <= now) return { active: false };
  // The default allowedPolicy: a public client only learns about its own tokens.
  if (caller.method === 'none' && p.clientId !== caller.record.client_id) return { active: false };

  const jkt = typeof p.jkt === 'string' ? p.jkt : undefined;
  const x5t = typeof p['x5t#S256'] === 'string' ? p['x5t#S256'] : undefined;
  let cnf: Payload | undefined;
  if (jkt || x5t) {
    cnf = {};
    if (x5t) cnf['x5t#S256'] = x5t;
    if (jkt) cnf.jkt = jkt;
  }
  const extra = p.extra && typeof p.extra === 'object' && !Array.isArray(p.extra) ? (p.extra as Payload) : {};
  const body: Payload = { active: false };
  Object.assign(body, {
    ...extra,
    active: true,
    client_id: p.clientId,
    exp: p.exp,
    iat: p.iat,
    iss: issuer,
    aud: p.aud,
    scope: typeof p.scope === 'string' && p.scope ? p.scope : undefined,
    cnf,
    token_type: jkt ? 'DPoP' : 'Bearer',
  });
  return body;
}
