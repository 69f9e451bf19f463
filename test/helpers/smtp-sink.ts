/**
 * A real SMTP server on loopback (smtp-server) that keeps what it receives, parsed with
 * mailparser: the mail tests read the messages the service really sent. `reject` makes it answer
 * RCPT TO with an SMTP error (permanent 5xx or transient 4xx) for delivery-failure tests.
 */
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface SinkMessage {
  to: string[];
  from: string;
  subject: string;
  text: string;
  html: string;
  /** Every http(s) link in the HTML part. */
  links: string[];
  raw: string;
  parsed: ParsedMail;
}

export interface SmtpSink {
  port: number;
  messages: SinkMessage[];
  /** Messages to an address, waiting up to `timeoutMs` for `count` of them. */
  waitFor(to: string, count?: number, timeoutMs?: number): Promise<SinkMessage[]>;
  /** The next RCPT TO gets this SMTP code (e.g. 550, 451), for `times` attempts. */
  reject(code: number, times?: number): void;
  /** Env settings pointing the service at this sink. */
  env(): Record<string, string>;
  close(): Promise<void>;
}

export async function startSmtpSink(opts: { username?: string; password?: string } = {}): Promise<SmtpSink> {
  const messages: SinkMessage[] = [];
  let rejection: { code: number; times: number } | undefined;
  const server = new SMTPServer({
    secure: false,
    disabledCommands: opts.username ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    authOptional: !opts.username,
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === opts.username && auth.password === opts.password) cb(null, { user: auth.username });
      else cb(Object.assign(new Error('Invalid credentials'), { responseCode: 535 }));
    },
    onRcptTo(_address, _session, cb) {
      if (rejection && rejection.times > 0) {
        rejection.times--;
        return cb(Object.assign(new Error(rejection.code >= 500 ? 'Mailbox unavailable' : 'Try again later'), { responseCode: rejection.code }));
      }
      cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        simpleParser(raw)
          .then((parsed) => {
            const html = typeof parsed.html === 'string' ? parsed.html : '';
            messages.push({
              to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              subject: parsed.subject ?? '',
              text: parsed.text ?? '',
              html,
              links: [...html.matchAll(/href="(https?:[^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&')),
              raw,
              parsed,
            });
            cb();
          })
          .catch((err: Error) => cb(err));
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    messages,
    async waitFor(to, count = 1, timeoutMs = 10000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = messages.filter((m) => m.to.includes(to.toLowerCase()));
        if (found.length >= count) return found;
        if (Date.now() > deadline) throw new Error(`no ${count} message(s) to ${to} within ${timeoutMs} ms (have ${found.length})`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    reject(code, times = 1) {
      rejection = { code, times };
    },
    env() {
      return {
        INTEGRATIONS_SMTP_HOST: '127.0.0.1',
        INTEGRATIONS_SMTP_PORT: String(port),
        INTEGRATIONS_SMTP_FROM: 'login@example.com',
        ...(opts.username ? { INTEGRATIONS_SMTP_USERNAME: opts.username, INTEGRATIONS_SMTP_PASSWORD: opts.password ?? '' } : {}),
      };
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
