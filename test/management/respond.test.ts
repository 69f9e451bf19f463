/**
 * Serializers (src/management/respond.ts) are compiled on first use (issue 17). What start-up used
 * to guarantee is kept here: every serializer of the Management API compiles, and a compiled one
 * writes what JSON.stringify would for a value of its schema.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import '../../src/management/index.js';
import { compileSerializers, dataEnvelope, serializer } from '../../src/management/respond.js';

describe('management serializers', () => {
  it('every serializer of the Management API compiles', () => {
    expect(compileSerializers()).toBeGreaterThan(25);
  });

  it('compiles on the first use, not when created, and writes the schema\'s fields only', () => {
    let resolved = 0;
    // z.lazy's getter runs when the schema is turned into JSON Schema, i.e. at compilation.
    const id = z.lazy(() => {
      resolved++;
      return z.string();
    });
    const write = serializer(dataEnvelope(z.object({ id, n: z.number().nullable() })));
    expect(resolved).toBe(0);
    expect(JSON.parse(write({ data: { id: 'a"b', n: 3, secret: 'not in the schema' } }))).toEqual({ data: { id: 'a"b', n: 3 } });
    expect(resolved).toBeGreaterThan(0);
    const after = resolved;
    expect(write({ data: { id: 'x', n: null } })).toBe(JSON.stringify({ data: { id: 'x', n: null } }));
    expect(resolved).toBe(after); // compiled once
  });
});
