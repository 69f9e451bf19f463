/**
 * Outgoing e-mail on nodemailer, off the request path: send() queues the job and returns at once;
 * delivery runs in the background with retries (0 s, 2 s, 10 s) for transient failures (network,
 * SMTP 4xx), none for permanent ones (5xx). A message that cannot be delivered is logged and
 * audited (`email_failed`), never dropped silently. Without an SMTP server (development, tests)
 * each message is written to the log at info, action link included, so the flows can be followed.
 * Transports are pooled per server and credentials.
 */
import { createHash } from 'node:crypto';
import type { Transporter } from 'nodemailer';
import type { AuditLog } from '../audit/audit-log.js';
import { afterAnswerSettled } from '../http/after-answer.js';
import { lazyModule } from '../lazy-module.js';
import type { Logger } from '../log.js';
import type { MailJob, SmtpSettings } from './types.js';

const RETRY_DELAYS_MS = [0, 2000, 10000];
/**
 * nodemailer is loaded with the first message sent over SMTP, not at start (issue 17: ~40 modules
 * and ~14 MB resident that an instance without SMTP, or one that has not sent yet, never needs).
 */
const nodemailerModule = lazyModule(() => import('nodemailer'));
/** A transport idle this long is closed. */
const TRANSPORT_IDLE_MS = 60_000;

interface PooledTransport {
  transport: Transporter;
  timer: NodeJS.Timeout;
}

export class Mailer {
  private readonly transports = new Map<string, PooledTransport>();
  private readonly inFlight = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly log: Logger,
    private readonly audit: AuditLog,
  ) {}

  /** Queues a message; never throws and never waits for the SMTP server. */
  send(job: MailJob): void {
    if (this.closed) {
      this.log.warn({ tenant: job.tenant, kind: job.kind }, 'mail not sent: the service is shutting down');
      return;
    }
    const run = this.deliver(job).catch((err: unknown) => this.log.error({ err, tenant: job.tenant, kind: job.kind }, 'mail delivery crashed'));
    this.inFlight.add(run);
    void run.finally(() => this.inFlight.delete(run));
  }

  /**
   * Resolves once every queued message is delivered or given up (tests, shutdown), including the
   * messages work after an answer is about to queue (http/after-answer.ts).
   */
  async drain(): Promise<void> {
    await afterAnswerSettled();
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.drain();
    for (const { transport, timer } of this.transports.values()) {
      clearTimeout(timer);
      transport.close();
    }
    this.transports.clear();
  }

  private async deliver(job: MailJob): Promise<void> {
    const { tenant, kind, message } = job;
    if (!job.smtp) {
      // Development without SMTP: the message itself is the log line (the link is what one needs).
      this.log.info({ tenant, kind, to: message.to, subject: message.subject, text: message.text }, 'mail (no SMTP server configured: logged, not sent)');
      return;
    }
    let lastError = '';
    let attempts = 0;
    for (const delay of RETRY_DELAYS_MS) {
      if (delay) await sleep(delay);
      attempts++;
      try {
        const info = await (await this.transportFor(job.smtp)).sendMail({ from: job.smtp.from, to: message.to, subject: message.subject, text: message.text, html: message.html });
        this.log.info({ tenant, kind, message_id: info.messageId, attempts }, 'mail sent');
        return;
      } catch (err) {
        lastError = describe(err);
        const permanent = isPermanent(err);
        this.log.warn({ tenant, kind, attempt: attempts, permanent, reason: lastError }, 'mail delivery attempt failed');
        if (permanent) break;
      }
    }
    this.log.error({ tenant, kind, attempts, reason: lastError }, 'mail could not be delivered');
    await this.audit
      .record(tenant, { type: 'email_failed', status: 'failed', user_id: job.userId, details: { user_id: job.userId, kind, attempts, reason: lastError } })
      .catch((err: unknown) => this.log.error({ err, tenant }, 'audit of a failed mail failed'));
  }

  private async transportFor(smtp: SmtpSettings): Promise<Transporter> {
    const nodemailer = (await nodemailerModule()).default;
    // From here on synchronous: concurrent messages to one server still share one transport.
    // The key hashes the password so the map never holds a second clear copy as a key.
    const key = createHash('sha256').update(JSON.stringify([smtp.host, smtp.port, smtp.secure, smtp.username ?? '', smtp.password ?? ''])).digest('base64url');
    let pooled = this.transports.get(key);
    if (!pooled) {
      const transport = nodemailer.createTransport({
        host: smtp.host,
        port: smtp.port,
        secure: smtp.secure,
        // STARTTLS when the server offers it (nodemailer's default when secure is false).
        auth: smtp.username ? { user: smtp.username, pass: smtp.password ?? '' } : undefined,
        pool: true,
        maxConnections: 2,
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 20_000,
      });
      pooled = { transport, timer: setTimeout(() => undefined, 0) };
      this.transports.set(key, pooled);
    }
    clearTimeout(pooled.timer);
    const entry = pooled;
    entry.timer = setTimeout(() => {
      entry.transport.close();
      this.transports.delete(key);
    }, TRANSPORT_IDLE_MS);
    entry.timer.unref();
    return entry.transport;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** SMTP 5xx answers are final; network errors and 4xx are worth another try. */
function isPermanent(err: unknown): boolean {
  const code = (err as { responseCode?: unknown }).responseCode;
  return typeof code === 'number' && code >= 500;
}

function describe(err: unknown): string {
  const e = err as { code?: unknown; responseCode?: unknown; response?: unknown; message?: unknown };
  // The server's answer or the error code; never the message content or credentials.
  if (typeof e.responseCode === 'number') return `SMTP ${e.responseCode}${typeof e.response === 'string' ? `: ${e.response.slice(0, 200)}` : ''}`;
  if (typeof e.code === 'string') return e.code;
  return typeof e.message === 'string' ? e.message.slice(0, 200) : 'unknown error';
}
