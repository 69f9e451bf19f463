/** The one stylesheet of the end-user pages, served from the tenant's OIDC path (same origin, CSP style-src 'self'). */
import { etagOf } from '../http/etag.js';
import { SOCIAL_STYLES } from './social-pages.js';

export const STYLESHEET = `
:root{color-scheme:light dark;--fg:#1d2433;--muted:#5b6475;--bg:#f4f6fa;--card:#fff;--accent:#2456d3;--accent-fg:#fff;--danger:#b3261e;--border:#d5dae3;--field-border:#858e9e}
@media (prefers-color-scheme:dark){:root{--fg:#e6e9ef;--muted:#a3abba;--bg:#11151c;--card:#1b212b;--accent:#7aa2ff;--accent-fg:#0b1020;--danger:#ff8a80;--border:#343c4a;--field-border:#737c8d}}
*{box-sizing:border-box}
.client-logo{margin:0 0 12px}.client-logo img{max-height:48px;max-width:160px}
body{margin:0;min-height:100vh;display:flex;flex-direction:column;align-items:center;justify-content:center;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
.card{width:100%;max-width:400px;margin:24px;padding:32px;background:var(--card);border:1px solid var(--border);border-radius:12px;overflow-wrap:anywhere}
h1{font-size:1.5rem;margin:0 0 8px}
p{margin:0 0 16px;color:var(--muted)}
label{display:block;font-weight:600;margin:16px 0 6px}
input[type=email],input[type=password],input[type=text]{width:100%;padding:10px 12px;font:inherit;color:inherit;background:transparent;border:1px solid var(--field-border);border-radius:8px}
input:focus-visible,button:focus-visible,a:focus-visible{outline:3px solid var(--link,var(--accent));outline-offset:2px}
.actions{display:flex;gap:12px;margin-top:24px}
form+p{margin-top:16px}
button{flex:1;padding:10px 16px;font:inherit;font-weight:600;border-radius:8px;border:1px solid var(--field-border);background:transparent;color:inherit;cursor:pointer}
button.primary{background:var(--accent);border-color:var(--accent);color:var(--accent-fg)}
.error{color:var(--danger);font-weight:600}
ul.scopes{padding-left:20px;margin:0 0 16px}
ul.client-links{list-style:none;padding:0;margin:0 0 16px;font-size:.875rem}
ul.client-links li{margin:2px 0}
code.user-code{display:block;font-size:1.6rem;letter-spacing:.15em;text-align:center;margin:16px 0}
code.secret{display:block;font-size:1.2rem;letter-spacing:.08em;word-break:break-all;margin:0 0 16px}
code.uri{display:block;font-size:.8rem;word-break:break-all;margin:0 0 16px}
ul.codes{columns:2;padding-left:20px;margin:0 0 16px;font-family:ui-monospace,monospace}
nav.languages{margin:16px 24px;text-align:center}
nav.languages ul{list-style:none;margin:0;padding:0;display:flex;gap:16px;justify-content:center;flex-wrap:wrap}
nav.languages a{color:var(--page-fg,var(--fg))}
nav.languages a[aria-current]{font-weight:700;text-decoration:none}
p.hint{font-size:.875rem;margin:6px 0 0}
p.aside{margin:8px 0 0;font-size:.9375rem}
a{color:var(--link,var(--accent))}
footer.legal{margin:16px 24px 0;text-align:center;font-size:.9rem}
footer.legal ul{list-style:none;margin:0;padding:0;display:flex;gap:16px;justify-content:center;flex-wrap:wrap}
footer.legal a{color:var(--page-fg,var(--fg))}
.brand-description{margin:4px 0 0;color:var(--fg)}
.brand{margin:0 0 16px}.brand .logo{max-height:48px;max-width:200px}.logo-dark{display:none}.brand-name{font-weight:700;font-size:1.1rem;color:var(--fg)}
section{border-top:1px solid var(--border);margin-top:24px;padding-top:8px}
h2{font-size:1.15rem;margin:8px 0}
p.notice{color:var(--fg);font-weight:600}
ul.sessions{list-style:none;padding:0}
.qr svg{width:200px;height:200px;background:#fff}
fieldset{border:0;margin:0;padding:0}
.check{display:flex;gap:8px;align-items:center;margin:8px 0}.check label{margin:0;font-weight:400}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
` + SOCIAL_STYLES;

export const STYLESHEET_ETAG = etagOf(STYLESHEET);
