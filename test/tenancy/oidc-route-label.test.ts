/**
 * The metrics `route` label of OIDC paths (src/tenancy/oidc-routes.ts, oidcRouteLabel): endpoints
 * and the interaction pages' known actions keep labels of their own; everything a caller can vary
 * (ids, unknown suffixes, case) folds, so no request text becomes a label (docs/security.md).
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { oidcRouteLabel } from '../../src/tenancy/oidc-routes.js';

const letters = (n: number) => Array.from(randomBytes(n), (b) => String.fromCharCode(97 + (b % 26))).join('');

describe('oidcRouteLabel', () => {
  it('labels the interaction page and each action the product serves', () => {
    expect(oidcRouteLabel('/interaction/abc123')).toBe('oidc/interaction/:uid');
    for (const action of ['login', 'mfa', 'confirm', 'abort', 'passkey', 'passkey/options', 'mfa/options', 'enrol', 'enrol/options', 'signup', 'resend', 'continue']) {
      expect(oidcRouteLabel(`/interaction/abc123/${action}`), action).toBe(`oidc/interaction/:uid/${action}`);
    }
    expect(oidcRouteLabel('/interaction/abc123/social/google')).toBe('oidc/interaction/:uid/social/:provider');
    expect(oidcRouteLabel('/interaction/abc123/link')).toBe('oidc/interaction/:uid/link');
    expect(oidcRouteLabel('/interaction/abc123/link-cancel')).toBe('oidc/interaction/:uid/link-cancel');
  });

  it('folds any other suffix after an interaction id into one label (2,000 made-up suffixes, one series)', () => {
    const labels = new Set<string>();
    for (let i = 0; i < 2000; i++) labels.add(oidcRouteLabel(`/interaction/x/${letters(8)}`));
    expect([...labels]).toEqual(['oidc/interaction:other']);
    for (const sub of ['/interaction/x/LOGIN', '/interaction/x/login/extra', '/interaction/x/passkey/zzz', `/interaction/x/social/${letters(40)}`, '/interaction/x/social/google/more', '/interaction/x/', `/interaction/${'a'.repeat(200)}`]) {
      expect(oidcRouteLabel(sub), sub).toBe('oidc/interaction:other');
    }
  });

  it('keeps every other OIDC label source bounded', () => {
    const labels = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const word = letters(8);
      for (const sub of [`/${word}`, `/reg/${word}`, `/device/${word}`, `/auth/${word}`, `/token/${word}`, `/${word.toUpperCase()}`, `/session/${word}`, `/social/${word}/callback`]) labels.add(oidcRouteLabel(sub));
    }
    // 1,600 different paths: a handful of labels, none of them carrying the caller's text.
    expect([...labels].sort()).toEqual(['oidc/device/:action', 'oidc/reg/:client_id', 'oidc:other']);
  });
});
