/**
 * What a client's registered `jwks` may hold (RFC 7591 section 2: "the Client's public keys"):
 * public RSA, EC or OKP keys only, RSA of at least 2048 bits (docs/decisions.md, private_key_jwt).
 * A private or symmetric key used to be stored (in clear, and echoed by dynamic registration) and
 * then broke the client at every endpoint (oidc-provider refuses the whole key set): it is refused
 * at the field instead, as is a key nothing could verify with.
 */
import { createPublicKey } from 'node:crypto';
import type { FieldError } from '../errors.js';

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const MIN_RSA_BITS = 2048;

function keyProblem(jwk: Record<string, unknown>): string | undefined {
  const secret = PRIVATE_MEMBERS.filter((m) => m in jwk);
  if (secret.length) return `holds private or secret key material (${secret.join(', ')}): register public keys only`;
  if (jwk.kty !== 'RSA' && jwk.kty !== 'EC' && jwk.kty !== 'OKP') return 'kty must be RSA, EC or OKP (a public key)';
  let bits: number | undefined;
  try {
    bits = createPublicKey({ key: jwk as never, format: 'jwk' }).asymmetricKeyDetails?.modulusLength;
  } catch {
    return 'is not a valid public key';
  }
  if (jwk.kty === 'RSA' && (bits ?? 0) < MIN_RSA_BITS) return `RSA keys need at least ${MIN_RSA_BITS} bits`;
  return undefined;
}

/** One error per unusable key, named `jwks.keys.<i>`. */
export function jwksProblems(jwks: { keys: ReadonlyArray<Record<string, unknown>> }): FieldError[] {
  const errors: FieldError[] = [];
  jwks.keys.forEach((jwk, i) => {
    const problem = keyProblem(jwk);
    if (problem) errors.push({ field: `jwks.keys.${i}`, message: problem });
  });
  return errors;
}
