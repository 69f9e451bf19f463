/**
 * Hostile input, part 4: path ids. Every operation with a path parameter (allOperations) answers
 * an unknown id (odd characters, encoded slashes, injection strings, 300 characters, another
 * resource's id) with 404 not-found, and nothing is written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { expectProblem } from '../../helpers/problem.js';
import {
  ALL_SCOPES, expectUnchanged, keyOf, label, paramOps, pathWith, resourceOf, seedFixture, send, snapshot, validBody, VALID_QUERIES,
  type Fixture, type Operation, type Snapshot,
} from '../../helpers/hostile.js';

const HIGH = '1000000';
let t: TestApp;
let fx: Fixture;
let admin: string;
let before: Snapshot;

beforeAll(async () => {
  t = await startTestApp({ SECURITY_RATE_LIMIT_READ: HIGH, SECURITY_RATE_LIMIT_WRITE: HIGH, SECURITY_RATE_LIMIT_DELETE: HIGH, SECURITY_RATE_LIMIT_SENSITIVE: HIGH });
  admin = await t.token(ALL_SCOPES);
  fx = await seedFixture(t, async () => admin);
  before = await snapshot(t);
});
afterAll(async () => t?.close());

/** Unknown ids, as they appear in the path (already encoded). */
const UNKNOWN_IDS: Array<[string, string]> = [
  ['a plain unknown id', 'hostile-unknown-id'],
  ['an encoded slash', encodeURIComponent('a/b')],
  ['only an encoded slash', '%2F'],
  ['an encoded path traversal', encodeURIComponent('../../etc/passwd')],
  ['a double-encoded slash', encodeURIComponent('%2F')],
  ['SQL', encodeURIComponent("x' OR '1'='1")],
  ['SQL with a statement', encodeURIComponent('1; DROP TABLE clients; --')],
  ['LIKE wildcards', encodeURIComponent('%_%')],
  ['HTML', encodeURIComponent('<script>alert(1)</script>')],
  ['a space', encodeURIComponent('a b')],
  ['a NUL character', '%00'],
  ['non-ASCII letters', encodeURIComponent('ümlaut-ß')],
  ['an emoji', encodeURIComponent('😀')],
  ['malformed percent-encoding', '%E0%A4%A'],
  ['300 characters', 'x'.repeat(300)],
  ['null', 'null'],
  ['undefined', 'undefined'],
  ['0', '0'],
  ['-1', '-1'],
  ['a JSON object', encodeURIComponent('{"$ne":null}')],
];

/** Real ids of the other resources: a client id is no user id, a session jti no registration token. */
function foreignIds(o: Operation): Array<[string, string]> {
  const own = resourceOf(o);
  const all: Array<[string, string, string]> = [
    ['clients', 'a client id', fx.client.id],
    ['users', 'a user id', fx.userId],
    ['sessions', 'a session jti', fx.sessionJti],
    ['registration-tokens', 'a registration token jti', fx.registrationTokenJti],
    ['jwks', 'a key id', fx.kid],
    ['audit', 'an audit entry id', fx.auditId],
  ];
  return all.filter(([resource]) => resource !== own).map(([, what, id]) => [what, encodeURIComponent(id)]);
}

describe.each(paramOps.map((o) => [label(o), o] as [string, Operation]))('%s', (_name, o) => {
  const query = VALID_QUERIES[keyOf(o)] ?? '';

  it.each(UNKNOWN_IDS)('with %s as id: 404 not-found', async (_what, id) => {
    const path = pathWith(o, id);
    expectProblem(await send(t, o, path + query, { token: admin, body: validBody(o) }), 404, 'not-found', path);
  });

  it('with the real id of another resource: 404 not-found', async () => {
    for (const [what, id] of foreignIds(o)) {
      const path = pathWith(o, id);
      const res = await send(t, o, path + query, { token: admin, body: validBody(o) });
      expect(res.status, `${what}: ${res.text}`).toBe(404);
      expectProblem(res, 404, 'not-found', path);
    }
  });
});

describe('storage after every unknown id', () => {
  it('is unchanged: records, counts, keys, sessions and admin audit entries', async () => {
    expect(before.counts).toMatchObject({ clients: 2, users: 2, registrationTokens: 2, sessions: 2 });
    expectUnchanged(before, await snapshot(t));
  });
});
