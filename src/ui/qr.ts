/**
 * The otpauth:// URI as a QR code in inline SVG (issue 18, item 17): drawn on the server with the
 * `qrcode` package, no network and no script, so it fits the pages' CSP. Used by every TOTP
 * enrolment page (account page, {issuer}/account/mfa, enrolment forced at sign-in).
 */
import { lazyModule } from '../lazy-module.js';
import { Html } from './escape.js';

/** Loaded on the first enrolment page, not at start (issue 17: idle memory, start-up time). */
const qrcode = lazyModule(() => import('qrcode'));

export async function qrSvg(text: string): Promise<Html> {
  const QRCode = (await qrcode()).default;
  const svg = await QRCode.toString(text, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' });
  // The XML declaration is not valid inside an HTML document.
  return new Html(svg.replace(/<\?xml[^>]*>/, ''));
}
