/** Raw HTTP/1.1 over a TCP socket, for what fetch hides: partial bodies, connection close, lying lengths. */
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawConnection {
  socket: Socket;
  write(data: string | Buffer): Promise<void>;
  /** The first complete response on the connection. */
  response: Promise<RawResponse>;
  /** Resolves when the server (or we) closed the connection. */
  closed: Promise<void>;
  /** Whether the socket is closed. */
  isClosed(): boolean;
  /** Every byte received so far (several answers on a kept-alive connection). */
  received(): Buffer;
  end(): void;
}

export function openRaw(port: number): Promise<RawConnection> {
  return new Promise((resolveConn, rejectConn) => {
    const socket = connect({ host: '127.0.0.1', port });
    let buf = Buffer.alloc(0);
    let closedFlag = false;
    let resolveResponse!: (r: RawResponse) => void;
    let rejectResponse!: (e: Error) => void;
    const response = new Promise<RawResponse>((res, rej) => {
      resolveResponse = res;
      rejectResponse = rej;
    });
    response.catch(() => undefined);
    const closed = new Promise<void>((res) => socket.once('close', () => {
      closedFlag = true;
      res();
      tryParse(true);
    }));

    function tryParse(final = false): void {
      const headEnd = buf.indexOf('\r\n\r\n');
      if (headEnd < 0) {
        if (final) rejectResponse(new Error(`connection closed before a response (${buf.length} bytes)`));
        return;
      }
      const lines = buf.subarray(0, headEnd).toString('latin1').split('\r\n');
      const status = Number(lines[0]!.split(' ')[1]);
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      const length = headers['content-length'] !== undefined ? Number(headers['content-length']) : undefined;
      const body = buf.subarray(headEnd + 4);
      if (length !== undefined && body.length >= length) {
        resolveResponse({ status, headers, body: body.subarray(0, length).toString('utf8') });
      } else if (final || status === 204 || status === 304) {
        resolveResponse({ status, headers, body: body.toString('utf8') });
      }
    }

    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      tryParse();
    });
    socket.on('error', () => undefined); // EPIPE/ECONNRESET after the server closed: seen through `closed`
    socket.once('connect', () =>
      resolveConn({
        socket,
        write: (data) =>
          new Promise((res, rej) => {
            if (closedFlag || socket.destroyed) return rej(new Error('socket closed'));
            socket.write(data, (err) => (err ? rej(err) : res()));
          }),
        response,
        closed,
        isClosed: () => closedFlag,
        received: () => buf,
        end: () => socket.destroy(),
      }),
    );
    socket.once('error', (err) => rejectConn(err));
  });
}

/** Request head with CRLF line ends. */
export function head(method: string, path: string, port: number, headers: Record<string, string | number>): string {
  const lines = [`${method} ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  return `${lines.join('\r\n')}\r\n\r\n`;
}
