/**
 * src/outbound: the one way the service reaches a URL it was given (jwks_uri of private_key_jwt
 * clients, back-channel logout, social-login discovery/token/userinfo, sector identifiers).
 *
 * API:
 * - `outboundPolicy(config)`: the rule in force (production: public unicast only unless
 *   `security.outbound.allow_private_networks`; development/test: loopback too).
 * - `urlProblem(url, policy)`: synchronous check of what needs no DNS (scheme, credentials,
 *   address literals in every spelling, `localhost`); for client creation and registration.
 * - `checkOutboundUrl(url, policy)`: the same plus every resolved address; throws OutboundRefused.
 * - `outboundFetch(url, { method, headers, body, timeoutMs, maxBytes, policy })`: one request to
 *   the checked address (no second lookup), no redirects followed, time and size bounded; resolves
 *   `{ status, headers, body, header(name) }`, throws OutboundRefused or a network/limit Error.
 * - `addressKind(ip)`: public / loopback / private / never for one literal.
 */
export { addressKind, type AddressKind } from './address.js';
export { checkOutboundUrl, checkedAddress, outboundFetch, type OutboundRequest, type OutboundResponse, type Resolve } from './fetch.js';
export { kindAllowed, OutboundRefused, outboundPolicy, urlProblem, type OutboundPolicy } from './policy.js';
