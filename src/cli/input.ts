/**
 * What the CLI reads from the operator: the password line (stdin or the hidden prompt) and the
 * arguments, held to the rules the Management API applies to a request body (UTF-8, no NUL, no
 * unpaired surrogate: http/json-body.ts), so the CLI never stores what the API would refuse.
 */
import { readFileSync } from 'node:fs';
import { UNSTORABLE_MESSAGE, unstorableMembers } from '../http/json-body.js';

/** Longest first line of stdin read as the password; far above any password the policy accepts. */
export const MAX_LINE_BYTES = 4096;

/** A refusal of what the operator gave, with the message to print. */
export class InputError extends Error {}

const utf8 = () => new TextDecoder('utf-8', { fatal: true });

/**
 * The first line of a byte stream (without its line end: \n or \r\n), read up to the first newline
 * or the end of the stream and no further: `yes pw | svc users create` or a pipe left open after
 * the line must neither hang nor fill the memory. More than `limit` bytes before a newline and
 * invalid UTF-8 are refused (a lossy decoding would store U+FFFD and the password would never match).
 */
export async function readFirstLine(stream: AsyncIterable<Buffer | Uint8Array | string>, limit = MAX_LINE_BYTES): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  // Breaking out of the loop destroys the stream: nothing more is read.
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const newline = buf.indexOf(0x0a);
    const part = newline === -1 ? buf : buf.subarray(0, newline);
    chunks.push(part);
    length += part.length;
    if (length > limit) throw new InputError(`the first line of stdin is longer than ${limit} bytes`);
    if (newline !== -1) break;
  }
  let line: string;
  try {
    line = utf8().decode(Buffer.concat(chunks, length));
  } catch {
    throw new InputError('the first line of stdin is not valid UTF-8');
  }
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}

/** What one keystroke chunk did to a hidden prompt's line. */
export type PromptState = { status: 'reading' } | { status: 'done'; line: string } | { status: 'cancelled'; reason: 'interrupt' | 'eof' };

/**
 * The line typed at a hidden prompt (raw mode: every key arrives as typed). Enter ends it; Ctrl-C
 * cancels; Ctrl-D ends it as a terminal's line discipline would (a line typed so far is taken,
 * an empty one is the end of input: cancelled); Backspace removes the last character. Bytes are
 * decoded across chunks, so a character split between two reads stays whole; invalid UTF-8 is refused.
 */
export class PromptLine {
  private readonly decoder = utf8();
  private answer = '';

  feed(chunk: Buffer): PromptState {
    let text: string;
    try {
      text = this.decoder.decode(chunk, { stream: true });
    } catch {
      throw new InputError('the password typed is not valid UTF-8');
    }
    for (const ch of text) {
      if (ch === '\r' || ch === '\n') return { status: 'done', line: this.answer };
      if (ch === '\u0003') return { status: 'cancelled', reason: 'interrupt' };
      if (ch === '\u0004') return this.answer ? { status: 'done', line: this.answer } : { status: 'cancelled', reason: 'eof' };
      if (ch === '\u007f' || ch === '\b') this.answer = [...this.answer].slice(0, -1).join('');
      else this.answer += ch;
    }
    return { status: 'reading' };
  }
}

/**
 * The API's storable-text rule (unstorableMembers) over the strings a command takes: `fields`
 * maps a name for the message (`--name`, `password`) to the value (undefined: not given).
 */
export function refuseUnstorable(fields: Record<string, string | undefined>): void {
  const bad = unstorableMembers(Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)));
  if (bad.length) throw new InputError(bad.map((field) => `${field}: ${UNSTORABLE_MESSAGE}`).join('; '));
}

/**
 * Node decodes the arguments lossily (invalid UTF-8 becomes U+FFFD), so `--name $'ab\xffcd'` would
 * store U+FFFD. Where the raw bytes can be read (Linux: /proc/self/cmdline), an argument that
 * decoded to U+FFFD is checked against them and refused when it was not valid UTF-8 (a U+FFFD
 * typed as such is valid and kept). Elsewhere (no /proc) the check is skipped.
 */
export function refuseInvalidUtf8Arguments(argv: readonly string[], cmdline = '/proc/self/cmdline'): void {
  if (!argv.some((a) => a.includes('\uFFFD'))) return;
  let raw: Buffer;
  try {
    raw = readFileSync(cmdline);
  } catch {
    return;
  }
  // The command's arguments are the last entries (before them: node, its flags, the script).
  const entries: Buffer[] = [];
  for (let start = 0; start < raw.length; ) {
    let end = raw.indexOf(0, start);
    if (end === -1) end = raw.length;
    entries.push(raw.subarray(start, end));
    start = end + 1;
  }
  const decoder = utf8();
  for (const entry of entries.slice(-argv.length)) {
    try {
      decoder.decode(entry);
    } catch {
      throw new InputError('an argument is not valid UTF-8');
    }
  }
}
