/**
 * Request bodies refuse a member name given twice in one object (src/http/json.ts
 * parseJsonUniqueNames), at any depth, comparing names once unescaped, in the same linear pass as
 * the depth bound. JSON.parse alone keeps the last value, so a value one reader checked could pass
 * unseen by another (docs/decisions.md).
 */
import { describe, expect, it } from 'vitest';
import { JsonDuplicateMember, JsonTooDeep, MAX_JSON_DEPTH, parseJson, parseJsonUniqueNames } from '../../src/http/json.js';
import { readJsonBody } from '../../src/http/json-body.js';

/** The path of the repeated name, 'none' when the text parses, 'syntax' or 'too-deep' for those refusals. */
function duplicateOf(text: string): string {
  try {
    parseJsonUniqueNames(text);
    return 'none';
  } catch (err) {
    if (err instanceof JsonDuplicateMember) return err.path;
    if (err instanceof JsonTooDeep) return 'too-deep';
    if (err instanceof SyntaxError) return 'syntax';
    throw err;
  }
}

describe('parseJsonUniqueNames', () => {
  it('refuses a name given twice, at the top level and at any depth, naming its path', () => {
    expect(duplicateOf('{"client_name":"a","client_name":"b"}')).toBe('client_name');
    expect(duplicateOf('{"rate_limit":{"read":600,"read":1}}')).toBe('rate_limit.read');
    expect(duplicateOf('{"l":[{"n":1},{"n":1,"x":[],"n":2}]}')).toBe('l.1.n');
    expect(duplicateOf('[[{"a":{"b":{"c":1,"c":1}}}]]')).toBe('0.0.a.b.c');
    expect(duplicateOf('{"a":null , "a" :null}')).toBe('a');
    expect(duplicateOf('{"":1,"":2}')).toBe('""');
    expect(duplicateOf('{"__proto__":{},"__proto__":{}}')).toBe('__proto__');
  });

  it('compares names once unescaped', () => {
    expect(duplicateOf('{"a":1,"\\u0061":2}')).toBe('a');
    expect(duplicateOf('{"\\u0061":1,"a":2}')).toBe('a');
    expect(duplicateOf('{"a\\"b":1,"a\\u0022b":2}')).toBe('a"b');
    expect(duplicateOf('{"\\/":1,"/":2}')).toBe('/');
    expect(duplicateOf('{"\\ud83d\\ude00":1,"😀":2}')).toBe('😀');
    // Different once unescaped: not repeated.
    expect(duplicateOf('{"a\\"":1,"a":2}')).toBe('none');
    expect(duplicateOf('{"A":1,"a":2,"\\u0041\\u0061":3}')).toBe('none');
  });

  it('counts member names only: the same name in other objects, and strings that look like names, are fine', () => {
    expect(duplicateOf('{"a":{"a":1},"b":{"a":2},"c":[{"a":1},{"a":2}]}')).toBe('none');
    expect(duplicateOf('{"a":"a","b":"a","c":["a","a"],"d":"{\\"e\\":1,\\"e\\":2}"}')).toBe('none');
    expect(duplicateOf('{"a":"x,\\"a\\":1","b":"}{,\\"a\\":"}')).toBe('none');
    expect(parseJsonUniqueNames('{"x":[1,{"y":[2,3]},"z"],"w":{}}')).toEqual({ x: [1, { y: [2, 3] }, 'z'], w: {} });
  });

  it('leaves malformed text and deep text to their own refusals', () => {
    expect(duplicateOf('{"a":1,"a":2')).toBe('syntax');
    expect(duplicateOf('{"a":1,"a":2,}')).toBe('syntax');
    expect(duplicateOf('{"\\x":1,"\\x":2}')).toBe('syntax');
    expect(duplicateOf(`{"a":1,"a":2,"deep":${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}}`)).toBe('too-deep');
    expect(duplicateOf(`{"a":${'{"b":'.repeat(MAX_JSON_DEPTH - 2)}{"c":1,"c":2}${'}'.repeat(MAX_JSON_DEPTH - 2)}}`)).toBe(`a${'.b'.repeat(MAX_JSON_DEPTH - 2)}.c`);
  });

  it('stays linear on hostile bodies: a huge object, names full of escapes, a repeat at the very end', () => {
    const members = Array.from({ length: 80_000 }, (_, i) => `"k${i}":0`);
    const huge = `{${members.join(',')}}`;
    const escapes = `{${Array.from({ length: 8_000 }, (_, i) => `"${'\\u0061'.repeat(20)}${i}":0`).join(',')}}`;
    const repeatedLast = `{${members.join(',')},"k0":1}`;
    expect(huge.length).toBeLessThan(1024 * 1024);
    // This process's CPU time, not the clock: other processes on a loaded machine do not count.
    const started = process.cpuUsage();
    expect(duplicateOf(huge)).toBe('none');
    expect(duplicateOf(escapes)).toBe('none');
    expect(duplicateOf(repeatedLast)).toBe('k0');
    const used = process.cpuUsage(started);
    // Generous: ~0.3 s of CPU here; quadratic work on these sizes takes minutes.
    expect((used.user + used.system) / 1000).toBeLessThan(3000);
  });

  it('tokens keep plain parseJson (a JWT is not a request body): the depth bound only', () => {
    expect(parseJson('{"a":1,"a":2}')).toEqual({ a: 2 });
  });
});

describe('readJsonBody', () => {
  it('refuses a repeated member name as duplicate-member, naming it', () => {
    const body = readJsonBody({ headers: { 'content-type': 'application/json' }, body: Buffer.from('{"ok":1,"n":{"x":1,"\\u0078":2}}') });
    expect(body).toEqual({ ok: false, reason: 'duplicate-member', member: 'n.x' });
  });
});
