/**
 * The built-in providers (CONTRACT.md): four OpenID Connect upstreams found by discovery, and two
 * OAuth 2.0 ones (GitHub, Facebook) whose identity comes from their documented user APIs.
 * Endpoints are the providers' documented production addresses; `issuer` (OIDC presets) and
 * `endpoints` (GitHub Enterprise Server, another Graph API version) override them.
 */
import type { SocialPreset } from '../config/social.js';

export type UpstreamKind = 'oidc' | 'github' | 'facebook';

export interface OAuth2Endpoints {
  authorization: string;
  token: string;
  user: string;
  /** GitHub only: the user's e-mail addresses with their primary and verified flags. */
  emails?: string;
}

export interface Preset {
  kind: UpstreamKind;
  displayName: string;
  scopes: string[];
  /** OIDC presets: the discovery issuer (Microsoft's depends on the configured tenant). */
  issuer?: (tenant: string | undefined) => string;
  endpoints?: OAuth2Endpoints;
  /** Upstream claim names for user fields when the configuration maps none. */
  mapping: Record<string, string>;
}

const OIDC_MAPPING = { email: 'email', given_name: 'given_name', family_name: 'family_name', name: 'name', nickname: 'nickname' };

export const PRESETS: Record<SocialPreset, Preset> = {
  google: { kind: 'oidc', displayName: 'Google', scopes: ['openid', 'email', 'profile'], issuer: () => 'https://accounts.google.com', mapping: OIDC_MAPPING },
  microsoft: {
    kind: 'oidc',
    displayName: 'Microsoft',
    scopes: ['openid', 'email', 'profile'],
    issuer: (tenant) => `https://login.microsoftonline.com/${tenant ?? 'common'}/v2.0`,
    mapping: { ...OIDC_MAPPING, username: 'preferred_username' },
  },
  apple: { kind: 'oidc', displayName: 'Apple', scopes: ['openid', 'email', 'name'], issuer: () => 'https://appleid.apple.com', mapping: OIDC_MAPPING },
  gitlab: { kind: 'oidc', displayName: 'GitLab', scopes: ['openid', 'email', 'profile'], issuer: () => 'https://gitlab.com', mapping: { ...OIDC_MAPPING, username: 'nickname' } },
  github: {
    kind: 'github',
    displayName: 'GitHub',
    scopes: ['read:user', 'user:email'],
    endpoints: {
      authorization: 'https://github.com/login/oauth/authorize',
      token: 'https://github.com/login/oauth/access_token',
      user: 'https://api.github.com/user',
      emails: 'https://api.github.com/user/emails',
    },
    mapping: { email: 'email', name: 'name', username: 'login' },
  },
  facebook: {
    kind: 'facebook',
    displayName: 'Facebook',
    scopes: ['email', 'public_profile'],
    endpoints: {
      authorization: 'https://www.facebook.com/v19.0/dialog/oauth',
      token: 'https://graph.facebook.com/v19.0/oauth/access_token',
      user: 'https://graph.facebook.com/v19.0/me?fields=id,name,email,first_name,last_name',
    },
    mapping: { email: 'email', name: 'name', given_name: 'first_name', family_name: 'last_name' },
  },
};
