/**
 * The attempt counters and rate limits count in fixed windows aligned to the clock: sign-in attempts
 * per IP and client-authentication failures per minute, device user codes per ten minutes
 * (src/oidc/attempt-counter.ts), the Management API's limits per `security.rate_limit.window_seconds`
 * (60 by default), the self-service e-mails per hour (src/ui/account/limiter.ts). A test that counts
 * up to a limit and then expects the refusal fails when a new window starts in between, as the count
 * starts again from zero (CI saw it once: 200 where 429 was due). Called before the counting, this
 * waits, only when needed, until at least `needMs` of the current window are left. The wait counts
 * against the test's timeout (30 s by default): a test that also does slow work (a browser, sign-ins)
 * gives itself `needMs` more.
 */
export async function awayFromWindowEdge(windowSeconds: number, needMs = 10_000): Promise<void> {
  const ms = windowSeconds * 1000;
  const left = ms - (Date.now() % ms);
  if (left < needMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}
