/** zod failures as field errors (the `errors[]` of a 422, the description of an OAuth error): shared by every surface and domain. */
import type { z } from 'zod';
import type { FieldError } from './problem.js';

/** The value at a zod issue path in the parsed input (undefined when absent). */
function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object' || !Object.prototype.hasOwnProperty.call(value, key)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/**
 * Field errors of a zod failure. `input` is what was parsed: zod 4 does not put the input on its
 * issues, so "Required" (absent) and a value of the wrong type are told apart by looking it up.
 */
export function zodFieldErrors(error: z.ZodError, root = 'body', input?: unknown): FieldError[] {
  const out: FieldError[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      const prefix = issue.path.map(String).join('.');
      for (const key of issue.keys) out.push({ field: prefix ? `${prefix}.${key}` : key, message: 'Unknown field' });
      continue;
    }
    const field = issue.path.map(String).join('.') || root;
    const absent = input === undefined ? issue.input === undefined : valueAt(input, issue.path) === undefined;
    const message = issue.code === 'invalid_type' && absent ? 'Required' : issue.message;
    out.push({ field, message });
  }
  return out;
}
