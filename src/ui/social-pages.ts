/**
 * Social login on the end-user pages: the "Continue with <name>" links of the sign-in page, the
 * page that asks an existing user's password before an upstream account is linked, and the page
 * that ends a failed upstream sign-in (with a way back to the sign-in page when it is still open).
 */
import { Html, html, layout } from './html.js';

export interface SocialButton {
  /** The provider's display name (configuration: escaped like any text). */
  name: string;
  href: string;
}

/** The block under the password form; empty without enabled providers. */
export function socialButtons(buttons: readonly SocialButton[] | undefined): Html {
  if (!buttons?.length) return html``;
  return html`<div class="social" role="group" aria-label="Other ways to sign in">
<p class="divider">or</p>
<ul class="social-list">${buttons.map((b) => html`<li><a class="button social-button" href="${b.href}">Continue with ${b.name}</a></li>`)}</ul>
</div>`;
}

export function socialLinkPage(o: { stylesheet: string; action: string; cancelAction: string; csrf: string; provider: string; email: string; error?: string }): string {
  return layout(
    { title: `Link your ${o.provider} account`, stylesheet: o.stylesheet },
    html`<h1>Link your ${o.provider} account</h1>
<p>An account with the e-mail <strong>${o.email}</strong> already exists. Enter its password to link your ${o.provider} account to it. Next time, Continue with ${o.provider} signs you in directly.</p>
${o.error ? html`<p class="error" role="alert" id="form-error">${o.error}</p>` : html``}
<form method="post" action="${o.action}" novalidate>
<input type="hidden" name="csrf_token" value="${o.csrf}">
<input type="hidden" name="username" autocomplete="username" value="${o.email}">
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required${o.error ? html` aria-describedby="form-error"` : html``} autofocus>
<div class="actions">
<button type="submit" formaction="${o.cancelAction}" name="decision" value="cancel">Cancel</button>
<button type="submit" class="primary">Link and sign in</button>
</div>
</form>`,
  );
}

export function socialErrorPage(o: { stylesheet: string; title: string; message: string; back?: string }): string {
  return layout(
    { title: o.title, stylesheet: o.stylesheet },
    html`<h1>${o.title}</h1>
<p class="error" role="alert">${o.message}</p>
${o.back ? html`<p><a href="${o.back}">Back to sign-in</a></p>` : html``}`,
  );
}

/** Stylesheet rules for the links above (appended to the one stylesheet). */
export const SOCIAL_STYLES = `
.social .divider{text-align:center;margin:20px 0 12px}
.social-list{list-style:none;padding:0;margin:0;display:flex;flex-direction:column;gap:8px}
a.button{display:block;text-align:center;padding:10px 16px;font-weight:600;border-radius:8px;border:1px solid var(--border);color:inherit;text-decoration:none}
a.button:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
`;
