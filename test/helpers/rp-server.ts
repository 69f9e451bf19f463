/**
 * A stand-in relying-party origin: a real HTTP server on 127.0.0.1 answering 200 on every path,
 * so browser redirects to redirect_uri / post_logout_redirect_uri land somewhere real
 * (Playwright's request routing is unreliable for navigations reached through redirects).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RpServer {
  /** http://localhost:<port> */
  origin: string;
  close(): Promise<void>;
}

export async function startRpServer(): Promise<RpServer> {
  const server: Server = createServer((_req, res) => {
    res.setHeader('content-type', 'text/plain');
    res.end('relying party');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://localhost:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
