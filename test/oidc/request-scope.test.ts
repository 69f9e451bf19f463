/**
 * The bridged request's context (src/oidc/request-scope.ts): audits noted inside a request are
 * awaited before its answer, and both contexts (ours and oidc-provider's own) are switched off once
 * no call is inside oidc-provider, never while one still is. Node's `enabled` field of an
 * AsyncLocalStorage is read directly: if it ever goes away, these tests fail instead of passing.
 */
import type { AsyncLocalStorage } from 'node:async_hooks';
import Provider from 'oidc-provider';
import providerContext from 'oidc-provider/lib/helpers/als.js';
import { describe, expect, it } from 'vitest';
import type { HttpResponse } from '../../src/http/types.js';
import { inRequestScope, insideProvider, noteAudit } from '../../src/oidc/request-scope.js';

const enabled = (als: AsyncLocalStorage<unknown>) => (als as unknown as { enabled: boolean }).enabled;

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const ok: HttpResponse = { status: 200, body: 'ok' };
const failed: HttpResponse = { status: 503, body: 'audit failed' };

describe('the bridged request scope', () => {
  it("disables the context oidc-provider's Provider.ctx reads", () => {
    const sentinel = { marker: 'ctx' };
    providerContext.run(sentinel, () => expect(Provider.ctx).toBe(sentinel));
  });

  it('keeps both contexts on while a call is inside oidc-provider, and switches them off after the last', async () => {
    const a = deferred();
    const b = deferred();
    // What oidc-provider does inside each request (initialize_app.js: als.run(ctx, next)).
    const first = insideProvider(() => providerContext.run({ request: 'A' }, () => a.promise.then(() => 'A')));
    const second = inRequestScope(
      () =>
        providerContext.run({ request: 'B' }, async () => {
          await b.promise;
          // B is still inside after A ended: its context must still be there.
          expect(Provider.ctx).toEqual({ request: 'B' });
          noteAudit(Promise.resolve(undefined)); // a failed audit write
          return ok;
        }),
      () => failed,
    );
    a.resolve();
    expect(await first).toBe('A');
    expect(enabled(providerContext)).toBe(true);
    b.resolve();
    // The audit B noted after A had finished was seen: its answer is the audit-failure answer.
    expect(await second).toBe(failed);
    expect(enabled(providerContext)).toBe(false);
  });

  it('switches the contexts off after a call that threw', async () => {
    await expect(insideProvider(() => providerContext.run({}, async () => Promise.reject(new Error('boom'))))).rejects.toThrow('boom');
    expect(enabled(providerContext)).toBe(false);
  });

  it('answers as before when every audit was written', async () => {
    const res = await inRequestScope(
      async () => {
        noteAudit(Promise.resolve(true));
        return ok;
      },
      () => failed,
    );
    expect(res).toBe(ok);
  });
});
