/**
 * The RS256 floor of this machine at this moment: CPU per RSA-2048 signature (RSASSA-PKCS1-v1_5,
 * SHA-256, node:crypto, the OpenSSL routine the product's start-up line names) with nothing else
 * running. Printed next to the rows where both servers sign once per request with RS256
 * (client_credentials RS256, refresh): both pay that signature, so the baseline's CPU per request
 * divided by it is the highest CPU ratio any product could reach on this CPU, even one whose only
 * work were the signature. On a CPU whose signature is a large part of the baseline's request (an
 * AMD Zen 5 with AVX-512 IFMA signs in ~220 µs, an Intel Xeon of the same VM kind in ~390 µs) a
 * ratio target can be above that bound, and the row says so (docs/decisions.md, "Signature-bound
 * rows").
 *
 * Measured on this thread, synchronously: the figure is the signature's own cost, without the
 * hand-off to libuv's threadpool that both servers add on top.
 */
import { generateKeyPairSync, sign } from 'node:crypto';

export interface RsaCeiling {
  /** CPU (user + system) per RSA-2048 signature, µs. */
  signMicros: number;
  signatures: number;
}

export function rsaCeiling(seconds = 1): RsaCeiling {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  // A JWS signing input of a typical access token's size.
  const input = Buffer.alloc(600, 0x61);
  for (let i = 0; i < 50; i++) sign('sha256', input, privateKey);
  const cpu0 = process.cpuUsage();
  const until = performance.now() + seconds * 1000;
  let signatures = 0;
  while (performance.now() < until) {
    for (let i = 0; i < 20; i++) sign('sha256', input, privateKey);
    signatures += 20;
  }
  const cpu = process.cpuUsage(cpu0);
  return { signMicros: Math.round(((cpu.user + cpu.system) / signatures) * 10) / 10, signatures };
}

/**
 * `; RSA-2048 signature alone: 221 µs of CPU, so no CPU ratio above 1.76x is possible here` for a
 * row whose baseline spends `baselineMicros` per request with one signature in it.
 */
export function rsaCeilingNote(ceiling: unknown, baselineMicros: number | null | undefined): string {
  const c = ceiling as Partial<RsaCeiling> | undefined;
  if (!c?.signMicros || !baselineMicros) return '';
  return `; RSA-2048 signature alone: ${Math.round(c.signMicros)} µs of CPU, so no CPU ratio above ${(baselineMicros / c.signMicros).toFixed(2)}x is possible here`;
}
