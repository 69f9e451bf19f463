/**
 * The domains throw neutral errors (src/errors.ts); toProblem is the one place they become
 * problem+json. Each must answer exactly what the domain's former ProblemError answered.
 */
import { describe, expect, it } from 'vitest';
import { BeyondOwnScopes, Conflict, Invalid, NotFound } from '../../src/errors.js';
import { MAX_FIELD_ERRORS, ProblemError, conflict, notFound, problemResponse, toProblem, validation } from '../../src/http/problem.js';

const body = (p: ProblemError | undefined) => {
  expect(p).toBeInstanceOf(ProblemError);
  return problemResponse(p!, '/api/v1/x', 'req-1');
};

describe('toProblem: the domains’ neutral errors', () => {
  it('maps NotFound and Conflict to the same 404 and 409 as before', () => {
    expect(body(toProblem(new NotFound('User u1 not found')))).toEqual(body(notFound('User u1 not found')));
    expect(body(toProblem(new Conflict('A user with this e-mail address already exists')))).toEqual(body(conflict('A user with this e-mail address already exists')));
  });

  it('maps Invalid to the 422 with its field errors, capped as before, and keeps an explicit detail', () => {
    const errors = Array.from({ length: MAX_FIELD_ERRORS + 3 }, (_, i) => ({ field: `f${i}`, message: 'is wrong' }));
    const mapped = body(toProblem(new Invalid(errors)));
    expect(mapped).toEqual(body(validation(errors)));
    expect(JSON.parse(mapped.body as string)).toMatchObject({ status: 422, detail: expect.stringMatching(/and 3 more errors$/) });
    expect(body(toProblem(new Invalid([{ field: 'role', message: 'no' }], 'Custom detail')))).toEqual(body(validation([{ field: 'role', message: 'no' }], 'Custom detail')));
  });

  it('maps BeyondOwnScopes to 403 insufficient-scope naming every missing scope in the challenge', () => {
    const res = body(toProblem(new BeyondOwnScopes(['svc:users:write', 'svc:clients:write'], 'The client would be allowed scopes beyond the caller’s own')));
    expect(res.status).toBe(403);
    expect(res.headers['www-authenticate']).toBe('Bearer error="insufficient_scope", scope="svc:users:write svc:clients:write"');
    expect(JSON.parse(res.body as string)).toMatchObject({ type: 'urn:svc:error:insufficient-scope', missing_scopes: ['svc:users:write', 'svc:clients:write'] });
  });

  it('leaves anything else to the caller (a 500 with the request id)', () => {
    expect(toProblem(new Error('bug'))).toBeUndefined();
    expect(toProblem('string')).toBeUndefined();
  });
});
