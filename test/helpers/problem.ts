/** Assertions on RFC 9457 problem responses of the Management API (CONTRACT.md error list). */
import { expect } from 'vitest';

export interface ProblemLike {
  status: number;
  headers: Headers | Record<string, string>;
  json: any;
}

function header(res: ProblemLike, name: string): string | null {
  return res.headers instanceof Headers ? res.headers.get(name) : (res.headers[name] ?? null);
}

/**
 * Checks status, content type and the five problem fields; `instance` must be the path without
 * its query string. Returns the body for further checks.
 */
export function expectProblem(res: ProblemLike, status: number, code: string, path: string): any {
  const ctx = `${status} ${code} at ${path}: got ${res.status} ${JSON.stringify(res.json)}`;
  expect(res.status, ctx).toBe(status);
  expect(header(res, 'content-type'), ctx).toMatch(/^application\/problem\+json/);
  const body = res.json;
  expect(body, ctx).toMatchObject({ type: `urn:svc:error:${code}`, status, instance: path.split('?')[0] });
  expect(typeof body.title, ctx).toBe('string');
  expect(body.title.length, ctx).toBeGreaterThan(0);
  expect(typeof body.detail, ctx).toBe('string');
  expect(body.detail.length, ctx).toBeGreaterThan(0);
  expect(JSON.stringify(body), ctx).not.toMatch(/\bat \S+\.(ts|js):\d+|SQLITE|sqlite3/i);
  return body;
}

/** A 422 naming `field` in errors[]. */
export function expectValidation(res: ProblemLike, path: string, field: string): any {
  const body = expectProblem(res, 422, 'validation', path);
  expect(body.title).toBe('Validation Error');
  expect(Array.isArray(body.errors)).toBe(true);
  for (const e of body.errors) {
    expect(typeof e.field).toBe('string');
    expect(typeof e.message).toBe('string');
  }
  expect(body.errors.map((e: { field: string }) => e.field), JSON.stringify(body.errors)).toContain(field);
  return body;
}

export const INVALID_TOKEN_CHALLENGE = 'Bearer error="invalid_token"';

export function expectUnauthorized(res: ProblemLike, path: string): void {
  expectProblem(res, 401, 'unauthorized', path);
  expect(header(res, 'www-authenticate')).toBe(INVALID_TOKEN_CHALLENGE);
}

export function expectInsufficientScope(res: ProblemLike, path: string, scope: string): void {
  expectProblem(res, 403, 'insufficient-scope', path);
  expect(header(res, 'www-authenticate')).toBe(`Bearer error="insufficient_scope", scope="${scope}"`);
}
