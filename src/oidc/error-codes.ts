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

type RenderError = (ctx: KoaContextWithOIDC, out: { error: string; error_description?: string }, error: Error) => unknown;

/**
 * oidc-provider 9 answers a device-flow resume (`GET {mount}/device/<uid>`, also `/device/confirm`)
 * that comes without the browser's interaction or session with a bare 500 text/plain: after the
 * resume refuses, its session middleware saves a session that was never stored ("persist can only
 * be called on previously persisted Sessions"), and that TypeError replaces the refusal. This Koa
 * middleware (outermost) turns exactly that error into the refusal it hid: the expired-interaction
 * page, 400, as the authorization endpoint's own resume gives.
 */
export function unsavedSessionRefusal(renderError: RenderError | undefined) {
  return async function refuse(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
    try {
      await next();
    } catch (err) {
      if (!(err instanceof TypeError) || !/previously persisted Sessions/.test(err.message) || !renderError) throw err;
      ctx.status = 400;
      await renderError(ctx, { error: 'invalid_request', error_description: 'interaction session not found' }, err);
    }
  };
}
