/**
 * What the CLI reads from the operator (src/cli/input.ts): the first line of stdin (read no further,
 * bounded, strict UTF-8, a character split between chunks kept whole), the hidden prompt's keys
 * (Ctrl-D ends or cancels, never joins the password), the API's storable-text rule, and arguments
 * Node decoded lossily. The commands themselves: test/process/cli-commands.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { InputError, PromptLine, readFirstLine, refuseInvalidUtf8Arguments, refuseUnstorable } from '../../src/cli/input.js';

const bytes = (...parts: Array<string | number[]>) => parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p)));

async function* chunks(list: Buffer[], onRead?: () => void) {
  for (const c of list) {
    onRead?.();
    yield c;
  }
}

describe('readFirstLine', () => {
  it('keeps a character split between two chunks whole and drops the line end (\\n or \\r\\n)', async () => {
    const e = Buffer.from('é'); // two bytes
    expect(await readFirstLine(chunks([Buffer.concat([Buffer.from('P'), e.subarray(0, 1)]), Buffer.concat([e.subarray(1), Buffer.from('ss-word\nnext line\n')])]))).toBe('Péss-word');
    expect(await readFirstLine(chunks(bytes('secret-1\r\n')))).toBe('secret-1');
    expect(await readFirstLine(chunks(bytes('no newline at all')))).toBe('no newline at all');
    expect(await readFirstLine(chunks([]))).toBe('');
  });

  it('reads no further than the first newline (a pipe that never ends: `yes pw |`)', async () => {
    let reads = 0;
    async function* endless() {
      for (;;) {
        reads++;
        yield Buffer.from('pw-from-yes\n');
      }
    }
    expect(await readFirstLine(endless())).toBe('pw-from-yes');
    expect(reads).toBe(1);
  });

  it('refuses invalid UTF-8 and a line over the limit, with a message', async () => {
    await expect(readFirstLine(chunks(bytes('ab', [0xff], 'cd\n')))).rejects.toThrow(new InputError('the first line of stdin is not valid UTF-8'));
    // A surrogate encoded as UTF-8 (CESU) is not UTF-8 either.
    await expect(readFirstLine(chunks(bytes([0xed, 0xa0, 0x80], '\n')))).rejects.toThrow(/not valid UTF-8/);
    const read = vi.fn();
    const big = Array.from({ length: 100 }, () => Buffer.alloc(1000, 0x61));
    await expect(readFirstLine(chunks(big, read))).rejects.toThrow(new InputError('the first line of stdin is longer than 4096 bytes'));
    expect(read.mock.calls.length).toBeLessThan(10);
    expect(await readFirstLine(chunks([Buffer.alloc(4096, 0x61), Buffer.from('\n')]))).toHaveLength(4096);
  });
});

describe('PromptLine (the hidden prompt, raw mode)', () => {
  it('ends at Enter; Ctrl-D ends a typed line and cancels an empty one; Ctrl-C cancels', () => {
    const typed = (...keys: string[]) => {
      const line = new PromptLine();
      let state = line.feed(Buffer.alloc(0));
      for (const k of keys) state = line.feed(Buffer.from(k, 'utf8'));
      return state;
    };
    expect(typed('secret', '\r')).toEqual({ status: 'done', line: 'secret' });
    expect(typed('secret\u0004')).toEqual({ status: 'done', line: 'secret' });
    expect(typed('\u0004')).toEqual({ status: 'cancelled', reason: 'eof' });
    expect(typed('sec', '\u0003')).toEqual({ status: 'cancelled', reason: 'interrupt' });
    expect(typed('secrett\u007f', '\r')).toEqual({ status: 'done', line: 'secret' });
    expect(typed('pw😀\u007f', '\r')).toEqual({ status: 'done', line: 'pw' });
    expect(typed('sec')).toEqual({ status: 'reading' });
  });

  it('keeps a character split between two reads whole and refuses invalid UTF-8', () => {
    const line = new PromptLine();
    const e = Buffer.from('é');
    expect(line.feed(Buffer.concat([Buffer.from('P'), e.subarray(0, 1)]))).toEqual({ status: 'reading' });
    expect(line.feed(Buffer.concat([e.subarray(1), Buffer.from('\r')]))).toEqual({ status: 'done', line: 'Pé' });
    expect(() => new PromptLine().feed(Buffer.from([0x61, 0xff, 0x0d]))).toThrow(InputError);
  });
});

describe('refuseUnstorable', () => {
  it("applies the API's rule (NUL, unpaired surrogate) with its message, naming each field", () => {
    expect(() => refuseUnstorable({ password: 'Long-enough\u0000password', '--name': 'ok', '--role': undefined })).toThrow(
      new InputError('password: must not contain NUL characters or unpaired surrogates'),
    );
    expect(() => refuseUnstorable({ '--name': 'a\uD800b' })).toThrow(/--name: must not contain NUL/);
    expect(() => refuseUnstorable({ '--name': 'Zoë 😀', password: undefined })).not.toThrow();
  });
});

describe('refuseInvalidUtf8Arguments', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cmdline-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const cmdline = (...args: Array<string | number[]>) => {
    const file = join(dir, `cmdline-${Math.random()}`);
    writeFileSync(file, Buffer.concat(bytes(...args.flatMap((a) => [a, [0]]))));
    return file;
  };

  it('refuses an argument whose raw bytes are not UTF-8, keeps a U+FFFD typed as such', () => {
    const raw = cmdline('node', 'cli.js', 'users', 'create', '--name', [0x61, 0xff, 0x62]);
    expect(() => refuseInvalidUtf8Arguments(['users', 'create', '--name', 'a\uFFFDb'], raw)).toThrow(new InputError('an argument is not valid UTF-8'));
    const typed = cmdline('node', 'cli.js', 'users', 'create', '--name', 'a\uFFFDb');
    expect(() => refuseInvalidUtf8Arguments(['users', 'create', '--name', 'a\uFFFDb'], typed)).not.toThrow();
    // Only the command's own arguments count (node's path or flags are not the operator's input).
    const odd = cmdline([0x6e, 0xff], 'cli.js', 'users', '--name', 'a\uFFFDb');
    expect(() => refuseInvalidUtf8Arguments(['users', '--name', 'a\uFFFDb'], odd)).not.toThrow();
    // Without U+FFFD nothing was lost; without /proc nothing can be told.
    expect(() => refuseInvalidUtf8Arguments(['users', 'create'], raw)).not.toThrow();
    expect(() => refuseInvalidUtf8Arguments(['a\uFFFD'], join(dir, 'absent'))).not.toThrow();
  });
});
