/**
 * Sensitive fields of tenant configuration (spec 1.5 rule 3: SMTP passwords, social provider
 * secrets, SMS API keys; the list is SENSITIVE_FIELDS in sections.ts):
 *   - sealed (AES-256-GCM, keys/sealer.ts) before they are stored; the additional data names the
 *     tenant, section and field, so a sealed value copied into another tenant's row or another
 *     field does not open;
 *   - never returned in clear: responses carry MASK instead;
 *   - MASK sent back in a PUT keeps the stored secret, so a client can GET, edit and PUT a section
 *     without knowing its secrets. Omitting the field clears it (PUT replaces the section).
 */
import type { FieldError } from '../../http/problem.js';
import type { Sealer } from '../../keys/sealer.js';
import { valueAt, withValueAt, type JsonObject } from './json-path.js';
import { SENSITIVE_FIELDS } from './sections.js';

/** What a set secret reads as. A secret whose clear text is exactly this cannot be stored. */
export const MASK = '********';

function expand(node: unknown, pattern: readonly string[], at: string[], out: string[][]): void {
  if (pattern.length === 0) {
    if (typeof node === 'string') out.push(at);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const [head, ...rest] = pattern;
  for (const key of head === '*' ? Object.keys(node) : [head!]) {
    if (Object.prototype.hasOwnProperty.call(node, key)) expand((node as JsonObject)[key], rest, [...at, key], out);
  }
}

/** Paths (relative to the section) of the sensitive fields present in a section's data. */
export function sensitivePaths(section: string, data: JsonObject): string[][] {
  const out: string[][] = [];
  for (const field of SENSITIVE_FIELDS) {
    const [owner, ...pattern] = field.split('.');
    if (owner === section) expand(data, pattern, [], out);
  }
  return out;
}

export const sealAad = (tenant: string, section: string, path: readonly string[]) => `${tenant}:config:${section}.${path.join('.')}`;

/**
 * The section as it is stored: every secret sealed, a MASK replaced by the stored sealed value at
 * the same place. A MASK with nothing stored behind it is a field error (relative to the section).
 */
export function sealSection(sealer: Sealer, tenant: string, section: string, data: JsonObject, stored: JsonObject | undefined): { data: JsonObject; errors: FieldError[] } {
  let out = data;
  const errors: FieldError[] = [];
  for (const path of sensitivePaths(section, data)) {
    const value = valueAt(data, path) as string;
    if (value === MASK) {
      const kept = valueAt(stored, path);
      if (typeof kept === 'string') out = withValueAt(out, path, kept);
      else errors.push({ field: path.join('.'), message: `${MASK} keeps a stored secret, but none is stored here: send the secret itself` });
    } else {
      out = withValueAt(out, path, sealer.seal(value, sealAad(tenant, section, path)));
    }
  }
  return { data: out, errors };
}

/** The sections as they may leave the service: every secret replaced by MASK. */
export function maskSections<T extends Record<string, JsonObject | undefined>>(sections: T): T {
  const out: Record<string, JsonObject | undefined> = { ...sections };
  for (const [section, data] of Object.entries(sections)) {
    if (!data) continue;
    let masked = data;
    for (const path of sensitivePaths(section, data)) masked = withValueAt(masked, path, MASK);
    out[section] = masked;
  }
  return out as T;
}

/** The clear text of one stored secret, for the code that uses it (SMTP delivery, social login, SMS). */
export function revealSecret(sealer: Sealer, tenant: string, section: string, path: readonly string[], sealed: string): string {
  return sealer.unseal(sealed, sealAad(tenant, section, path));
}
