/**
 * op() keeps each operation's types: a handler reads its path parameters typed from the pattern,
 * and the values are the ones the router matched, all of them present. (The expectTypeOf lines are
 * checked by tsc over this file, not at run time.)
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { NotFound } from '../../src/errors.js';
import { pathParams, type PathParams } from '../../src/management/operation.js';

describe('path parameters', () => {
  it('types every :name of a literal pattern as a string', () => {
    expectTypeOf<PathParams<'/api/v1/users/:user_id/lock'>>().toEqualTypeOf<{ user_id: string }>();
    expectTypeOf<PathParams<'/api/v1/tenants/:slug/config/:section'>>().toEqualTypeOf<{ slug: string; section: string }>();
    expectTypeOf<PathParams<'/api/v1/clients'>>().toEqualTypeOf<{}>();
    expectTypeOf<PathParams<string>>().toEqualTypeOf<Record<string, string | undefined>>();
  });

  it('takes the pattern’s parameters from the match and nothing else', () => {
    const got = pathParams('/api/v1/tenants/:slug/config/:section', { slug: 'acme', section: 'security', other: 'x' });
    expect(got).toEqual({ slug: 'acme', section: 'security' });
    expect(got.section).toBe('security');
  });

  it('answers NotFound (a 404) when the match lacks one, never an undefined parameter', () => {
    expect(() => pathParams('/api/v1/users/:user_id', {})).toThrow(NotFound);
  });
});
