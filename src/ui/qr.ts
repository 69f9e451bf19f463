/**
 * The otpauth:// URI as a QR code in inline SVG (issue 18, item 17): drawn on the server with the
 * `qrcode` package, no network and no script, so it fits the pages' CSP. Used by every TOTP
 * enrolment page (account page, {issuer}/account/mfa, enrolment forced at sign-in).
 */
import QRCode from 'qrcode';
import { Html } from './escape.js';

export async function qrSvg(text: string): Promise<Html> {
  const svg = await QRCode.toString(text, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' });
  // The XML declaration is not valid inside an HTML document.
  return new Html(svg.replace(/<\?xml[^>]*>/, ''));
}
