/**
 * Why a client authentication failed, carried from where it failed to the throttle that counts it
 * and has it audited (auth-throttle.ts, client-auth-audit.ts). It fails in one of two places: the
 * actor's direct paths (client-auth.ts), which know the reason and whether the client exists, and
 * oidc-provider (its `invalid_client` error, heard through its error events: request-scope.ts),
 * which gives only its error_detail. Noted per request object, and only on a failure: the success
 * paths pay nothing for it.
 */
import type { HttpRequest } from '../http/types.js';

/** The reasons an audit entry names (docs/audit-events.md `client_auth_failed`). */
export type ClientAuthFailureReason = 'wrong_secret' | 'invalid_assertion' | 'method_mismatch' | 'client_inactive' | 'unknown_client' | 'other';

export interface ClientAuthFailure {
  /** undefined when only oidc-provider's description is known (classified by failureReason). */
  reason?: ClientAuthFailureReason;
  /** The failure's description (a fixed text of this code or of oidc-provider; never what was presented). */
  detail: string;
  /** Whether the client named exists in the tenant; undefined when the place it failed could not tell. */
  exists?: boolean;
}

const failures = new WeakMap<HttpRequest, ClientAuthFailure>();

export function noteClientAuthFailure(req: HttpRequest, failure: ClientAuthFailure): void {
  failures.set(req, failure);
}

export function takeClientAuthFailure(req: HttpRequest): ClientAuthFailure | undefined {
  const failure = failures.get(req);
  if (failure) failures.delete(req);
  return failure;
}

/** oidc-provider's (and client-auth.ts's) words for an unknown or deactivated client. */
export const CLIENT_NOT_FOUND = 'client not found';
const METHOD_MISMATCH = 'the provided authentication mechanism does not match the registered client authentication method';
const WRONG_SECRET = 'invalid secret provided';

/**
 * The reason of a failure known by its description only (oidc-provider's error_detail). Its
 * assertion checks have many descriptions (jose's among them): any other failure of a request that
 * presented a client assertion is an invalid assertion.
 */
export function failureReason(failure: ClientAuthFailure, presentedAssertion: boolean): ClientAuthFailureReason {
  if (failure.reason) return failure.reason;
  switch (failure.detail) {
    case CLIENT_NOT_FOUND:
      return 'unknown_client';
    case METHOD_MISMATCH:
      return 'method_mismatch';
    case WRONG_SECRET:
      return 'wrong_secret';
    default:
      return presentedAssertion ? 'invalid_assertion' : 'other';
  }
}
