import { describe, expect, it } from 'vitest';
import { bodyForm, MAX_FORM_PARAMETERS, TooManyParameters } from '../../src/http/urlencoded.js';

describe('bodyForm (a body parsed once for the throttle and the endpoint)', () => {
  it('parses a body once and hands the same form to every reader of that body', () => {
    const body = Buffer.from('grant_type=client_credentials&scope=a%20b&resource=x&resource=y');
    const first = bodyForm(body);
    expect(first.get('grant_type')).toBe('client_credentials');
    expect(first.get('scope')).toBe('a b');
    expect(first.getAll('resource')).toEqual(['x', 'y']);
    expect(bodyForm(body)).toBe(first);
  });

  it('parses another body afresh, even with the same text', () => {
    const a = bodyForm(Buffer.from('client_id=a'));
    const b = bodyForm(Buffer.from('client_id=b'));
    expect(a.get('client_id')).toBe('a');
    expect(b.get('client_id')).toBe('b');
    const same = Buffer.from('client_id=a');
    expect(bodyForm(same)).not.toBe(a);
    expect(bodyForm(same).get('client_id')).toBe('a');
  });

  it('refuses a body with too many parameters on every read', () => {
    const body = Buffer.from(Array.from({ length: MAX_FORM_PARAMETERS + 1 }, (_, i) => `p${i}=1`).join('&'));
    expect(() => bodyForm(body)).toThrow(TooManyParameters);
    expect(() => bodyForm(body)).toThrow(TooManyParameters);
  });
});
