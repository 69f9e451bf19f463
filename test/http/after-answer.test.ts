/**
 * Work after an answer (src/http/after-answer.ts) is tracked until it ends, so the mailer's drain
 * and the app's shutdown wait for the audit entries and mail it writes.
 */
import { describe, expect, it } from 'vitest';
import { afterAnswer, afterAnswerSettled } from '../../src/http/after-answer.js';

describe('afterAnswer', () => {
  it('runs after the current turn, and afterAnswerSettled waits for it and for work it starts', async () => {
    const done: string[] = [];
    afterAnswer(async () => {
      await new Promise((r) => setTimeout(r, 30));
      done.push('first');
      afterAnswer(async () => {
        await new Promise((r) => setTimeout(r, 30));
        done.push('second');
      }, () => undefined);
    }, () => undefined);
    expect(done).toEqual([]);
    await afterAnswerSettled();
    expect(done).toEqual(['first', 'second']);
  });

  it('hands a failure to onError and still settles', async () => {
    const errors: unknown[] = [];
    afterAnswer(() => Promise.reject(new Error('storage away')), (err) => errors.push(err));
    await afterAnswerSettled();
    expect(errors).toHaveLength(1);
  });
});
