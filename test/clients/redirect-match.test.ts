/** The redirect URI match the direct code exchange shares with oidc-provider's authorization endpoint. */
import { describe, expect, it } from 'vitest';
import { redirectUriRegistered } from '../../src/clients/rules.js';

describe('redirectUriRegistered', () => {
  const web = { application_type: 'web' as const, redirect_uris: ['https://app.example.com/cb', 'http://127.0.0.1:8080/cb'] };
  const native = { application_type: 'native' as const, redirect_uris: ['http://127.0.0.1/cb', 'com.example.app:/cb'] };

  it('matches registered URIs exactly', () => {
    expect(redirectUriRegistered(web, 'https://app.example.com/cb')).toBe(true);
    expect(redirectUriRegistered(web, 'https://app.example.com/cb/')).toBe(false);
    expect(redirectUriRegistered(web, 'http://127.0.0.1:9090/cb')).toBe(false); // a web client's port is part of its URI
    expect(redirectUriRegistered(native, 'com.example.app:/cb')).toBe(true);
  });

  it("lets a native client's loopback http URI use any port (RFC 8252 7.3), nothing else", () => {
    expect(redirectUriRegistered(native, 'http://127.0.0.1:51234/cb')).toBe(true);
    expect(redirectUriRegistered(native, 'http://127.0.0.1:51234/other')).toBe(false);
    expect(redirectUriRegistered(native, 'https://127.0.0.1:51234/cb')).toBe(false);
    expect(redirectUriRegistered(native, 'http://evil.example:51234/cb')).toBe(false);
  });
});
