/**
 * `prompt=login` and `max_age` with a third-party client (OIDC Core 3.1.2.1): the user signs in
 * once and consents once. The consent's result used to replace the sign-in's, so oidc-provider saw
 * no fresh sign-in when it resumed after consent and asked for one again; `prompt=login consent`
 * went round for ever. Also: discovery advertises only the response type clients can register.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpSession } from '../helpers/code-flow.js';
import { createUser } from '../helpers/users.js';
import { startUserFlowFixture, type UserFlowFixture } from '../helpers/user-flow-fixture.js';

const REDIRECT = 'http://127.0.0.1:65528/cb';

let f: UserFlowFixture;
beforeAll(async () => {
  f = await startUserFlowFixture(REDIRECT);
});
afterAll(async () => f?.t.close());

async function thirdParty() {
  return f.newClient({ first_party: false, scope: 'openid email' });
}

describe('a third-party client asking for a fresh sign-in', () => {
  it.each([
    ['prompt=login', { prompt: 'login' }],
    ['prompt=login consent', { prompt: 'login consent' }],
    ['max_age=0', { max_age: '0' }],
  ])('%s: one sign-in, one consent, then the code', async (_name, extra) => {
    const user = await createUser(f.t, { email_verified: true });
    const session = new HttpSession(f.t.issuer, user);
    session.consent = true;
    // A session from another (first-party) client: the fresh sign-in is what this request asks for,
    // and the third-party client has no consent yet.
    await session.tokens(f.basic, { scope: 'openid email' });
    session.signIns = 0;
    const tokens = await session.tokens(await thirdParty(), { scope: 'openid email', extra });
    expect([session.signIns, session.consents]).toEqual([1, 1]);
    expect(tokens.claims()!.sub).toBe(user.id);
    expect(tokens.claims()!.auth_time).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) - 5);
  });

  it('without a session: one sign-in and one consent for prompt=login consent', async () => {
    const user = await createUser(f.t, { email_verified: true });
    const session = new HttpSession(f.t.issuer, user);
    session.consent = true;
    const tokens = await session.tokens(await thirdParty(), { scope: 'openid email', extra: { prompt: 'login consent' } });
    expect([session.signIns, session.consents]).toEqual([1, 1]);
    expect(tokens.claims()!.sub).toBe(user.id);
  });
});

describe('prompt=consent on a grant that already holds every scope asked for', () => {
  it('lists what the client asks for again (nothing is missing, but the user is asked)', async () => {
    const user = await createUser(f.t, { email_verified: true });
    const session = new HttpSession(f.t.issuer, user);
    session.consent = true;
    const client = await thirdParty();
    await session.tokens(client, { scope: 'openid email' });
    await session.tokens(client, { scope: 'openid email', extra: { prompt: 'consent' } });
    expect(session.consents).toBe(2);
    const items = (page: string) => [.../<ul class="scopes">([\s\S]*?)<\/ul>/.exec(page)![1]!.matchAll(/<li>([^<]*)<\/li>/g)].map((m) => m[1]);
    const [first, forced] = session.consentPages.map(items);
    expect(first).toHaveLength(2);
    expect(forced).toEqual(first);
  });
});

describe("the client's privacy policy and terms on the consent page (OIDC Dynamic Client Registration 2: the OP SHOULD display them)", () => {
  it('links both, escaped, in the page language; none without them', async () => {
    const client = await f.newClient({ first_party: false, scope: 'openid email', client_name: 'Rp <b>One</b>', policy_uri: 'https://rp.example/privacy?a=1&b="x"', tos_uri: 'https://rp.example/terms' });
    const session = new HttpSession(f.t.issuer, await createUser(f.t, { email_verified: true }));
    session.consent = true;
    await session.tokens(client, { scope: 'openid email' });
    const page = session.consentPages[0]!;
    const links = [.../<ul class="client-links">([\s\S]*?)<\/ul>/.exec(page)![1]!.matchAll(/<a href="([^"]*)" rel="noopener noreferrer">([^<]*)<\/a>/g)].map((m) => [m[1], m[2]]);
    expect(links).toEqual([
      ['https://rp.example/privacy?a=1&amp;b=&quot;x&quot;', 'Rp &lt;b&gt;One&lt;/b&gt;&#39;s privacy policy'],
      ['https://rp.example/terms', 'Rp &lt;b&gt;One&lt;/b&gt;&#39;s terms of service'],
    ]);

    const plain = new HttpSession(f.t.issuer, await createUser(f.t, { email_verified: true }));
    plain.consent = true;
    await plain.tokens(await thirdParty(), { scope: 'openid email' });
    expect(plain.consentPages[0]).not.toContain('client-links');
  });
});

describe('discovery', () => {
  it('advertises only the code response type, the one a client can register', async () => {
    const doc = (await (await fetch(`${f.t.issuer}/.well-known/openid-configuration`)).json()) as { response_types_supported: string[] };
    expect(doc.response_types_supported).toEqual(['code']);
  });
});
