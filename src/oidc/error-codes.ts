/**
 * oidc-provider answers some refusals with a less precise OAuth error code than the RFCs name;
 * this Koa middleware corrects them on the way out, so every path of the product (its own fast
 * paths and oidc-provider's) answers alike:
 * - a grant type the client is not registered for: RFC 6749 section 5.2 says `unauthorized_client`
 *   (oidc-provider: `invalid_request` "requested grant type is not allowed for this client");
 * - the same at the device authorization endpoint (RFC 8628 section 3.2 reuses RFC 6749's codes).
 */
import type { KoaContextWithOIDC } from 'oidc-provider';

const UNAUTHORIZED_CLIENT_DESCRIPTIONS = [/^requested grant type is not allowed for this client$/, /^urn:ietf:params:oauth:grant-type:device_code is not allowed for this client$/];

interface OAuthErrorBody {
  error?: unknown;
  error_description?: unknown;
}

export async function preciseErrorCodes(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
  await next();
  const body = ctx.body as OAuthErrorBody | undefined;
  if (!body || typeof body !== 'object' || body.error !== 'invalid_request' || typeof body.error_description !== 'string') return;
  const description = body.error_description;
  if (UNAUTHORIZED_CLIENT_DESCRIPTIONS.some((re) => re.test(description))) body.error = 'unauthorized_client';
}
