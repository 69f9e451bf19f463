/**
 * workers/log-target.ts: a log sink that cannot be written keeps what it holds, drops what comes
 * beyond HELD_BYTES, retries, and says so once when it fails and once when it writes again. The
 * file and the pipe are real; a disk that fills and frees again is not something a test can make
 * without mounting one, so `fs.write` answers ENOSPC while `full` is set (sonic-boom, the sink's
 * writer, calls it through the fs module object).
 */
import fs, { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, constants } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { EventEmitter } from 'node:events';
import { survive } from '../../src/log.js';
import { HELD_BYTES, resilientSink, type SinkNotice } from '../../workers/log-target.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-log-target-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

const until = async (check: () => boolean, ms = 5000) => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
};

/** fs.write fails with ENOSPC while `state.full`, as on a full disk. */
function fillableDisk() {
  const state = { full: true, refused: 0 };
  const write = fs.write;
  vi.spyOn(fs, 'write').mockImplementation(((...args: unknown[]) => {
    const cb = args[args.length - 1] as (err: NodeJS.ErrnoException | null, n?: number) => void;
    if (!state.full) return (write as (...a: unknown[]) => void)(...args);
    state.refused++;
    const err: NodeJS.ErrnoException = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    process.nextTick(cb, err);
  }) as typeof fs.write);
  return state;
}

const line = (i: number) => JSON.stringify({ level: 30, msg: 'request', i }) + '\n';

describe('the resilient log sink', () => {
  it('on a full disk: keeps the lines, one notice; when space comes back, writes them all in order and says so', async () => {
    const file = join(dir, 'full.log');
    const notices: SinkNotice[] = [];
    const disk = fillableDisk();
    const sink = resilientSink({ destination: file, mode: 0o600 }, (n) => notices.push(n));
    await once(sink, 'ready');
    for (let i = 0; i < 100; i++) sink.write(line(i));
    await until(() => disk.refused > 0 && notices.length === 1);
    for (let i = 100; i < 200; i++) sink.write(line(i));
    await new Promise((r) => setTimeout(r, 100));
    expect(notices).toEqual([expect.objectContaining({ level: 'error', sink: file, code: 'ENOSPC' })]);
    expect(readFileSync(file, 'utf8')).toBe('');

    disk.full = false; // the operator frees space: the next retry (at most a second) writes
    await until(() => notices.length === 2, 3000);
    expect(notices[1]).toMatchObject({ level: 'warn', sink: file, code: 'ENOSPC', dropped: 0 });
    await until(() => readFileSync(file, 'utf8').split('\n').length === 201);
    const written = readFileSync(file, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { i: number }).i);
    expect(written).toEqual([...Array(200).keys()]);
    sink.end();
    await once(sink, 'close');
  });

  it('holds at most HELD_BYTES while failing and counts the lines dropped beyond it', async () => {
    const file = join(dir, 'bounded.log');
    const notices: SinkNotice[] = [];
    const disk = fillableDisk();
    const sink = resilientSink({ destination: file }, (n) => notices.push(n));
    await once(sink, 'ready');
    sink.write(line(0));
    await until(() => notices.length === 1);
    const big = 'x'.repeat(1023) + '\n';
    const lines = Math.ceil(HELD_BYTES / 1024) + 500;
    for (let i = 0; i < lines; i++) sink.write(big);
    disk.full = false;
    await until(() => notices.length === 2, 3000);
    const dropped = notices[1]!.dropped ?? 0;
    expect(dropped).toBeGreaterThanOrEqual(500);
    expect(dropped).toBeLessThanOrEqual(502);
    await until(() => fs.statSync(file).size === (lines - dropped) * 1024 + line(0).length);
    sink.end();
    await once(sink, 'close');
  });

  it('ends at once while failing (nothing it holds can be written) instead of waiting for the disk', async () => {
    const file = join(dir, 'ending.log');
    fillableDisk();
    const sink = resilientSink({ destination: file }, () => undefined);
    await once(sink, 'ready');
    sink.write(line(1));
    await new Promise((r) => setTimeout(r, 50));
    const closed = once(sink, 'close');
    sink.end();
    await closed;
  });

  it('a broken pipe (the reader of stdout went away): one notice, and later lines go nowhere without an error', async () => {
    const fifo = join(dir, 'pipe');
    execFileSync('mkfifo', [fifo]);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(fifo, constants.O_WRONLY);
    closeSync(reader);
    const notices: SinkNotice[] = [];
    const sink = resilientSink({ destination: writer }, (n) => notices.push(n));
    await once(sink, 'ready');
    sink.write(line(1));
    await until(() => notices.length === 1);
    expect(notices[0]).toMatchObject({ level: 'error', code: 'EPIPE' });
    for (let i = 0; i < 10; i++) expect(sink.write(line(i))).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    expect(notices).toHaveLength(1);
    closeSync(writer);
  });
});

describe('log rotation', () => {
  const numbers = (text: string) => text.trim().split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { i: number }).i);
  const write = (sink: { write(s: string): boolean }, from: number, to: number) => {
    for (let i = from; i < to; i++) sink.write(line(i));
  };

  it("renamed (logrotate's create) or removed: the path is opened again; nothing is lost, the new file is owner-only", async () => {
    const file = join(dir, 'rotate.log');
    const notices: SinkNotice[] = [];
    const sink = resilientSink({ destination: file, mode: 0o600 }, (n) => notices.push(n));
    await once(sink, 'ready');
    write(sink, 0, 10);
    await until(() => existsSync(file) && numbers(readFileSync(file, 'utf8')).length === 10);
    renameSync(file, `${file}.1`);
    write(sink, 10, 15); // before the move is seen: into the moved file
    await until(() => existsSync(file), 3000);
    write(sink, 15, 20);
    await until(() => numbers(readFileSync(file, 'utf8')).includes(19));
    expect([...numbers(readFileSync(`${file}.1`, 'utf8')), ...numbers(readFileSync(file, 'utf8'))]).toEqual([...Array(20).keys()]);
    expect(statSync(file).mode & 0o777).toBe(0o600);

    unlinkSync(`${file}.1`);
    unlinkSync(file);
    await until(() => existsSync(file), 3000);
    write(sink, 20, 25);
    await until(() => numbers(readFileSync(file, 'utf8')).length === 5);
    expect(numbers(readFileSync(file, 'utf8'))).toEqual([20, 21, 22, 23, 24]);
    expect(notices).toEqual([]);
    sink.end();
    await once(sink, 'close');
  });

  it('moved where its path cannot be opened again (the directory went with it): one notice, lines go on to the moved file, then to the path once it can', async () => {
    const sub = join(dir, 'rotating-dir');
    mkdirSync(sub);
    const file = join(sub, 'svc.log');
    const notices: SinkNotice[] = [];
    const sink = resilientSink({ destination: file }, (n) => notices.push(n));
    await once(sink, 'ready');
    write(sink, 0, 3);
    await until(() => existsSync(file) && numbers(readFileSync(file, 'utf8')).length === 3);
    renameSync(sub, `${sub}-moved`);
    await until(() => notices.length === 1, 3000);
    expect(notices[0]).toMatchObject({ level: 'error', sink: file, code: 'ENOENT' });
    write(sink, 3, 6);
    await new Promise((r) => setTimeout(r, 1500)); // another check or two: no more notices
    expect(notices).toHaveLength(1);
    expect(numbers(readFileSync(join(`${sub}-moved`, 'svc.log'), 'utf8'))).toEqual([0, 1, 2, 3, 4, 5]);
    mkdirSync(sub);
    await until(() => notices.length === 2, 3000);
    expect(notices[1]).toMatchObject({ level: 'warn', sink: file });
    write(sink, 6, 8);
    await until(() => existsSync(file) && numbers(readFileSync(file, 'utf8')).length === 2);
    expect(numbers(readFileSync(file, 'utf8'))).toEqual([6, 7]);
    sink.end();
    await once(sink, 'close');
  });
});

describe('the logger when its transport ends (src/log.ts survive)', () => {
  it('one notice, then every line to the fallback; the transport\'s later errors are answered, so the process lives on', async () => {
    const transport = Object.assign(new EventEmitter(), { lines: [] as string[], write(l: string) { this.lines.push(l); return true; } });
    const fallback = { lines: [] as string[], write(l: string) { this.lines.push(l); return true; } };
    const notices: SinkNotice[] = [];
    const dest = survive(transport, () => fallback, (n) => notices.push(n));
    dest.write('a\n');
    transport.emit('error', Object.assign(new Error('the worker thread exited'), { code: undefined }));
    transport.emit('error', new Error('the worker has exited')); // a write after the end reports again
    dest.write('b\n');
    dest.write('c\n');
    expect(transport.lines).toEqual(['a\n']);
    expect(fallback.lines).toEqual(['b\n', 'c\n']);
    expect(notices).toEqual([expect.objectContaining({ level: 'error', sink: 'transport', msg: expect.stringContaining('the worker thread exited') })]);
  });
});
